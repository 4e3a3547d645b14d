"""Where the ``cga-emu`` binary is."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cganalysis.errors import CganalysisError

#: Environment variable naming a cga-emu binary to use instead of the one on the PATH.
ENV_VAR = "CGA_EMU"
NAME = "cga-emu"


class EmulatorError(CganalysisError):
    """The emulator is missing, refused its configuration, or failed while running."""


def find_emulator() -> Path:
    """The binary named by ``$CGA_EMU``, else ``cga-emu`` on the PATH."""
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EmulatorError(f"${ENV_VAR} names {path}, which is not an executable file")
        return path
    found = shutil.which(NAME)
    if found is None:
        raise EmulatorError(
            f"{NAME} is not on the PATH: build and install it with `bash scripts/install.sh` "
            f"(or point ${ENV_VAR} at a built binary, e.g. target/release/{NAME})"
        )
    return Path(found)
