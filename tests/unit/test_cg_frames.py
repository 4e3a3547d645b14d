"""Frame-size traces rebuilt from captures of RTP video (cganalysis.cg.frames)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from cganalysis.capture.writer import synthetic_table, write_pcap
from cganalysis.cg.frames import TraceError, frames_from_capture, read_trace, write_trace
from cganalysis.errors import CaptureError

T0 = 1_700_000_000_000_000_000
IP_UDP_RTP = 20 + 8 + 12


def rtp_stream(
    frames: list[list[int]],
    *,
    ssrc: int,
    dport: int,
    period_ns: int = 16_666_667,
    drop_markers: set[int] | None = None,
    t0: int = T0,
) -> dict[str, list[int]]:
    """Packets of frames given as lists of RTP payload sizes; marker on each last packet."""
    columns = "t_ns src_ip dst_ip proto sport dport ip_id size_bytes ttl is_rtp rtp_ssrc rtp_seq"
    rows: dict[str, list[int]] = {k: [] for k in (*columns.split(), "rtp_ts", "rtp_marker")}
    rows.update({"rtp_pt": [], "payload_tag": []})
    seq = 100
    for i, sizes in enumerate(frames):
        for j, payload in enumerate(sizes):
            last = j == len(sizes) - 1
            if last and drop_markers and i in drop_markers:
                continue  # the marker packet was lost before the capture point
            rows["t_ns"].append(t0 + i * period_ns + j * 100_000)
            rows["src_ip"].append(0x0A000001)
            rows["dst_ip"].append(0x0A000002)
            rows["proto"].append(17)
            rows["sport"].append(5000)
            rows["dport"].append(dport)
            rows["ip_id"].append(seq & 0xFFFF)
            rows["size_bytes"].append(payload + IP_UDP_RTP)
            rows["ttl"].append(64)
            rows["is_rtp"].append(True)
            rows["rtp_ssrc"].append(ssrc)
            rows["rtp_seq"].append(seq & 0xFFFF)
            rows["rtp_ts"].append(i * 1500)
            rows["rtp_marker"].append(last)
            rows["rtp_pt"].append(96)
            rows["payload_tag"].append(seq)
            seq += 1
    return rows


def write(path: Path, *streams: dict[str, list[int]]) -> Path:
    merged = {k: [v for s in streams for v in s[k]] for k in streams[0]}
    table = synthetic_table(merged).sort("t_ns")  # type: ignore[arg-type]
    write_pcap(path, table)
    return path


def test_frames_are_summed_between_markers(tmp_path: Path) -> None:
    frames = [[1200, 1200, 300], [1200, 50], [700], [1200, 1200, 1200, 9], [400]]
    pcap = write(tmp_path / "v.pcap", rtp_stream(frames, ssrc=7, dport=30002))
    trace = frames_from_capture(pcap)
    assert trace["size_bytes"].to_list() == [sum(f) for f in frames]
    assert trace["t_s"].to_list() == pytest.approx([i * 0.016666667 for i in range(5)], abs=1e-6)


def test_lost_marker_still_splits_at_the_timestamp(tmp_path: Path) -> None:
    # (a stream needs 8 packets to count as RTP, hence five frames)
    frames = [[1000, 500], [1000, 600], [1000, 700], [1000, 800], [1000, 900]]
    pcap = write(tmp_path / "v.pcap", rtp_stream(frames, ssrc=7, dport=30002, drop_markers={1}))
    trace = frames_from_capture(pcap)
    assert trace["size_bytes"].to_list() == [1500, 1000, 1700, 1800, 1900]


def test_largest_stream_or_the_chosen_one(tmp_path: Path) -> None:
    big = rtp_stream([[1200, 1200]] * 20, ssrc=1, dport=30002)
    small = rtp_stream([[100]] * 20, ssrc=2, dport=40000, t0=T0 + 5_000)
    pcap = write(tmp_path / "two.pcap", big, small)
    assert frames_from_capture(pcap)["size_bytes"].to_list() == [2400] * 20
    assert frames_from_capture(pcap, ssrc=2)["size_bytes"].to_list() == [100] * 20
    assert frames_from_capture(pcap, dport=40000)["size_bytes"].to_list() == [100] * 20
    with pytest.raises(CaptureError, match="ssrc 3"):
        frames_from_capture(pcap, ssrc=3)


def test_trace_csv_round_trip_and_errors(tmp_path: Path) -> None:
    trace = pl.DataFrame({"t_s": [0.0, 0.0166, 0.0333], "size_bytes": [5000, 4000, 4500]})
    path = tmp_path / "t.csv"
    write_trace(trace, path)
    assert path.read_text().splitlines()[0] == "t_s,size_bytes"
    assert read_trace(path).equals(trace)
    bad = tmp_path / "bad.csv"
    bad.write_text("t_s,size_bytes\n0,x\n")
    with pytest.raises(TraceError, match="t_s,size_bytes"):
        read_trace(bad)
    short = tmp_path / "short.csv"
    short.write_text("t_s,size_bytes\n0,10\n")
    with pytest.raises(TraceError, match="two frames"):
        read_trace(short)


def test_committed_fixture_gives_its_known_frames(dualpoint_dir: Path) -> None:
    # tests/fixtures/README.md: 60 fps, two packets per frame of 1200 + 871 payload bytes.
    trace = frames_from_capture(dualpoint_dir / "ingress.pcap")
    assert trace.height == 270
    assert set(trace["size_bytes"].to_list()) == {2071}
    gaps = trace["t_s"].diff().drop_nulls()
    assert gaps.median() == pytest.approx(1 / 60, abs=5e-4)
