"""A capture's fingerprint (size and head checksum), and the match summary's record of it
that decides whether the workflow may treat a capture as ancient."""

from __future__ import annotations

import json
from pathlib import Path

from cganalysis.capture.fingerprint import HEAD_BYTES, capture_fingerprint, made_from


def _summary(tmp_path: Path, capture: Path) -> Path:
    path = tmp_path / "match.json"
    path.write_text(json.dumps({"fingerprint_ingress": capture_fingerprint(capture)}))
    return path


def test_the_fingerprint_changes_with_the_head_or_the_size_only(tmp_path: Path) -> None:
    capture = tmp_path / "ingress.pcap"
    data = bytes(range(256)) * (HEAD_BYTES // 128)  # two heads long
    capture.write_bytes(data)
    first = capture_fingerprint(capture)
    assert first["bytes"] == len(data)
    capture.write_bytes(data)  # rewritten, same bytes: same fingerprint
    assert capture_fingerprint(capture) == first
    capture.write_bytes(b"x" + data[1:])  # first byte
    assert capture_fingerprint(capture) != first
    capture.write_bytes(data + b"\0")  # size
    assert capture_fingerprint(capture) != first


def test_made_from_needs_the_recorded_fingerprint_of_that_capture(tmp_path: Path) -> None:
    capture = tmp_path / "ingress.pcap"
    capture.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\1" * 100)
    summary = _summary(tmp_path, capture)
    assert made_from(summary, "ingress", capture)
    assert not made_from(summary, "egress", capture)  # nothing recorded for egress
    capture.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\2" * 100)  # the run made again
    assert not made_from(summary, "ingress", capture)
    assert not made_from(tmp_path / "missing.json", "ingress", capture)
    summary.write_text("{not json")
    assert not made_from(summary, "ingress", capture)
    summary.write_text("[]")  # a summary of another shape
    assert not made_from(summary, "ingress", capture)
