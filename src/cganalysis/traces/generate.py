"""Generated traces: the model, seed, direction and length a trace is made from, and its name.

A generated trace is named ``cga-MODEL-sSEED-DURATIONs.DIRECTION`` (e.g.
``cga-lte-s1-300s.down``): the name says everything it is made from, and generating it
again gives the same bytes, so a run or campaign file may name one that does not exist yet
(:mod:`.find` makes it on first use).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cganalysis.traces.mahimahi import close_period, opportunities, write_trace
from cganalysis.traces.model import DIRECTIONS, MODELS, rate_per_ms

NAME_RE = re.compile(r"^cga-(?P<model>[a-z0-9]+)-s(?P<seed>\d+)-(?P<dur>\d+)s\.(?P<dir>down|up)$")


@dataclass(frozen=True)
class TraceRecipe:
    """What a generated trace is made from; its :attr:`name` says all of it."""

    model: str
    seed: int
    duration_s: int
    direction: str = "down"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model {self.model!r}: expected one of {', '.join(MODELS)}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r}: expected down or up")
        if not 1 <= self.duration_s <= 86400:
            raise ValueError(f"duration {self.duration_s} s: expected 1 to 86400")
        if self.seed < 0:
            raise ValueError(f"seed {self.seed}: expected 0 or more")

    @property
    def name(self) -> str:
        return f"cga-{self.model}-s{self.seed}-{self.duration_s}s.{self.direction}"

    @classmethod
    def from_name(cls, name: str) -> TraceRecipe | None:
        """The recipe a generated trace's file name stands for (None: not such a name)."""
        m = NAME_RE.match(name)
        if m is None or m["model"] not in MODELS:
            return None
        return cls(m["model"], int(m["seed"]), int(m["dur"]), m["dir"])


def generate(recipe: TraceRecipe) -> np.ndarray:
    """The trace's times in ms (the last one is the period, ``duration_s`` x 1000)."""
    duration_ms = recipe.duration_s * 1000
    rates = rate_per_ms(MODELS[recipe.model], recipe.seed, duration_ms, recipe.direction)
    return close_period(opportunities(rates), duration_ms)


def generate_to(recipe: TraceRecipe, path: Path) -> Path:
    write_trace(generate(recipe), path)
    return path
