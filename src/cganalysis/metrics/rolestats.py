"""A role's block of the metrics document, family by family as the metric registry lists
them (:data:`cganalysis.metrics.registry.ROLE_METRICS`): each family's function computes
its keys from one :class:`RoleData`, over the analysis window (whole bins)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cganalysis.metrics.bitrate import BITS_PER_MBIT, bitrate_series, payload_bytes
from cganalysis.metrics.capacity import LinkCapacity
from cganalysis.metrics.delay import (
    delay_stats,
    quantile_key,
    threshold_key,
    time_weighted_delay_ms,
)
from cganalysis.metrics.frames import frame_rate
from cganalysis.metrics.jitter import rtp_jitter
from cganalysis.metrics.loss import Loss, loss, rtp_gap_loss
from cganalysis.metrics.registry import ROLE_METRICS
from cganalysis.metrics.runfacts import BitratePoint, RunFacts
from cganalysis.metrics.timebase import Prepared, Resolved, entered_between

CG, COMPETITOR = "cg", "competitor"
MAIN_ROLES: tuple[str, ...] = (CG, COMPETITOR)


@dataclass(frozen=True)
class RoleData:
    """What every family reads: one role's packets in the window, and its rate series."""

    entered: pl.DataFrame  # the role's packets that entered during the window
    series: pl.DataFrame  # its rate per bin at the bitrate point
    window: Resolved
    facts: RunFacts
    #: One capture point: no egress times, losses from RTP sequence gaps, no frame rate.
    single: bool
    capacity_bits: float
    #: Its payload-level rate per bin (bitrate.payload_bytes); None where a packet that
    #: entered in the window has no payload size (another protocol, an older table).
    payload_series: pl.DataFrame | None = None

    def delivered(self, column: str) -> pl.Series:
        """A column of the packets that left (all of them with one capture point), copied
        alone (a filter of the whole frame copied its 30 columns)."""
        if self.single:
            return self.entered.get_column(column)
        return (
            self.entered.lazy()
            .filter(pl.col("t_out_ns").is_not_null())
            .select(column)
            .collect()
            .get_column(column)
        )


def _volume(r: RoleData) -> dict[str, Any]:
    offered_bits = float(r.entered.get_column("size_bytes").cast(pl.Int64).sum()) * 8.0
    return {
        "packets": r.entered.height,
        "bytes": int(offered_bits // 8),
        "offered_mean_mbps": offered_bits / r.window.duration_s / BITS_PER_MBIT,
    }


def _delay(r: RoleData) -> dict[str, Any]:
    d = delay_stats(r.entered.get_column("delay_ms"), r.facts.delay_thresholds_ms)
    return {
        "delay_count": d.count,
        "delay_mean_ms": d.mean_ms,
        "delay_time_mean_ms": time_weighted_delay_ms(
            r.entered.get_column("t_in_ns"), r.entered.get_column("delay_ms"), r.window.ns()[1]
        ),
        "delay_std_ms": d.std_ms,
        "delay_var_ms2": d.var_ms2,
        "delay_min_ms": d.min_ms,
        **{f"delay_{quantile_key(q)}_ms": v for q, v in d.quantiles_ms.items()},
        "delay_max_ms": d.max_ms,
        **{threshold_key(t): v for t, v in d.pct_over.items()},
    }


def _bitrate(r: RoleData) -> dict[str, Any]:
    rates = r.series.get_column("rate_mbps").to_numpy()
    q1, q2, q3 = (float(v) for v in np.quantile(rates, [0.25, 0.5, 0.75], method="linear"))
    return {
        "bitrate_mean_mbps": float(rates.mean()),
        "bitrate_std_mbps": float(rates.std()),
        "bitrate_q1_mbps": q1,
        "bitrate_median_mbps": q2,
        "bitrate_q3_mbps": q3,
    }


def _loss(r: RoleData) -> dict[str, Any]:
    lost: Loss | None
    if r.single:
        has_seq = r.entered.get_column("rtp_seq_ext").is_not_null().any()
        lost = rtp_gap_loss(r.entered) if has_seq else None
        source = None if lost is None else "rtp_sequence"
    else:
        lost, source = loss(r.entered), "matched"
    return {
        "loss_rate": None if lost is None else lost.rate,
        "packets_lost": None if lost is None else lost.lost,
        "packets_loss_known": None if lost is None else lost.known,
        "loss_source": source,
    }


def _ecn(r: RoleData) -> dict[str, Any]:
    ce = r.delivered("ce_marked").drop_nulls()
    return {"ce_rate": float(ce.mean()) if ce.len() else None}  # type: ignore[arg-type]


def _jitter(r: RoleData) -> dict[str, Any]:
    # rtp_jitter keeps the packets with a time in time_col: with two capture points, those
    # that left.
    jitter = rtp_jitter(r.entered, time_col="t_in_ns" if r.single else "t_out_ns")
    return {"jitter_mean_ms": jitter.mean_ms, "jitter_last_ms": jitter.last_ms}


def _frames(r: RoleData) -> dict[str, Any]:
    # One capture point cannot tell a whole frame from a damaged one: no frame rate there.
    frames = None if r.single else frame_rate(r.entered, r.window.duration_s)
    return {
        "frames_delivered": None if frames is None else frames.frames_delivered,
        "frames_incomplete": None if frames is None else frames.frames_incomplete,
        "frame_rate_fps": None if frames is None else frames.frame_rate_fps,
    }


def _utilisation(r: RoleData) -> dict[str, Any]:
    delivered_bits = float(r.series.get_column("bytes").sum()) * 8.0
    return {
        "utilisation": delivered_bits / r.capacity_bits if r.capacity_bits > 0 else None,
    }


def _payload(r: RoleData) -> dict[str, Any]:
    if r.payload_series is None:
        return {"bitrate_payload_mean_mbps": None, "utilisation_payload": None}
    # As _bitrate and _utilisation, over the payload's bytes in the same whole bins.
    rates = r.payload_series.get_column("rate_mbps").to_numpy()
    bits = float(r.payload_series.get_column("bytes").sum()) * 8.0
    return {
        "bitrate_payload_mean_mbps": float(rates.mean()),
        "utilisation_payload": bits / r.capacity_bits if r.capacity_bits > 0 else None,
    }


#: Each family of the registry's role metrics, and the function that computes it.
FAMILIES: dict[str, Callable[[RoleData], dict[str, Any]]] = {
    "volume": _volume,
    "delay": _delay,
    "bitrate": _bitrate,
    "loss": _loss,
    "ecn": _ecn,
    "jitter": _jitter,
    "frames": _frames,
    "utilisation": _utilisation,
    "payload": _payload,
}


def role_stats(
    prepared: Prepared,
    role: str,
    *,
    window: Resolved,
    facts: RunFacts,
    point: BitratePoint,
    single: bool,
    capacity_bits: float,
) -> dict[str, Any]:
    """The per-role block of the JSON, over ``window`` (already whole bins), in the
    registry's order (a run's own delay thresholds where its keys differ)."""
    mine = prepared.role(role)
    entered = entered_between(mine, *window.ns())
    # The role's rate per bin, of wire bytes and (where every packet's is known) payload.
    role_series = functools.partial(
        bitrate_series,
        mine,
        start_s=window.start_s,
        end_s=window.end_s,
        bin_s=facts.bin_s,
        point=point,
        keys=[role],
    )
    series = role_series()
    payload = None
    if not entered.select(payload_bytes().is_null().any()).item():
        payload = role_series(value=payload_bytes())
    data = RoleData(entered, series, window, facts, single, capacity_bits, payload)
    computed: dict[str, Any] = {}
    for family in dict.fromkeys(m.family for m in ROLE_METRICS):
        computed.update(FAMILIES[family](data))
    registered = [m.key for m in ROLE_METRICS if m.key in computed]
    return {**{k: computed[k] for k in registered}, **computed}


def roles_block(
    prepared: Prepared,
    window: Resolved,
    facts: RunFacts,
    point: BitratePoint,
    capacity: LinkCapacity,
) -> dict[str, dict[str, Any]]:
    present = set(prepared.by_role)
    roles = [*MAIN_ROLES, *sorted(r for r in present if r not in MAIN_ROLES)]
    cap_bits = capacity.bits(window.start_s, window.end_s)
    return {
        r: role_stats(
            prepared,
            r,
            window=window,
            facts=facts,
            point=point,
            single=prepared.mode == "single",
            capacity_bits=cap_bits,
        )
        for r in roles
    }
