"""Bandwidth sharing between the CG flow and its competitor.

Xu & Claypool (Fig. 3): "the average difference in throughput for the game system minus the
competing TCP flow, shown normalized by the capacity (thus ranging from -1 to 1)": 0 is an
equal share, +1 the game system has all of it, -1 the TCP flow has all of it.
Jain's index over n rates is (sum x)^2 / (n sum x^2): 1 for equal rates, 1/n when one flow has
everything.
"""

from __future__ import annotations

from collections.abc import Sequence


def xu_fairness_ratio(cg_mbps: float, competitor_mbps: float, capacity_mbps: float) -> float:
    """(CG - competitor) / capacity; in [-1, 1] when the two fit in the capacity."""
    if not capacity_mbps > 0:
        raise ValueError(f"capacity must be positive, got {capacity_mbps}")
    return (cg_mbps - competitor_mbps) / capacity_mbps


def jain_index(rates: Sequence[float]) -> float | None:
    """Jain's fairness index in [1/n, 1]; None when no flow sent anything."""
    if any(r < 0 for r in rates):
        raise ValueError(f"rates must not be negative, got {list(rates)}")
    total = sum(rates)
    squares = sum(r * r for r in rates)
    if not rates or squares == 0:
        return None
    return total * total / (len(rates) * squares)
