"""A trace-driven bottleneck with the real ``cga-emu``: the rtp-cbr stand-in offers more than
a cellular trace lets through, so the delivered rate must follow the trace second by second,
and meta.json must describe the trace the way the metrics read it (docs/metrics.md 3.8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool, trace
from tests.integration.experiment_helpers import TOOLS, cli, namespaces, short_run, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

TRACE = trace("cga-lte-s1-60s.down")
SCALE = 0.5  # about 10 Mbit/s on average, 2-16 Mbit/s per second (the project's LTE model)
OFFERED_MBIT = 20.0


def test_trace_link_follows_the_trace(tmp_path: Path) -> None:
    need_root()
    need_tool(*TOOLS, "cga-emu")
    doc = short_run(
        "test-trace",
        bottleneck={
            "trace": TRACE.name,  # on the search path ($CGA_TRACES); no absolute paths
            "trace_scale": SCALE,
            # At most ~1 s of queue in the trace's fades: the matcher takes a packet later
            # than 2 s for lost (packets.max_delay_ms), so a deeper queue loses its tail.
            "qdisc": {"kind": "pfifo", "limit": 100},
        },
        **{
            "schedule": {"preset": "custom", "duration_s": 18, "competitor": []},
            "cg.source": "rtp-cbr",
            "cg.cc": "none",
            "cg.rate_mbit": OFFERED_MBIT,
            "calibration.enabled": True,  # skipped with a note: the capacity varies
        },
    )
    out = tmp_path / "run"
    res = cli("experiment", write(doc, tmp_path / "run.yaml"), "-o", out)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "calibration skipped" in res.stdout + res.stderr
    meta = json.loads((out / "meta.json").read_text())
    # Only this run's namespaces (its tag): other developers' runs come and go meanwhile.
    tag = meta["testbed"]["tag"]
    assert not {n for n in namespaces() if tag in n}, "the run left namespaces behind"

    assert meta["bottleneck_backend"] == "emulator"
    assert "trace" in meta["bottleneck_backend_reason"]
    assert meta["capacity_trace"] == str(TRACE.resolve())
    assert meta["capacity_trace_scale"] == SCALE
    assert "capacity_measured_mbps" not in meta and "capacity_mbps" not in meta
    # The emulator starts the trace when it starts, before the traffic's t0.
    assert -30.0 < meta["capacity_trace_offset_s"] < 0.0
    emu = json.loads((out / "emu-bottleneck.json").read_text())
    assert emu["a_to_b"]["rate"] == {"trace": str(TRACE.resolve()), "scale": SCALE}

    # Delivered bytes per second (egress capture) against the trace's per second.
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    delivered = m.packets.filter(pl.col("lost").not_() & (pl.col("proto") == 17))
    t0, offset_s = meta["start_ns"], meta["capacity_trace_offset_s"]
    per_s = (
        delivered.with_columns(s=((pl.col("t_egress_ns") - t0) / 1e9).floor().cast(pl.Int64))
        .group_by("s")
        .agg(pl.col("size_bytes").sum())
    )
    got = dict(zip(per_s["s"].to_list(), per_s["size_bytes"].to_list(), strict=True))
    times_ms = np.array([int(x) for x in TRACE.read_text().split()], dtype=float)
    seconds = range(2, 17)  # the stream is up and the queue backlogged
    cap = [
        np.count_nonzero(
            ((times_ms / 1000 + offset_s) >= s) & ((times_ms / 1000 + offset_s) < s + 1)
        )
        * 1504
        * SCALE
        for s in seconds
    ]
    sent = [got.get(s, 0) for s in seconds]
    ratio = sum(sent) / sum(cap)
    corr = float(np.corrcoef(sent, cap)[0, 1])
    print(f"delivered/trace bytes {ratio:.3f}, per-second correlation {corr:.3f}")
    assert 0.75 < ratio < 1.15, (ratio, sent, cap)
    assert corr > 0.7, (corr, sent, cap)
