"""Writing a figure as PDF and PNG, reproducibly."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
from matplotlib.figure import Figure

from cganalysis.io import atomic_path


def save_figure(fig: Figure, stem: Path, dpi: int = 300) -> list[Path]:
    """Writes ``stem.pdf`` and ``stem.png`` (each atomically) and returns their paths.

    Metadata that changes at every run (creation date, software version) is left out, so an
    unchanged figure gives an unchanged file.
    """
    paths = []
    engine = fig.get_layout_engine()
    for ext, meta in (
        ("png", {"Software": None}),
        ("pdf", {"CreationDate": None, "Producer": None}),
    ):
        path = stem.with_name(f"{stem.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=dpi, metadata=meta)
        # The layout (constrained: half of a save's time) is computed once, by the first
        # save; the second draws the same positions. With no layout engine at all, not
        # "none" (a placeholder engine): savefig draws a figure that has an engine once
        # more, without rendering, before it renders it (a third of the second save).
        with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
            fig.set_layout_engine(None)
        paths.append(path)
    fig.set_layout_engine(engine)
    return sorted(paths)
