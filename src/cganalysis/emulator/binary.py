"""Finding the ``cga-emu`` binary (:func:`cganalysis.binaries.find_program`): ``$CGA_EMU``,
then the ``PATH``."""

from __future__ import annotations

from pathlib import Path

from cganalysis.binaries import find_program
from cganalysis.errors import CganalysisError

#: Environment variable naming a cga-emu binary to use instead of the installed one.
ENV_VAR = "CGA_EMU"
NAME = "cga-emu"


class EmulatorError(CganalysisError):
    """The emulator is missing, refused its configuration, or failed while running."""


def find_emulator() -> Path:
    """The binary named by ``$CGA_EMU``, else the installed ``cga-emu``."""
    return find_program(NAME, ENV_VAR, EmulatorError)
