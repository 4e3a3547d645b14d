"""Writing a figure as PDF and PNG, reproducibly."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from cganalysis.io import atomic_path


def save_figure(fig: Figure, stem: Path, dpi: int = 300) -> list[Path]:
    """Writes ``stem.pdf`` and ``stem.png`` (each atomically) and returns their paths.

    Metadata that changes at every run (creation date, software version) is left out, so an
    unchanged figure gives an unchanged file.
    """
    paths = []
    for ext, meta in (
        ("pdf", {"CreationDate": None, "Producer": None}),
        ("png", {"Software": None}),
    ):
        path = stem.with_name(f"{stem.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=dpi, metadata=meta)
        paths.append(path)
    return paths
