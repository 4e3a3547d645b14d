"""Traffic schedules: when the CG stream runs and what the competing TCP flow targets.

Presets from the papers (seconds from the run's start):

- ``tma2024`` (Graff et al., TMA 2024, section V.A): CG from 0 s; iperf3 from 60 s at
  10, 20, 30, 40, 45 Mbit/s, one step per minute; 6 minutes in all. Statistics from the
  third minute on (120-360 s), "when the bottleneck is saturated".
- ``xu2022`` (Xu & Claypool, IMC 2022, section 3.5): 9 minutes; bulk TCP from 180 s to
  360 s. Their fairness window (section 4.1) starts 35 s after the arrival (220-370 s for
  an arrival at 185 s): here 215-360 s.
- ``custom``: any list of ``{t_s, rate_mbit}`` steps; ``rate_mbit`` a number, ``bulk``
  (unlimited) or ``off``.

A step is made by a new iperf3 client (see competitor.py and docs/testbed.md for why).
``scaled(k)`` multiplies every time by ``k`` (the ``quick`` profile fits a schedule into
~30 s), rates unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cganalysis.testbed.spec.validate import Section

PRESETS = ("tma2024", "xu2022", "custom")
#: The longest run a run file may plan, after time_scale: one day.
MAX_DURATION_S = 86_400.0


@dataclass(frozen=True)
class Step:
    """From ``t_s`` on, the competitor's target: Mbit/s, None = bulk (unlimited), 0 = off."""

    t_s: float
    rate_mbit: float | None

    @property
    def on(self) -> bool:
        return self.rate_mbit is None or self.rate_mbit > 0

    def label(self) -> str:
        if self.rate_mbit is None:
            return "bulk"
        return "off" if self.rate_mbit == 0 else f"{self.rate_mbit:g} Mbit/s"


@dataclass(frozen=True)
class Phase:
    """One iperf3 client: from ``start_s`` for ``duration_s`` at ``rate_mbit`` (None: bulk)."""

    index: int
    start_s: float
    duration_s: float
    rate_mbit: float | None


@dataclass(frozen=True)
class Schedule:
    preset: str
    duration_s: float
    steps: tuple[Step, ...]
    cg_start_s: float = 0.0
    cg_stop_s: float | None = None  # None: until the end
    window_s: tuple[float, float | None] = (0.0, None)
    fairness_window_s: tuple[float, float] | None = None
    time_scale: float = 1.0

    def scaled(self, k: float) -> Schedule:
        if k == 1.0:
            return self
        fw = self.fairness_window_s
        return replace(
            self,
            duration_s=self.duration_s * k,
            steps=tuple(Step(s.t_s * k, s.rate_mbit) for s in self.steps),
            cg_start_s=self.cg_start_s * k,
            cg_stop_s=None if self.cg_stop_s is None else self.cg_stop_s * k,
            window_s=(
                self.window_s[0] * k,
                None if self.window_s[1] is None else self.window_s[1] * k,
            ),
            fairness_window_s=None if fw is None else (fw[0] * k, fw[1] * k),
            time_scale=self.time_scale * k,
        )

    def fit(self, max_duration_s: float | None) -> Schedule:
        """Scaled down (never up) so that it lasts at most ``max_duration_s``."""
        if max_duration_s is None or self.duration_s <= max_duration_s:
            return self
        return self.scaled(max_duration_s / self.duration_s)

    def phases(self) -> list[Phase]:
        """The competitor's iperf3 clients, one per step that is on."""
        out: list[Phase] = []
        for i, step in enumerate(self.steps):
            end = self.steps[i + 1].t_s if i + 1 < len(self.steps) else self.duration_s
            if step.on and end > step.t_s:
                out.append(Phase(len(out), step.t_s, end - step.t_s, step.rate_mbit))
        return out

    def competitor_span(self) -> tuple[float, float] | None:
        ph = self.phases()
        return None if not ph else (ph[0].start_s, ph[-1].start_s + ph[-1].duration_s)

    def meta(self) -> list[dict[str, Any]]:
        """The schedule as the metrics read it (``rate_mbps`` in Mbit/s, None = bulk)."""
        return [{"t_s": round(s.t_s, 6), "rate_mbps": s.rate_mbit} for s in self.steps]

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "duration_s": self.duration_s,
            "time_scale": self.time_scale,
            "cg_start_s": self.cg_start_s,
            "cg_stop_s": self.cg_stop_s,
            "steps": self.meta(),
            "window_s": list(self.window_s),
            "fairness_window_s": None
            if self.fairness_window_s is None
            else list(self.fairness_window_s),
        }


def tma2024() -> Schedule:
    steps = tuple(Step(60.0 * (i + 1), r) for i, r in enumerate((10.0, 20.0, 30.0, 40.0, 45.0)))
    return Schedule("tma2024", 360.0, steps, window_s=(120.0, 360.0))


def xu2022() -> Schedule:
    return Schedule(
        "xu2022",
        540.0,
        (Step(180.0, None), Step(360.0, 0.0)),
        window_s=(0.0, 540.0),
        fairness_window_s=(215.0, 360.0),
    )


def _rate(sec: Section, value: Any, key: str) -> float | None:
    if value == "bulk":
        return None
    if value == "off":
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise sec.error(key, f"{value!r}: a rate in Mbit/s, 'bulk' or 'off'")
    return float(value)


def parse_schedule(sec: Section) -> Schedule:
    preset = sec.choice("preset", PRESETS, "custom")
    if preset == "tma2024":
        base = tma2024()
    elif preset == "xu2022":
        base = xu2022()
    else:
        duration = sec.number("duration_s", minimum=0.0, exclusive_minimum=True)
        steps: list[Step] = []
        for i, raw in enumerate(sec.items("competitor")):
            s = Section(raw, sec.where, sec.key(f"competitor[{i}]"))
            t = s.number("t_s", minimum=0.0)
            steps.append(Step(t, _rate(s, s.raw("rate_mbit"), "rate_mbit")))
            s.finish()
        times = [s.t_s for s in steps]
        if times != sorted(times) or len(set(times)) != len(times):
            raise sec.error("competitor", f"step times {times} must be strictly increasing")
        if times and times[-1] >= duration:
            raise sec.error("competitor", f"a step at {times[-1]:g} s is not before duration_s")
        base = Schedule("custom", duration, tuple(steps), window_s=(0.0, duration))
    cg = sec.opt_sub("cg")
    if cg is not None:
        base = replace(
            base,
            cg_start_s=cg.number("start_s", base.cg_start_s, minimum=0.0),
            cg_stop_s=cg.opt_number("stop_s", minimum=0.0),
        )
        cg.finish()
    if sec.has("window_s"):
        w = sec.items("window_s")
        if len(w) != 2 or not isinstance(w[0], int | float):
            raise sec.error("window_s", "expected [START_S, END_S] (END_S may be null)")
        base = replace(base, window_s=(float(w[0]), None if w[1] is None else float(w[1])))
    if sec.has("fairness_window_s"):
        w = sec.items("fairness_window_s")
        if len(w) != 2 or not all(isinstance(x, int | float) for x in w):
            raise sec.error("fairness_window_s", "expected [START_S, END_S]")
        base = replace(base, fairness_window_s=(float(w[0]), float(w[1])))
    scale = sec.number("time_scale", 1.0, minimum=0.0, exclusive_minimum=True)
    sec.finish()
    # A shared run file must not plan a run without end (inf) or of months.
    if not base.duration_s * scale <= MAX_DURATION_S:
        raise sec.error(
            "time_scale",
            f"duration_s x time_scale is {base.duration_s * scale:g} s, more than "
            f"{MAX_DURATION_S:g} s (one day)",
        )
    return base.scaled(scale)
