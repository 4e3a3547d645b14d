"""The competing flow's schedule as the metrics read it (steps of its target rate) and Xu's
response settings: values of a run's facts (:mod:`.runfacts`) that its documents hold as they are
(meta.json's ``schedule``, the metrics document's ``inputs``), so their JSON schema is
derived from these types too (:mod:`cganalysis.jsonrecord`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from cganalysis.errors import ConfigError
from cganalysis.jsonrecord import Json

Positive = Annotated[float, Json({"exclusiveMinimum": 0})]


@dataclass(frozen=True)
class Step:
    """From ``t_s`` on, the competing flow's target rate: None unlimited (bulk), 0 off."""

    t_s: float
    rate_mbps: Annotated[float | None, Json({"minimum": 0})]

    @property
    def on(self) -> bool:
        return self.rate_mbps is None or self.rate_mbps > 0


def parse_step(text: str, flag: str = "--step") -> Step:
    """``T:RATE`` with RATE in Mbit/s, ``bulk`` (unlimited) or ``off``."""
    t, sep, rate = text.partition(":")
    rate = rate.strip().lower()
    try:
        if not sep:
            raise ValueError
        value = None if rate == "bulk" else 0.0 if rate == "off" else float(rate)
        if value is not None and value < 0:
            raise ValueError
        return Step(float(t), value)
    except ValueError:
        raise ConfigError(
            f"{flag} {text!r}: expected T:RATE, T in seconds from the run's start and RATE "
            "the competing flow's target in Mbit/s, 'bulk' (unlimited) or 'off'; e.g. 60:10"
        ) from None


@dataclass(frozen=True)
class ResponseSettings:
    """Xu & Claypool section 4.2: 60 s before the arrival, the last 60 s before departure."""

    before_s: Positive = 60.0
    settle_s: Positive = 60.0
    #: Centred moving average applied to the bitrate series before searching (0: none).
    smooth_s: Annotated[float, Json({"minimum": 0})] = 0.0
