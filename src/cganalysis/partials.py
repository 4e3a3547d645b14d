"""The partial files results are written into before they are renamed into place
(:func:`cganalysis.io.atomic_path`). A module of its own, importing nothing heavy: the
``packets`` command makes its partial files before its imports (see
:mod:`cganalysis.matching.early`)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

#: Numbers the partial files of this process.
_partials = itertools.count()


def new_partial(path: Path) -> Path:
    """A new empty file next to ``path``, ``.NAME.PID-N.partial``, readable as the umask
    allows (an ordinary result file). Created exclusively, so no two writers share one;
    not with tempfile, whose import (random, shutil and the compression modules) is a
    tenth of ``cganalysis packets``' start-up."""
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{next(_partials)}.partial")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # left by an earlier process of the same pid
            continue
        return tmp
