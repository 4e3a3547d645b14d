"""cganalysis: cloud-gaming traffic against competing TCP flows, from testbed to paper figures.

``cganalysis.open_run(DIR)`` and ``cganalysis.open_campaign(DIR)`` (:mod:`cganalysis.run`)
are the entry points for exploring results; they are imported on first use, so that
``import cganalysis`` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Not `typing.TYPE_CHECKING`: importing typing is a tenth of the command line's start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cganalysis.run import Campaign, Run, open_campaign, open_run

__all__ = ["Campaign", "Run", "__version__", "open_campaign", "open_run"]


def __getattr__(name: str) -> Any:
    if name in {"Campaign", "Run", "open_campaign", "open_run"}:
        from cganalysis import run

        return getattr(run, name)
    raise AttributeError(f"module 'cganalysis' has no attribute {name!r}")
