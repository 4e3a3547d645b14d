"""Writing a figure as PDF and PNG, reproducibly."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import LayoutEngine

from cganalysis.io import atomic_path


def save_figure(fig: Figure, stem: Path, dpi: int = 300) -> list[Path]:
    """Writes ``stem.pdf`` and ``stem.png`` (each atomically) and returns their paths.

    Metadata that changes at every run (creation date, software version) is left out, so an
    unchanged figure gives an unchanged file.
    """
    engine = fig.get_layout_engine()
    paths = []
    try:
        if engine is not None:
            _lay_out(fig, engine, dpi)
        for ext, meta in (
            ("png", {"Software": None}),
            ("pdf", {"CreationDate": None, "Producer": None}),
        ):
            path = stem.with_name(f"{stem.name}.{ext}")
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=ext, dpi=dpi, metadata=meta)
            paths.append(path)
    finally:
        if engine is not None:  # also when a save failed: the figure as it came
            fig.set_layout_engine(engine)
    return sorted(paths)


def _lay_out(fig: Figure, engine: LayoutEngine, dpi: int) -> None:
    """Runs the figure's layout engine once, as the PNG's save would (text measured by
    Agg at ``dpi``), and leaves the figure without one: each save is then a single draw.
    (``savefig`` draws a figure that has a layout engine, even the placeholder "none"
    leaves, once without rendering before it renders it: four draws for two files where
    one layout and two draws make the same bytes.)"""
    canvas, saved_dpi = fig.canvas, fig.dpi
    FigureCanvasAgg(fig)  # the PNG's canvas: the renderer that measures the text
    fig.set_dpi(dpi)
    try:
        engine.execute(fig)
    finally:
        fig.set_dpi(saved_dpi)
        fig.set_canvas(canvas)  # a figure shown in a window or a notebook stays there
    # No engine at all (what None gives under these settings), not "none".
    with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
