"""The project's own cellular capacity model: a Markov-modulated rate with fades and outages.

A radio link's capacity moves between a few states (good, medium, fade, outage). The
state sequence is a semi-Markov process: a state lasts ``min_dwell_ms`` plus an
exponential time of mean ``mean_dwell_ms - min_dwell_ms``, then the next state is drawn
from that state's row of ``next_state`` (no self-transitions). Within a state the rate is
the state's ``rate_mbps`` times a fast-fading factor drawn uniformly from ``[1 - jitter,
1 + jitter]`` every ``jitter_ms``; its mean is 1, so the state's mean rate is
``rate_mbps``. Outages have rate 0.

What the model says in the long run (:func:`stationary`): the embedded chain's stationary
distribution ``pi`` (``pi = pi P``) weighted by the mean dwell times gives the fraction of
time in each state, ``f_i = pi_i m_i / sum_j pi_j m_j``; the mean rate is ``sum_i f_i
rate_i`` and the outage fraction is ``f_outage``. The uplink is the same state sequence
(same seed: the fades and outages of both directions coincide, as on one radio) with every
rate times ``uplink_ratio``.

Rates become mahimahi delivery opportunities in :mod:`.mahimahi`. The parameters are ours,
chosen to resemble public LTE and 5G (mid-band) drive measurements in their orders of
magnitude; they are not fitted to any trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class State:
    name: str
    rate_mbps: float
    mean_dwell_ms: float
    min_dwell_ms: float
    #: Probabilities of the next state, by name (must add up to 1, no self-transition).
    next_state: dict[str, float]


@dataclass(frozen=True)
class CapacityModel:
    name: str
    states: tuple[State, ...]
    jitter: float  # fast-fading amplitude: the factor is uniform in [1 - jitter, 1 + jitter]
    jitter_ms: int  # how long one fast-fading factor holds
    uplink_ratio: float  # uplink rate / downlink rate, state by state
    description: str

    def index(self, name: str) -> int:
        return [s.name for s in self.states].index(name)

    def transition_matrix(self) -> np.ndarray:
        n = len(self.states)
        p = np.zeros((n, n))
        for i, s in enumerate(self.states):
            for name, prob in s.next_state.items():
                p[i, self.index(name)] = prob
        return p


def _states(rows: list[tuple[str, float, float, float, dict[str, float]]]) -> tuple[State, ...]:
    return tuple(State(*row) for row in rows)


#: LTE-like: about 19 Mbit/s on average, peaks of 30-45, fades to a few Mbit/s, an outage
#: (a handover, a tunnel) every half-minute or so lasting a few hundred ms.
LTE = CapacityModel(
    name="lte",
    states=_states(
        [
            ("good", 30.0, 4000.0, 500.0, {"medium": 0.80, "fade": 0.15, "outage": 0.05}),
            ("medium", 15.0, 3000.0, 500.0, {"good": 0.50, "fade": 0.40, "outage": 0.10}),
            ("fade", 4.0, 1000.0, 200.0, {"good": 0.10, "medium": 0.60, "outage": 0.30}),
            ("outage", 0.0, 300.0, 80.0, {"good": 0.10, "medium": 0.40, "fade": 0.50}),
        ]
    ),
    jitter=0.5,
    jitter_ms=50,
    uplink_ratio=0.5,
    description="LTE-like: states 30 / 15 / 4 / 0 Mbit/s, outages of 80 ms and more",
)

#: 5G-like (mid-band): about 81 Mbit/s on average, peaks of 120-180, shorter outages.
FIVE_G = CapacityModel(
    name="5g",
    states=_states(
        [
            ("good", 120.0, 3000.0, 300.0, {"medium": 0.75, "fade": 0.20, "outage": 0.05}),
            ("medium", 60.0, 2000.0, 300.0, {"good": 0.55, "fade": 0.35, "outage": 0.10}),
            ("fade", 15.0, 800.0, 150.0, {"good": 0.10, "medium": 0.60, "outage": 0.30}),
            ("outage", 0.0, 200.0, 60.0, {"good": 0.20, "medium": 0.40, "fade": 0.40}),
        ]
    ),
    jitter=0.5,
    jitter_ms=20,
    uplink_ratio=0.25,
    description="5G-like (mid-band): states 120 / 60 / 15 / 0 Mbit/s, outages of 60 ms and more",
)

MODELS: dict[str, CapacityModel] = {m.name: m for m in (LTE, FIVE_G)}
DIRECTIONS = ("down", "up")


@dataclass(frozen=True)
class Stationary:
    """What the model says about the long run (per direction: ``rate_factor``)."""

    time_fraction: dict[str, float]
    mean_rate_mbps: float
    outage_fraction: float


def stationary(model: CapacityModel, direction: str = "down") -> Stationary:
    p = model.transition_matrix()
    # pi = pi P with sum(pi) = 1: the left eigenvector of P for eigenvalue 1.
    n = p.shape[0]
    a = np.vstack([p.T - np.eye(n), np.ones(n)])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    weights = pi * np.array([s.mean_dwell_ms for s in model.states])
    frac = weights / weights.sum()
    factor = rate_factor(model, direction)
    rates = np.array([s.rate_mbps for s in model.states]) * factor
    return Stationary(
        {s.name: float(f) for s, f in zip(model.states, frac, strict=True)},
        float(frac @ rates),
        float(sum(f for s, f in zip(model.states, frac, strict=True) if s.rate_mbps == 0)),
    )


def rate_factor(model: CapacityModel, direction: str) -> float:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {', '.join(DIRECTIONS)}")
    return 1.0 if direction == "down" else model.uplink_ratio


def state_sequence(model: CapacityModel, seed: int, duration_ms: int) -> np.ndarray:
    """The state index of every millisecond of ``[0, duration_ms)`` (seeded, deterministic)."""
    rng = np.random.default_rng([seed, 1])
    p = model.transition_matrix()
    # Start from the stationary distribution, so a short trace is not biased to one state.
    frac = np.array(list(stationary(model).time_fraction.values()))
    states = np.empty(duration_ms, dtype=np.int8)
    t = 0
    cur = int(rng.choice(len(model.states), p=frac))
    while t < duration_ms:
        s = model.states[cur]
        dwell = s.min_dwell_ms + rng.exponential(s.mean_dwell_ms - s.min_dwell_ms)
        end = min(duration_ms, t + max(1, round(dwell)))
        states[t:end] = cur
        t = end
        cur = int(rng.choice(len(model.states), p=p[cur]))
    return states


def rate_per_ms(model: CapacityModel, seed: int, duration_ms: int, direction: str) -> np.ndarray:
    """The capacity in Mbit/s of every millisecond (the state's rate times fast fading)."""
    states = state_sequence(model, seed, duration_ms)
    rates = np.array([s.rate_mbps for s in model.states])[states] * rate_factor(model, direction)
    # Fast fading from its own stream, so the state sequence does not depend on it.
    rng = np.random.default_rng([seed, 2])
    n_slots = -(-duration_ms // model.jitter_ms)
    factor = rng.uniform(1.0 - model.jitter, 1.0 + model.jitter, n_slots)
    out: np.ndarray = rates * np.repeat(factor, model.jitter_ms)[:duration_ms]
    return out
