"""Records tcpdump and tshark read with a decision, each on a capture made here with
tshark (or tcpdump) as the oracle: IP length 0 (TSO) and IPv6 jumbograms (BIG TCP),
out-of-range sub-second timestamp fields, file versions, undecodable pcapng interfaces."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cganalysis.capture import read_capture
from cganalysis.cli import main
from tests.conftest import need_tool
from tests.integration import capture_bytes as cb


def _tshark(path: Path, *fields: str) -> list[list[str]]:
    """tshark's values of ``fields``, one list per frame."""
    need_tool("tshark")
    cmd = ["tshark", "-r", str(path), "-n", "-T", "fields", "-E", "separator=/t"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def _refused_by(tool: list[str]) -> bool:
    proc = subprocess.run(tool, capture_output=True, text=True, check=False)
    return proc.returncode != 0


def _one_line_error(err: str, *words: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)


def _packets(tmp_path: Path, capture: Path) -> tuple[int, dict[str, object]]:
    """``cganalysis packets`` with one capture as both points (every packet delay 0)."""
    summary = tmp_path / "summary.json"
    out = tmp_path / "p.parquet"
    code = main(["packets", str(capture), str(capture), "-o", str(out), "--summary", str(summary)])
    return code, json.loads(summary.read_text()) if summary.exists() else {}


def test_tso_and_jumbogram_sizes_are_tsharks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tso = cb.eth(cb.ETH_IPV4, cb.ipv4(6, cb.tcp(bytes(3000)), total=0))
    jumbo = cb.eth(cb.ETH_IPV6, cb.jumbogram(cb.tcp(bytes(70_000))))
    plain = cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(b"abcd")))
    path = tmp_path / "tso.pcap"
    records = [cb.record(1, 0, tso, 128), cb.record(2, 0, jumbo, 128), cb.record(3, 0, plain)]
    path.write_bytes(cb.pcap(records, snaplen=128))

    capture = read_capture(path)
    theirs = _tshark(path, "ip.len", "ipv6.opt.jumbo", "tcp.len")
    expected = [int(v4) if v4 else int(jumbo_len) + 40 for v4, jumbo_len, _ in theirs]
    assert capture.packets["size_bytes"].to_list() == expected == [3040, 70_068, 32]
    tcp_len = [int(t) if t else None for *_, t in theirs]
    assert capture.packets["tcp_payload_bytes"].to_list() == tcp_len == [3000, 70_000, None]
    assert (capture.info.quirks.len_from_frame, capture.info.quirks.jumbograms) == (1, 1)

    code, summary = _packets(tmp_path, path)
    assert code == 0
    err = capsys.readouterr().err
    assert "note:" in err and "TCP segmentation offload" in err and "jumbograms" in err
    assert summary["quirks_ingress"] == summary["quirks_egress"]
    assert summary["quirks_ingress"]["len_from_frame"] == 1  # type: ignore[index]


@pytest.mark.parametrize("nanosecond", [False, True], ids=["usec", "nsec"])
def test_out_of_range_sub_second_fields_are_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nanosecond: bool
) -> None:
    frames = [cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(b"abcd"), ip_id=i)) for i in range(4)]
    bad = 2_147_483_648 if nanosecond else 1_500_000  # what jumped packets ~2147 s ahead
    fracs = [0, bad, 5, 999_999]
    path = tmp_path / "badtime.pcap"
    records = [
        cb.record(10 + i, f, frame) for i, (f, frame) in enumerate(zip(fracs, frames, strict=True))
    ]
    path.write_bytes(cb.pcap(records, nanosecond=nanosecond))

    capture = read_capture(path)
    unit = 1 if nanosecond else 1000
    assert capture.packets["t_ns"].to_list() == [
        10_000_000_000,
        None,
        12_000_000_000 + 5 * unit,
        13_000_000_000 + 999_999 * unit,
    ]
    # tshark keeps the packet and flags exactly that one as invalid
    # (a field of the frame asked for too: tshark 4.4, asked for the expert message alone,
    # builds no frame tree and prints none)
    rows = _tshark(path, "frame.number", "_ws.expert.message")
    flagged = ["Fractional second" in row[1] for row in rows]
    assert flagged == [t is None for t in capture.packets["t_ns"].to_list()]
    assert capture.info.quirks.bad_timestamps == 1
    assert capture.info.quirks.first_bad_timestamp_at == 24 + 16 + len(frames[0])

    code, summary = _packets(tmp_path, path)
    assert code == 0
    err = capsys.readouterr().err
    assert "WARNING:" in err and "out-of-range sub-second timestamp" in err
    assert summary["packets_unknown"] == 1  # kept, neither delivered nor lost
    assert summary["packets_delivered"] == 3


@pytest.mark.parametrize(
    ("version", "oracle"), [((1, 0), "tshark"), ((3, 0), "tcpdump"), ((2, 5), "tcpdump")]
)
def test_unsupported_pcap_versions_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: tuple[int, int], oracle: str
) -> None:
    frame = cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(b"abcd")))
    path = tmp_path / "old.pcap"
    path.write_bytes(cb.pcap([cb.record(1, 0, frame)], version=version))
    need_tool(oracle)
    tool = ["tshark", "-r", str(path)] if oracle == "tshark" else ["tcpdump", "-r", str(path)]
    assert _refused_by(tool)
    assert main(["inspect", str(path)]) == 2
    major, minor = version
    _one_line_error(capsys.readouterr().err, str(path), f"unsupported pcap version {major}.{minor}")


def test_pcap_2_2_lengths_are_swapped_back(tmp_path: Path) -> None:
    frame = cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(bytes(100))))
    path = tmp_path / "v22.pcap"
    records = [cb.record(1, 0, frame, 60), cb.record(2, 0, frame)]
    path.write_bytes(cb.pcap(records, version=(2, 2), swapped_lengths=True))
    ours = read_capture(path).packets
    theirs = _tshark(path, "frame.len", "frame.cap_len")
    assert ours["wire_len_bytes"].to_list() == [int(w) for w, _ in theirs] == [len(frame)] * 2
    assert ours["size_bytes"].to_list() == [128, 128]


@pytest.mark.parametrize(("minor", "readable"), [(0, True), (1, False), (2, True), (3, False)])
def test_pcapng_minor_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], minor: int, readable: bool
) -> None:
    frame = cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(b"abcd")))
    path = tmp_path / "v.pcapng"
    path.write_bytes(cb.pcapng([1], [(0, 1_000_000, frame)], version=(1, minor)))
    need_tool("tshark")
    assert _refused_by(["tshark", "-r", str(path)]) is not readable
    code = main(["inspect", str(path), "--json"])
    out, err = capsys.readouterr()
    if readable:
        assert code == 0 and json.loads(out)["packets"] == 1
    else:
        assert code == 2
        _one_line_error(err, str(path), f"unsupported pcapng version 1.{minor}")


def test_undecodable_pcapng_interface_is_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frames = [cb.eth(cb.ETH_IPV4, cb.ipv4(17, cb.udp(b"abcd"), ip_id=i)) for i in range(3)]
    other = b"\x01\x02\x03\x04 a USER0 record"
    packets = [(0, 1_000, frames[0]), (1, 2_000, other), (0, 3_000, frames[1])]
    packets += [(1, 4_000, other), (0, 5_000, frames[2])]
    path = tmp_path / "mixed.pcapng"
    path.write_bytes(cb.pcapng([1, 147], packets))

    theirs = _tshark(path, "frame.interface_id", "ip.id")
    assert len(theirs) == 5  # tshark shows every record
    capture = read_capture(path)
    kept = [[i, int(ip_id, 0)] for i, ip_id in ((int(r[0]), r[1]) for r in theirs) if ip_id]
    ours = capture.packets.select("interface_id", "ip_id").rows()
    assert [list(r) for r in ours] == kept == [[0, 0], [0, 1], [0, 2]]
    assert capture.info.quirks.skipped_packets == 2

    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "skipped 2 packets" in out and "LINKTYPE_147" in out

    code, summary = _packets(tmp_path, path)
    assert code == 0
    assert "skipped 2 packets" in capsys.readouterr().err
    assert summary["quirks_ingress"]["skipped_packets"] == 2  # type: ignore[index]
