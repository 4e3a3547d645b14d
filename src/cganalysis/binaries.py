"""Finding the project's programs: the one lookup for ``cga-cg``, ``cga-emu`` and the like.

``scripts/install.sh`` installs the Python package into the project's virtual environment
(``.venv``) and the native programs into ``/usr/local/bin`` (root's tools: experiments run
as root, and ``sudo`` keeps ``/usr/local/bin`` on its PATH). A researcher may run
``sudo .venv/bin/snakemake`` without activating the environment, so the workflow puts the
interpreter's own ``bin`` folder first on the ``PATH`` its rules inherit
(:func:`put_interpreter_bin_first`), and ``cganalysis`` is then found in every rule.

Order for a program: an environment variable naming the file (a development build, e.g.
``target/release/cga-emu``), then the ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from cganalysis.errors import CganalysisError

INSTALL_HINT = "run `bash scripts/install.sh` (it builds native/ and installs it in /usr/local/bin)"


def interpreter_bin_dir() -> Path:
    """The folder of the running interpreter (a venv's ``bin``); symlinks are kept, since a
    venv's ``python`` links to the base interpreter's, whose folder is not the venv's."""
    return Path(sys.executable).parent


def put_interpreter_bin_first() -> None:
    """Puts :func:`interpreter_bin_dir` first on this process's ``PATH`` (inherited by every
    child), unless it is there already."""
    first = str(interpreter_bin_dir())
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if parts[0] != first:
        os.environ["PATH"] = os.pathsep.join([first, *(p for p in parts if p and p != first)])


def find_program(name: str, env_var: str, error: type[CganalysisError]) -> Path:
    """The program ``name``: ``$env_var`` if set (it must be an executable file), else the
    ``PATH``; raises ``error`` saying what to do."""
    override = os.environ.get(env_var)
    if override:
        path = Path(override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise error(
            f"${env_var} names {path}, which is not an executable file: unset it to use the "
            f"installed {name}, or point it at a build (target/release/{name})"
        )
    found = shutil.which(name)
    if found is None:
        raise error(f"{name} is not on the PATH: {INSTALL_HINT}, or point ${env_var} at a build")
    return Path(found)
