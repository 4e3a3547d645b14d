"""The benchmark's reading of whether this machine hands free memory back to its host."""

from pathlib import Path

from benchmarks.command_runs import reports_free_memory


def _balloon(root: Path, name: str, bits: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "features").write_text(bits + "\n")


def test_a_balloon_with_the_reporting_bit_reports(tmp_path: Path) -> None:
    _balloon(tmp_path, "virtio0", "0110010100000000")
    assert reports_free_memory(tmp_path)


def test_a_balloon_without_it_or_no_balloon_does_not(tmp_path: Path) -> None:
    assert not reports_free_memory(tmp_path)
    _balloon(tmp_path, "virtio0", "0110000100000000")  # bit 5 clear
    _balloon(tmp_path, "virtio3", "0110")  # too short to have bit 5
    assert not reports_free_memory(tmp_path)
