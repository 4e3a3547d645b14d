"""Tables and figures of the papers from metrics: :mod:`.style` (the one look, from
``configs/plotting.yaml``), :mod:`.tablefmt` (table model and CSV/Markdown/LaTeX/HTML),
:mod:`.tables` (TMA Tables I-II, Xu Tables 2-6), :mod:`.figures` (TMA time series, Xu
Figs. 3-5; functions return Figures, :func:`.figures.save_figure` writes PDF and PNG) and
:mod:`.inputs` (metrics files to the tables' frames)."""

from __future__ import annotations
