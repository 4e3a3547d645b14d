"""Finding the ``cga-cg`` binary.

Looked up in this order: the ``CGA_CG_BIN`` environment variable (a path, e.g. a build in
``target/release``), then ``cga-cg`` on the PATH (``scripts/install.sh`` puts it in
``/usr/local/bin``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cganalysis.errors import CganalysisError

#: Environment variable naming the binary to use instead of the one on the PATH.
BINARY_ENV = "CGA_CG_BIN"
BINARY_NAME = "cga-cg"


class GeneratorNotFoundError(CganalysisError):
    """The native traffic generator is not installed."""


def find_binary() -> Path:
    """Path of the ``cga-cg`` executable; raises with what to do when there is none."""
    override = os.environ.get(BINARY_ENV)
    if override:
        path = Path(override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise GeneratorNotFoundError(
            f"{BINARY_ENV}={override} is not an executable file; unset it to use cga-cg "
            "from the PATH, or build it with `cargo build --release -p cga-cg`"
        )
    found = shutil.which(BINARY_NAME)
    if found is None:
        raise GeneratorNotFoundError(
            "the CG traffic generator `cga-cg` is not on the PATH: run `bash "
            "scripts/install.sh` (it builds native/cg and installs it in /usr/local/bin), "
            f"or point {BINARY_ENV} at a build"
        )
    return Path(found)
