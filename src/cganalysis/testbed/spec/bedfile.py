"""A testbed file (``configs/testbeds/*.yaml``): one reader, whatever the backend.

::

    backend: netns          # netns, uml, ssh or vm (required)
    name: second            # netns only: another testbed on this machine (its own lock)
    # ssh: the keys of cganalysis.testbed.sshbed; vm: a `vm` section (testbed/vmconf.py);
    # uml: a `uml` section (testbed/umlconf.py)

:func:`load_testbed_file` checks the whole file when a run or a pool names it, before
anything on a host is touched; each backend's keys are declared once, in that backend's
module (:func:`cganalysis.testbed.sshbed.parse_testbed`,
:func:`cganalysis.testbed.vmconf.parse_options`), which the backends read again to run.
Errors name the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.io import read_yaml
from cganalysis.testbed.validate import TOKEN, Section

BACKENDS = ("netns", "uml", "ssh", "vm")


@dataclass(frozen=True)
class TestbedFile:
    path: Path
    backend: str  # one of BACKENDS
    #: A netns testbed's ``name`` (None: this machine's one unnamed netns testbed).
    name: str | None = None


def parse_testbed_file(data: Any, where: str) -> TestbedFile:
    sec = Section(data, where)
    backend = sec.choice("backend", BACKENDS)
    if backend == "ssh":
        from cganalysis.testbed.sshbed import parse_testbed

        parse_testbed(data, where)
        return TestbedFile(Path(where), backend)
    if backend == "vm":
        from cganalysis.testbed.vmconf import parse_options

        parse_options(data, where)
        return TestbedFile(Path(where), backend)
    if backend == "uml":
        from cganalysis.testbed import umlconf

        umlconf.parse_options(data, where)
        return TestbedFile(Path(where), backend)
    name = sec.opt_string("name", pattern=TOKEN)
    sec.finish()
    return TestbedFile(Path(where), backend, name)


def load_testbed_file(path: Path) -> TestbedFile:
    return parse_testbed_file(read_yaml(path), str(path))
