"""Bad input gets a clear message naming the file (and byte offset), a non-zero exit, no
partial output, and the inputs are never modified."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cganalysis.cli import main
from tests.conftest import FIXTURES

FORMATS = FIXTURES / "formats"
DUAL = FIXTURES / "dualpoint"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _packets(tmp_path: Path, ingress: Path, egress: Path, *extra: str) -> int:
    out = str(tmp_path / "out.parquet")
    return main(["packets", str(ingress), str(egress), "-o", out, *extra])


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("not-a-capture.pcap", ["not-a-capture.pcap", "byte offset 0", "not a pcap or pcapng"]),
        ("corrupt-length.pcap", ["corrupt-length.pcap", "byte offset", "corrupt record length"]),
        ("unsupported-linktype.pcap", ["unsupported-linktype.pcap", "link type 147"]),
        ("does-not-exist.pcap", ["does-not-exist.pcap", "no such file"]),
    ],
)
# In memory, and streaming (whose match starts, writing partial files, before the command's
# imports: they are gone too).
@pytest.mark.parametrize("how", [(), ("--stream-above-mb", "0")], ids=["memory", "streaming"])
def test_unreadable_captures_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    words: list[str],
    how: tuple[str, ...],
) -> None:
    bad = FORMATS / name
    before = _sha(bad) if bad.exists() else None
    assert _packets(tmp_path, bad, DUAL / "egress.pcap", *how) == 2
    err = capsys.readouterr().err
    assert err.startswith("cganalysis packets: error: ")
    for word in words:
        assert word in err
    assert list(tmp_path.iterdir()) == [], "no output, partial or not"
    if before is not None:
        assert _sha(bad) == before


def _corrupt_record_at(src: Path, dst: Path, record: int) -> int:
    """Copies little-endian pcap `src` to `dst` with record `record`'s captured length made
    impossible; returns that record's byte offset."""
    data = bytearray(src.read_bytes())
    offset = 24
    for _ in range(record):
        offset += 16 + int.from_bytes(data[offset + 8 : offset + 12], "little")
    data[offset + 8 : offset + 12] = (0xFFFF_F000).to_bytes(4, "little")
    dst.write_bytes(bytes(data))
    return offset


# Streaming, the egress capture is read only in the matching pass, chunk by chunk beside
# the ingress capture: a record corrupt after many chunks stops the pass (its reading
# threads end with it) with the same line as a whole read.
@pytest.mark.parametrize("how", [(), ("--stream-above-mb", "0", "--chunk-packets", "16")])
def test_an_egress_capture_corrupt_midway_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: tuple[str, ...]
) -> None:
    bad = tmp_path / "inputs" / "egress.pcap"
    bad.parent.mkdir()
    offset = _corrupt_record_at(DUAL / "egress.pcap", bad, 200)
    out = tmp_path / "out"
    assert _packets(out, DUAL / "ingress.pcap", bad, *how) == 2
    err = capsys.readouterr().err
    assert err.startswith("cganalysis packets: error: ")
    assert f"egress.pcap at byte offset {offset}: corrupt record length" in err
    assert not out.exists() or list(out.iterdir()) == [], "no output, partial or not"


def test_truncated_last_record_warns_and_keeps_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", str(FORMATS / "truncated.pcap"), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert any("truncated last record" in w for w in facts["warnings"])
    assert facts["packets"] == _complete_pcap_records(FORMATS / "truncated.pcap") > 100


def _complete_pcap_records(path: Path) -> int:
    """Walks the little-endian pcap record headers: how many records are whole."""
    data = path.read_bytes()
    offset, complete = 24, 0
    while offset + 16 <= len(data):
        caplen = int.from_bytes(data[offset + 8 : offset + 12], "little")
        if offset + 16 + caplen > len(data):
            break
        offset += 16 + caplen
        complete += 1
    return complete


def test_empty_capture_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _packets(tmp_path, DUAL / "ingress.pcap", FORMATS / "empty.pcap") == 2
    err = capsys.readouterr().err
    assert "empty.pcap" in err and "no IP packets" in err


def test_swapped_captures_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _packets(tmp_path, DUAL / "egress.pcap", DUAL / "ingress.pcap") == 2
    err = capsys.readouterr().err
    assert "wrong way round" in err
    assert list(tmp_path.iterdir()) == []


def test_failure_leaves_an_existing_output_intact(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    assert _packets(tmp_path, DUAL / "ingress.pcap", DUAL / "egress.pcap") == 0
    good = _sha(out)
    assert _packets(tmp_path, FORMATS / "not-a-capture.pcap", DUAL / "egress.pcap") == 2
    assert _sha(out) == good
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "out.egress-only.parquet",
        "out.parquet",
    ]


@pytest.mark.parametrize("option", ["-o", "--egress-only"])
def test_an_output_naming_a_capture_is_refused(tmp_path: Path, option: str) -> None:
    for name in ("ingress.pcap", "egress.pcap"):
        shutil.copy(DUAL / name, tmp_path / name)
    good = _sha(tmp_path / "egress.pcap")
    # A link to the capture under another name is the same file.
    (tmp_path / "alias.pcap").symlink_to(tmp_path / "egress.pcap")
    argv = ["packets", str(tmp_path / "ingress.pcap"), str(tmp_path / "egress.pcap")]
    if option == "-o":
        argv += ["-o", str(tmp_path / "alias.pcap")]
    else:
        argv += ["-o", str(tmp_path / "out.parquet"), option, str(tmp_path / "alias.pcap")]
    with pytest.raises(SystemExit, match="names the capture"):
        main(argv)
    assert _sha(tmp_path / "egress.pcap") == good
    assert not (tmp_path / "out.parquet").exists()


def test_capture_drops_make_loss_suspect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("ingress.pcap", "egress.pcap"):
        shutil.copy(DUAL / name, tmp_path / name)
    (tmp_path / "ingress.pcap.log").write_text(
        "1349 packets captured\n1400 packets received by filter\n51 packets dropped by kernel\n"
    )
    code = main(
        [
            "packets",
            str(tmp_path / "ingress.pcap"),
            str(tmp_path / "egress.pcap"),
            "-o",
            str(tmp_path / "p.parquet"),
            "--summary",
            str(tmp_path / "s.json"),
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "LOSS FIGURES ARE SUSPECT" in err and "lost 51 packets" in err
    assert '"loss_suspect": true' in (tmp_path / "s.json").read_text()
