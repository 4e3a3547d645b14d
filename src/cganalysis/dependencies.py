"""The Python dependency locks, ``requirements/python3.X.txt``: which one belongs to this
interpreter, the digest of pyproject.toml's dependency tables each was made from, and the
installed versions against it (a run's provenance).

One lock per Python that a supported system ships (:data:`SUPPORTED_PYTHONS`), each every
package pinned with its hashes (``pip install --require-hashes``), written by
``scripts/lock.sh`` (uv) with a first line :data:`HEADER` that records the digest of the
tables it was resolved from; ``tests/unit/test_dependency_locks.py`` recomputes the digest,
so a change to pyproject.toml's dependencies without a new lock fails the suite.

Standard library only, so that ``scripts/install.sh`` and ``scripts/lock.sh`` run it from
the source tree before anything is installed (``PYTHONPATH=src python3 -m
cganalysis.dependencies``; on an unsupported Python too, to say so)::

    ... path            # this Python's lock, or exit 2 saying which Pythons have one
    ... versions        # the Pythons that have a lock
    ... header 3.11     # the header line of that lock
    ... build-requires  # build-system.requires, a line each
    ... check           # this environment against its lock
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import json
import platform
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Python (major.minor) -> the supported system that ships it (the README's systems).
SUPPORTED_PYTHONS = {"3.11": "Debian 12", "3.12": "Ubuntu 24.04", "3.13": "Debian 13"}
LOCK_DIR = "requirements"
#: The checkout holding the package's source (an editable install); a wheel install has no
#: lock beside it, and then a run records none.
REPO_DIR = Path(__file__).resolve().parents[2]
HEADER = "# cganalysis-lock:"
#: The packages that compute the tables and figures (polars' engine is a package of its own
#: since polars 2), recorded by name in every run's provenance; the whole environment is
#: compared with the lock.
TABLE_PACKAGES = (
    "cganalysis",
    "numpy",
    "polars",
    "polars-runtime-32",
    "polars-runtime-64",
    "polars-runtime-compat",
    "pyarrow",
    "scipy",
    "matplotlib",
    "seaborn",
    "snakemake",
)
#: Installed beside the lock's packages on purpose: pip (the venv's own) and the project.
NOT_LOCKED = frozenset({"pip", "cganalysis"})

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


class LockError(ValueError):
    """A lock is missing, malformed or does not fit this Python; the message says what to do."""


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``PyYAML`` = ``pyyaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def lock_relpath(version: str) -> str:
    return f"{LOCK_DIR}/python{version}.txt"


def lock_for(version: str, root: Path = REPO_DIR) -> Path:
    """The lock of Python ``version`` (``3.11``) under ``root``."""
    if version not in SUPPORTED_PYTHONS:
        systems = ", ".join(f"{v} ({s})" for v, s in SUPPORTED_PYTHONS.items())
        raise LockError(
            f"Python {version} has no lock in {LOCK_DIR}/ (locked: {systems}): make the "
            "environment from one of those (PYTHON=python3.X bash scripts/install.sh), or "
            "install from pyproject.toml's ranges, unpinned: CGA_UNLOCKED=1 bash "
            "scripts/install.sh"
        )
    path = root / lock_relpath(version)
    if not path.is_file():
        raise LockError(f"{path}: missing; write the locks with `bash scripts/lock.sh`")
    return path


def lock_inputs(pyproject: Mapping[str, Any]) -> dict[str, Any]:
    """What a lock is resolved from: every requirement pyproject.toml declares (the
    package's, every extra's, and the build backend's, which the lock carries so that the
    package builds without fetching anything unpinned) and the Pythons it allows."""
    project = pyproject.get("project", {})
    return {
        "requires-python": project.get("requires-python"),
        "dependencies": list(project.get("dependencies", [])),
        "optional-dependencies": {
            k: list(v) for k, v in sorted(project.get("optional-dependencies", {}).items())
        },
        "build-system.requires": list(pyproject.get("build-system", {}).get("requires", [])),
    }


def read_pyproject(root: Path = REPO_DIR) -> dict[str, Any]:
    with (root / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


def inputs_sha256(pyproject: Mapping[str, Any]) -> str:
    """Digest of :func:`lock_inputs` (canonical JSON): any edit of a requirement changes it."""
    text = json.dumps(lock_inputs(pyproject), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def header_line(version: str, pyproject: Mapping[str, Any]) -> str:
    return f"{HEADER} python={version} pyproject-sha256={inputs_sha256(pyproject)}"


@dataclass(frozen=True)
class Lock:
    python: str | None
    pyproject_sha256: str | None
    #: canonical name -> pinned version
    pins: dict[str, str]
    #: canonical name -> number of --hash options
    hashes: dict[str, int]


def parse_lock(text: str, source: str) -> Lock:
    """A lock's header and pins; a line that is neither a comment nor ``name==version`` with
    its ``--hash`` options is an error naming ``source`` and the line."""
    header: dict[str, str] = {}
    pins: dict[str, str] = {}
    hashes: dict[str, int] = {}
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        start = number
        logical = lines[number]
        while logical.rstrip().endswith("\\") and number + 1 < len(lines):
            number += 1
            logical = logical.rstrip()[:-1] + " " + lines[number]
        number += 1
        stripped = logical.strip()
        if stripped.startswith(HEADER):
            header = dict(f.split("=", 1) for f in stripped[len(HEADER) :].split() if "=" in f)
            continue
        if not stripped or stripped.startswith("#"):
            continue
        m = _PIN.match(stripped)
        if not m:
            raise LockError(
                f"{source}:{start + 1}: not `name==version --hash=...`: {stripped[:60]!r}; "
                "rewrite the lock with `bash scripts/lock.sh`"
            )
        name = canonical(m.group(1))
        pins[name] = m.group(2)
        hashes[name] = stripped.count("--hash=")
    return Lock(header.get("python"), header.get("pyproject-sha256"), pins, hashes)


def read_lock(path: Path) -> Lock:
    return parse_lock(path.read_text(encoding="utf-8"), str(path))


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """Versions of the distributions ``names`` that are installed (others left out)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def differences(lock: Lock, installed: Mapping[str, str]) -> list[str]:
    """How ``installed`` (canonical name -> version) departs from ``lock``: a different
    version, a package the lock lacks, a locked package not installed."""
    out = []
    for name in sorted(set(lock.pins) | set(installed)):
        have, want = installed.get(name), lock.pins.get(name)
        if name in NOT_LOCKED or have == want:
            continue
        if want is None:
            out.append(f"{name} {have} (not in the lock)")
        elif have is None:
            out.append(f"{name} (locked {want}, not installed)")
        else:
            out.append(f"{name} {have} (locked {want})")
    return out


#: An installed wheel's metadata folder, ``{name}-{version}.dist-info`` (the wheel
#: specification's spelling: neither part holds a dash).
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def environment() -> dict[str, str]:
    """Every installed distribution of this interpreter, canonical name -> version (the
    first of a name on ``sys.path``, the one imported).

    Read from the metadata folders' names, not their METADATA files: parsing those (an
    e-mail parser per distribution) took 1.5 s of every metrics job's 4 s of CPU. A folder
    whose name does not say (an egg's) is read the slow way."""
    out: dict[str, str] = {}
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            children = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError:
            continue
        for child in children:
            if child.suffix not in (".dist-info", ".egg-info"):
                continue
            m = _DIST_INFO.match(child.name)
            if m:
                name, version = m.group("name"), m.group("version")
            else:
                meta = importlib.metadata.PathDistribution(child).metadata
                name, version = meta["Name"], meta["Version"]
            if name and version:
                out.setdefault(canonical(name), version)
    return out


def lock_record(root: Path = REPO_DIR) -> dict[str, Any] | None:
    """This Python's lock (its file and sha256) and whether the environment is exactly it;
    None where there is none (a wheel install, or a Python without a lock)."""
    try:
        path = lock_for(python_version(), root)
        lock = read_lock(path)
    except (LockError, OSError):
        return None
    diffs = differences(lock, environment())
    return {
        "file": lock_relpath(python_version()),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "pyproject_sha256": lock.pyproject_sha256,
        "matches": not diffs,
        # A venv made from the ranges, or changed by hand since, says how here.
        "differences": diffs[:50],
    }


def software() -> dict[str, Any]:
    """What computed a table: the interpreter, the versions of :data:`TABLE_PACKAGES`, and
    the lock the environment was installed from (written into meta.json, metrics and match
    documents, and carried by the dataset export)."""
    return copy.deepcopy(_software())


@functools.cache
def _software() -> dict[str, Any]:
    # Once a process: the code that runs is the code imported at its start (a job that
    # computes a campaign's runs one after another read the metadata again for each).
    return {
        "python": platform.python_version(),
        "packages": installed_versions(TABLE_PACKAGES),
        "lock": lock_record(),
    }


def main(argv: list[str]) -> int:
    usage = (
        "usage: python -m cganalysis.dependencies "
        "path | versions | header VERSION | build-requires | check"
    )
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    try:
        if argv[0] == "path":
            print(lock_for(python_version()))
        elif argv[0] == "versions":
            print(" ".join(SUPPORTED_PYTHONS))
        elif argv[0] == "header" and len(argv) == 2:
            print(header_line(argv[1], read_pyproject()))
        elif argv[0] == "build-requires":
            print("\n".join(lock_inputs(read_pyproject())["build-system.requires"]))
        elif argv[0] == "check":
            path = lock_for(python_version())
            diffs = differences(read_lock(path), environment())
            print(
                f"the environment differs from {path}: " + "; ".join(diffs)
                if diffs
                else f"the environment is exactly {path}"
            )
        else:
            print(usage, file=sys.stderr)
            return 2
    except LockError as e:
        print(f"cganalysis.dependencies: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
