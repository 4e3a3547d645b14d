"""A testbed file (``configs/testbeds/*.yaml``): one reader, whatever the backend.

::

    backend: netns          # netns, uml, ssh or vm (required)
    name: second            # netns only: another testbed on this machine (its own lock)
    # ssh: the keys of cganalysis.testbed.ssh.testbed; vm: a `vm` section
    # (testbed/vm/config.py); uml: a `uml` section (testbed/uml/config.py)

:func:`load_testbed_file` checks the whole file when a run or a pool names it, before
anything on a host is touched; each testbed type's keys are declared once, in that
type's package (:func:`cganalysis.testbed.ssh.testbed.parse_testbed`,
:func:`cganalysis.testbed.vm.config.parse_options`), which the registry of testbed
types (:mod:`cganalysis.testbed.types`) names and the types' packages read again to run. Errors
name the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.io import read_yaml
from cganalysis.testbed.spec.validate import Section
from cganalysis.testbed.types import TESTBED_TYPES

BACKENDS = tuple(TESTBED_TYPES)


@dataclass(frozen=True)
class TestbedFile:
    path: Path
    backend: str  # one of BACKENDS
    #: A netns testbed's ``name`` (None: this machine's one unnamed netns testbed).
    name: str | None = None


def parse_testbed_file(data: Any, where: str) -> TestbedFile:
    sec = Section(data, where)
    backend = sec.choice("backend", BACKENDS)
    name = TESTBED_TYPES[backend].parse_file(data, where)
    return TestbedFile(Path(where), backend, name)


def load_testbed_file(path: Path) -> TestbedFile:
    return parse_testbed_file(read_yaml(path), str(path))
