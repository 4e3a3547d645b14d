"""A one-capture overview: what ``cganalysis inspect`` prints."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from cganalysis.capture.model import Capture


@dataclass(frozen=True)
class CaptureOverview:
    facts: dict[str, Any]
    flows: pl.DataFrame  # one row per flow (directional 5-tuple, RTP SSRC), busiest first


def overview(capture: Capture) -> CaptureOverview:
    p = capture.packets
    t = p["t_ns"].drop_nulls()
    duration_s = (int(t.max()) - int(t.min())) / 1e9 if t.len() > 1 else 0.0  # type: ignore[arg-type]
    info = capture.info
    facts: dict[str, Any] = {
        "file": str(info.path),
        "format": info.format,
        "link_types": sorted({i.link_type_name for i in info.interfaces}),
        "interfaces": len(info.interfaces),
        "timestamps": "ns" if info.nanosecond else ("us" if info.nanosecond is False else None),
        "packets": p.height,
        "ip_packets": int(p["ip_version"].is_not_null().sum()),
        "non_ip_packets": int(p["ip_version"].is_null().sum()),
        "tcp_packets": int((p["proto"] == 6).sum()),
        "udp_packets": int((p["proto"] == 17).sum()),
        "other_ip_packets": int((~p["proto"].is_in([6, 17])).sum()),
        "truncated_packets": int(p["truncated"].sum()),
        "duration_s": duration_s,
        "capture_drops": info.capture_drops,
        "warnings": list(info.warnings),
        "notes": info.quirks.notes(),
        "quirks": asdict(info.quirks),
    }
    ip = p.filter(pl.col("ip_version").is_not_null())
    flows = (
        ip.with_columns(rtp_ssrc=pl.when(pl.col("is_rtp")).then(pl.col("rtp_ssrc")))
        .group_by("proto", "src", "sport", "dst", "dport", "rtp_ssrc")
        .agg(
            packets=pl.len(),
            bytes=pl.col("size_bytes").cast(pl.UInt64).sum(),
            t_first_ns=pl.col("t_ns").min(),
            t_last_ns=pl.col("t_ns").max(),
        )
        .with_columns(duration_s=(pl.col("t_last_ns") - pl.col("t_first_ns")) / 1e9)
        .with_columns(
            rate_mbps=pl.when(pl.col("duration_s") > 0).then(
                pl.col("bytes") * 8 / pl.col("duration_s") / 1e6
            )
        )
        .sort("bytes", descending=True)
        .drop("t_first_ns", "t_last_ns")
    )
    return CaptureOverview(facts=facts, flows=flows)
