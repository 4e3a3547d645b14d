"""The dataset's provenance from the runs' documents: the controller's version and git
state as meta.json records them, and the Python environments of each step."""

from __future__ import annotations

from typing import Any

from cganalysis.dataset.datasheet import software_lines
from cganalysis.dataset.export import _provenance, software_used


def _software(numpy: str, matches: bool = True) -> dict[str, Any]:
    lock = {"file": "requirements/python3.11.txt", "sha256": "ab12", "matches": matches}
    return {
        "python": "3.11.2",
        "packages": {"numpy": numpy, "polars": "2.1.0"},
        "lock": {**lock, "pyproject_sha256": "cd", "differences": [] if matches else ["x"]},
    }


def test_controller_version_and_git_state_as_meta_json_records_them() -> None:
    metas = [
        {"controller": {"cganalysis": "0.1.0", "git": {"commit": "abc", "dirty": False}}},
        {"controller": {"cganalysis": "0.1.0", "git": {"commit": "def", "dirty": True}}},
    ]
    p = _provenance(metas, [])
    assert p["cganalysis_versions"] == ["0.1.0"]
    assert p["git_commits"] == ["abc", "def"] and p["git_dirty"] is True


def test_environments_are_told_apart_by_versions_and_lock() -> None:
    records = [
        ("experiment", "r1", _software("2.4.6")),
        ("metrics", "r1", _software("2.4.6")),
        ("packets", "r1", _software("2.4.6")),
        ("metrics", "r2", _software("2.5.5", matches=False)),
        ("packets", "r2", None),
    ]
    got = software_used(records)
    first, second = got["environments"]
    assert first["steps"] == ["experiment", "packets", "metrics"] and first["runs"] == ["r1"]
    assert first["lock"] == {
        "file": "requirements/python3.11.txt",
        "sha256": "ab12",
        "matches": True,
    }
    assert second["packages"]["numpy"] == "2.5.5" and second["runs"] == ["r2"]
    assert got["not_recorded"] == {"packets": ["r2"]}
    lines = software_lines(got)
    assert lines[1] == (
        "  - Python 3.11.2: numpy 2.4.6, polars 2.1.0; exactly the lock "
        "`requirements/python3.11.txt` (sha256 ab12); used by experiment, packets, metrics "
        "(1 run)"
    )
    assert "departing from the lock" in lines[2]
    assert lines[3] == "  - packets: not recorded (1 run, made before cganalysis recorded it)"
