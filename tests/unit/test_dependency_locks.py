"""The dependency locks (requirements/python3.X.txt) agree with pyproject.toml, and the
rules' Conda environment with the 3.11 lock.

A lock cannot be re-resolved offline, so agreement is checked two ways that need no
network: each lock's header records the digest of the requirement tables it was resolved
from (scripts/lock.sh writes it), which must be today's pyproject.toml's (any edit of a
requirement, an extra or the build backend shows); and every requirement pyproject.toml
declares must be pinned in the lock, with hashes, at a version its range allows (a lock
edited by hand, or a range narrowed without a new lock, shows)."""

from __future__ import annotations

import copy
import hashlib
import platform
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from cganalysis import dependencies as deps
from tests.conftest import IN_CI, REPO

VERSIONS = list(deps.SUPPORTED_PYTHONS)
RELOCK = "run `bash scripts/lock.sh` and commit requirements/"


def _declared(pyproject: dict[str, Any]) -> list[tuple[str, Requirement]]:
    """(extra or "", requirement) for everything pyproject.toml declares."""
    project = pyproject["project"]
    out = [("", Requirement(r)) for r in project["dependencies"]]
    out += [(x, Requirement(r)) for x, rs in project["optional-dependencies"].items() for r in rs]
    out += [("", Requirement(r)) for r in pyproject["build-system"]["requires"]]
    return out


def lock_problems(lock: deps.Lock, pyproject: dict[str, Any], version: str) -> list[str]:
    """Why ``lock`` is not the lock of ``pyproject`` for Python ``version`` (none: it is)."""
    problems = []
    if lock.python != version:
        problems.append(f"its header names Python {lock.python}, not {version}")
    if lock.pyproject_sha256 != deps.inputs_sha256(pyproject):
        problems.append("it was resolved from other requirements than pyproject.toml's")
    marker_env = {"python_version": version, "sys_platform": "linux", "platform_system": "Linux"}
    for extra, req in _declared(pyproject):
        if req.marker and not req.marker.evaluate({**marker_env, "extra": extra}):
            continue
        pinned = lock.pins.get(deps.canonical(req.name))
        if pinned is None:
            problems.append(f"{req} is not pinned")
        elif not req.specifier.contains(Version(pinned), prereleases=True):
            problems.append(f"{req.name}=={pinned} is outside {req}")
    problems += [f"{name} has no hash" for name, n in lock.hashes.items() if n == 0]
    return problems


@pytest.mark.parametrize("version", VERSIONS)
def test_each_supported_python_has_the_lock_of_this_pyproject(version: str) -> None:
    path = deps.lock_for(version, REPO)
    problems = lock_problems(deps.read_lock(path), deps.read_pyproject(REPO), version)
    assert not problems, f"{path.name}: {'; '.join(problems)}: {RELOCK}"


def test_a_changed_requirement_or_a_hand_edited_pin_is_seen() -> None:
    pyproject = deps.read_pyproject(REPO)
    lock = deps.read_lock(deps.lock_for("3.11", REPO))
    assert not lock_problems(lock, pyproject, "3.11")
    widened = copy.deepcopy(pyproject)
    widened["project"]["dependencies"] = [
        "numpy>=1.26" if r.startswith("numpy") else r for r in widened["project"]["dependencies"]
    ]
    assert lock_problems(lock, widened, "3.11") == [
        "it was resolved from other requirements than pyproject.toml's"
    ]
    added = copy.deepcopy(pyproject)
    added["project"]["optional-dependencies"]["dev"].append("nosuchpackage>=1")
    assert "nosuchpackage>=1 is not pinned" in lock_problems(lock, added, "3.11")
    edited = deps.Lock(
        lock.python, lock.pyproject_sha256, {**lock.pins, "numpy": "1.25.2"}, lock.hashes
    )
    (problem,) = lock_problems(edited, pyproject, "3.11")
    assert problem.startswith("numpy==1.25.2 is outside numpy")
    assert lock_problems(lock, pyproject, "3.12") == ["its header names Python 3.11, not 3.12"]


def test_a_lock_line_that_is_no_pin_is_named() -> None:
    text = "# cganalysis-lock: python=3.11 pyproject-sha256=ab\nnumpy>=2 \\\n    --hash=sha256:00\n"
    with pytest.raises(deps.LockError, match=r"x\.txt:2: not `name==version"):
        deps.parse_lock(text, "x.txt")
    lock = deps.parse_lock(
        text.replace("numpy>=2", "NumPy==2.0") + "Py_Yaml==6.0 \\\n    --hash=sha256:01 \\\n"
        "    --hash=sha256:02\n    # via x\n",
        "x.txt",
    )
    assert lock == deps.Lock(
        "3.11", "ab", {"numpy": "2.0", "py-yaml": "6.0"}, {"numpy": 1, "py-yaml": 2}
    )


def test_an_unsupported_python_is_told_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(deps.LockError, match=r"Python 3\.10 has no lock.*CGA_UNLOCKED=1"):
        deps.lock_for("3.10", REPO)
    with pytest.raises(deps.LockError, match=r"python3\.11\.txt: missing.*scripts/lock\.sh"):
        deps.lock_for("3.11", tmp_path)


def test_differences_from_the_lock() -> None:
    lock = deps.Lock("3.11", None, {"numpy": "2.4.6", "scipy": "1.17.1", "pyyaml": "6.0.3"}, {})
    installed = {"numpy": "2.4.5", "scipy": "1.17.1", "extra-thing": "1.0", "pip": "23.0.1"}
    assert deps.differences(lock, installed) == [
        "extra-thing 1.0 (not in the lock)",
        "numpy 2.4.5 (locked 2.4.6)",
        "pyyaml (locked 6.0.3, not installed)",
    ]


def test_the_software_record_names_this_environment() -> None:
    import numpy

    record = deps.software()
    assert record["packages"]["numpy"] == numpy.__version__
    assert {"polars", "pyarrow", "scipy", "matplotlib", "snakemake"} <= set(record["packages"])
    lock = record["lock"]
    version = deps.python_version()
    if version not in deps.SUPPORTED_PYTHONS:
        assert lock is None
        return
    path = REPO / f"requirements/python{version}.txt"
    assert lock["file"] == f"requirements/python{version}.txt"
    assert lock["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert lock["matches"] == (lock["differences"] == [])
    # CI's environment is the one install.sh just made: exactly the lock, or install.sh
    # did not install from it.
    if IN_CI:
        assert lock["matches"], lock["differences"]


def test_the_environment_read_from_folder_names_is_importlibs(tmp_path: Path) -> None:
    """The installed versions come from the metadata folders' names (fast); they are what
    importlib.metadata reads from the files, for this venv and for an egg-style folder whose
    name holds no version."""
    import importlib.metadata
    import sys

    slow: dict[str, str] = {}
    for d in importlib.metadata.distributions():
        slow.setdefault(deps.canonical(d.metadata["Name"]), d.version)
    assert deps.environment() == slow
    egg = tmp_path / "Some_Tool.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: Some_Tool\nVersion: 4.5.6\n")
    wheel = tmp_path / "other_pkg-1.2.3.dist-info"
    wheel.mkdir()
    sys.path.insert(0, str(tmp_path))
    try:
        env = deps.environment()
    finally:
        sys.path.remove(str(tmp_path))
    assert env["some-tool"] == "4.5.6" and env["other-pkg"] == "1.2.3"


def test_the_rules_conda_environment_installs_the_lock() -> None:
    """workflow/envs/cganalysis.yaml: its Python's lock, named with the lock's digest (so a
    new lock is a new environment for Snakemake); scripts/lock.sh writes that line."""
    text = (REPO / "workflow/envs/cganalysis.yaml").read_text(encoding="utf-8")
    (python,) = re.findall(r"^\s+- python=(3\.\d+)$", text, flags=re.MULTILINE)
    lock = f"requirements/python{python}.txt"
    assert f"- -r ../../{lock}" in text
    digest = hashlib.sha256((REPO / lock).read_bytes()).hexdigest()
    assert f"# lock: {lock} sha256={digest}" in text, f"{RELOCK} and workflow/envs/"


def test_a_runs_controller_record_carries_the_software() -> None:
    """meta.json's ``controller`` (and calibration.json's) is this record."""
    import numpy

    from cganalysis.testbed.measure.provenance import controller

    software = controller()["software"]
    assert software["packages"]["numpy"] == numpy.__version__
    assert software["python"] == platform.python_version()
