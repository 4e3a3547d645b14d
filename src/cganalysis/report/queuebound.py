"""What a packet-counted drop-tail queue allows its delays to be: the arithmetic the
account of Table II's cells still out (:mod:`.cells_out`) checks the paper's own numbers
with, before anything is tuned towards them.

A FIFO of ``packets`` packets of at most ``packet_bytes`` bytes, drained at ``rate_mbps``,
delays no packet by more than :func:`drain_ms`. Delays bounded that way, with a given mean
and given shares over some thresholds (Table II's "% > 10 ms" rows), can spread only so
much: :func:`max_std_ms` is the largest standard deviation they can have, so a cell whose
own standard deviation exceeds it cannot come from that queue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def drain_ms(packets: int, packet_bytes: int, rate_mbps: float) -> float:
    """The time ``packets`` packets of ``packet_bytes`` bytes take at ``rate_mbps``."""
    return packets * packet_bytes * 8 / (rate_mbps * 1e3)


def max_std_ms(mean_ms: float, pct_over: Mapping[float, float], bound_ms: float) -> float:
    """The largest standard deviation of delays in [0, ``bound_ms``] whose mean is
    ``mean_ms`` and of which ``pct_over[t]`` per cent exceed ``t`` ms; NaN when no such
    delays exist (the mean out of the reach the shares leave, or a share over the bound).

    Each share lies in a band between two thresholds; for a fixed mean the variance is
    largest with every delay at an edge of its band, and moving a band's mass from its lower
    edge ``l`` to its upper edge ``u`` adds ``u - l`` to the mean per unit and ``u**2 -
    l**2`` to the second moment: ``u + l`` per unit of mean, so the bands are raised in that
    order until the mean is reached (a linear programme solved greedily)."""
    cuts = sorted(t for t in pct_over if t < bound_ms)
    if any(pct_over[t] > 0 for t in pct_over if t >= bound_ms):
        return math.nan
    edges = [0.0, *cuts, bound_ms]
    above = [1.0] + [pct_over[t] / 100 for t in cuts] + [0.0]
    bands = [(edges[i], edges[i + 1], above[i] - above[i + 1]) for i in range(len(edges) - 1)]
    if any(mass < 0 for _, _, mass in bands):
        return math.nan
    mean = sum(lo * mass for lo, _, mass in bands)
    second = sum(lo * lo * mass for lo, _, mass in bands)
    need = mean_ms - mean
    for lo, hi, mass in sorted(bands, key=lambda b: -(b[0] + b[1])):
        moved = min(mass, need / (hi - lo)) if need > 0 else 0.0
        need -= moved * (hi - lo)
        second += moved * (hi * hi - lo * lo)
    if need > 1e-9 or mean > mean_ms + 1e-9:
        return math.nan
    return math.sqrt(max(second - mean_ms**2, 0.0))
