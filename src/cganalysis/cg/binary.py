"""Finding the ``cga-cg`` binary (:func:`cganalysis.binaries.find_program`): ``$CGA_CG_BIN``,
then the ``PATH``."""

from __future__ import annotations

from pathlib import Path

from cganalysis.binaries import find_program
from cganalysis.errors import CganalysisError

#: Environment variable naming the binary to use instead of the installed one.
BINARY_ENV = "CGA_CG_BIN"
BINARY_NAME = "cga-cg"


class GeneratorNotFoundError(CganalysisError):
    """The native traffic generator is not installed."""


def find_binary() -> Path:
    """Path of the ``cga-cg`` executable; raises with what to do when there is none."""
    return find_program(BINARY_NAME, BINARY_ENV, GeneratorNotFoundError)
