"""cganalysis: cloud-gaming traffic against competing TCP flows, from testbed to paper figures.

``cganalysis.open_run(DIR)`` and ``cganalysis.open_campaign(DIR)`` (:mod:`cganalysis.run`)
are the entry points for exploring results, ``cganalysis.open_dataset(DIR)``
(:mod:`cganalysis.dataset.reader`) for a published dataset; they are imported on first use, so that
``import cganalysis`` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Not `typing.TYPE_CHECKING`: importing typing is a tenth of the command line's start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
