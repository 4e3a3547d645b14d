"""cganalysis: cloud-gaming traffic against competing TCP flows, from testbed to paper figures.

``cganalysis.open_run(DIR)`` and ``cganalysis.open_campaign(DIR)`` (:mod:`cganalysis.run`)
are the entry points for exploring results, ``cganalysis.open_dataset(DIR)``
(:mod:`cganalysis.dataset.reader`) for a published dataset. They are imported on first use:
they bring polars, which the commands that import this package without them (``cganalysis
cg`` on a testbed host, the native ``cganalysis packets``) do without.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cganalysis.dataset.reader import Dataset, open_dataset
    from cganalysis.run import Campaign, Run, open_campaign, open_run

__all__ = [
    "Campaign",
    "Dataset",
    "Run",
    "__version__",
    "open_campaign",
    "open_dataset",
    "open_run",
]


def __getattr__(name: str) -> Any:
    if name in {"Campaign", "Run", "open_campaign", "open_run"}:
        from cganalysis import run

        return getattr(run, name)
    if name in {"Dataset", "open_dataset"}:
        from cganalysis.dataset import reader

        return getattr(reader, name)
    raise AttributeError(f"module 'cganalysis' has no attribute {name!r}")
