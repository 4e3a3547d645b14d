"""Synthetic PACKETS tables for the metrics tests: flows with chosen times, sizes, delays.

Times are given in seconds from the run's start; the table holds absolute nanoseconds
(``T0_NS`` + offset), as the packets command writes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from cganalysis.schemas import PACKETS, check_schema

T0_NS = 1_700_000_000_000_000_000
NS = 1_000_000_000


def flow(
    times_s: Sequence[float] | np.ndarray,
    *,
    flow_id: int = 0,
    proto: int = 17,
    sport: int = 40000,
    dport: int = 30002,
    src: str = "10.0.1.1",
    dst: str = "10.0.2.1",
    size_bytes: int | Sequence[int] = 1250,
    delay_ms: float | Sequence[float | None] | None = 1.0,
    lost: Sequence[bool | None] | None = None,
    rtp_ssrc: int | None = None,
    rtp_seq: Sequence[int] | None = None,
    rtp_ts: Sequence[int] | None = None,
    ce: Sequence[bool] | None = None,
    single: bool = False,
) -> pl.DataFrame:
    """One directional flow. ``lost`` None: every packet delivered after ``delay_ms``.

    A lost packet has no egress time and no delay; ``single`` leaves every egress field
    null (a capture with no egress twin).
    """
    t = np.asarray(times_s, dtype=np.float64)
    n = t.size
    sizes = np.broadcast_to(np.asarray(size_bytes), (n,)).astype(np.int64)
    lost_v: list[bool | None] = [False] * n if lost is None else list(lost)
    if isinstance(delay_ms, (int, float)) or delay_ms is None:
        delays: list[float | None] = [None if delay_ms is None else float(delay_ms)] * n
    else:
        delays = list(delay_ms)
    t_in = [T0_NS + round(x * NS) for x in t]
    t_out: list[int | None] = []
    d_out: list[float | None] = []
    for ti, d, lo in zip(t_in, delays, lost_v, strict=True):
        if single or d is None or lo is None or bool(lo):
            t_out.append(None)
            d_out.append(None)
        else:
            t_out.append(ti + round(d * 1e6))
            d_out.append(d)
    rtp = rtp_ssrc is not None
    seq = list(range(n)) if rtp and rtp_seq is None else rtp_seq
    ts = [round(x * 90_000) % 2**32 for x in t] if rtp and rtp_ts is None else rtp_ts
    df = pl.DataFrame(
        {
            "flow_id": [flow_id] * n,
            "proto": [proto] * n,
            "ip_version": [4] * n,
            "src": [src] * n,
            "dst": [dst] * n,
            "sport": [sport] * n,
            "dport": [dport] * n,
            "size_bytes": sizes.tolist(),
            "t_ingress_ns": t_in,
            "t_egress_ns": t_out,
            "delay_ms": d_out,
            "lost": [None] * n if single else [None if x is None else bool(x) for x in lost_v],
            "ecn_ingress": [1] * n,
            "ecn_egress": [
                None if o is None else (3 if ce and ce[i] else 1) for i, o in enumerate(t_out)
            ],
            "ce_marked": [
                None if o is None else bool(ce[i]) if ce else False for i, o in enumerate(t_out)
            ],
            "dscp_ingress": [0] * n,
            "dscp_egress": [None if o is None else 0 for o in t_out],
            "ip_id": list(range(n)),
            "tcp_seq": [None] * n,
            "tcp_ack": [None] * n,
            "tcp_flags": [None] * n,
            "tcp_payload_bytes": [None] * n,
            "rtp_ssrc": [rtp_ssrc] * n,
            "rtp_seq": None if seq is None else [s % 65536 for s in seq],
            "rtp_seq_ext": seq if seq is not None else [None] * n,
            "rtp_ts": ts if ts is not None else [None] * n,
            "rtp_marker": [None if not rtp else False] * n,
            "rtp_pt": [None if not rtp else 96] * n,
        },
        schema=dict(PACKETS),
        strict=False,
    )
    return df


def cbr(
    rate_mbps: float,
    start_s: float,
    end_s: float,
    *,
    size_bytes: int = 1250,
    **kw: object,
) -> pl.DataFrame:
    """Constant bit rate: evenly spaced packets of ``size_bytes`` from start to end."""
    interval = size_bytes * 8 / (rate_mbps * 1e6)
    n = round((end_s - start_s) / interval)
    times = start_s + interval * np.arange(n)
    return flow(times, size_bytes=size_bytes, **kw)  # type: ignore[arg-type]


def table(*flows: pl.DataFrame) -> pl.DataFrame:
    """Flows stacked into one PACKETS table, sorted by ingress time."""
    df = pl.concat(list(flows)).sort("t_ingress_ns")
    return check_schema(df, PACKETS, "synthetic PACKETS")
