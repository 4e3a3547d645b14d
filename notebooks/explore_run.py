# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exploring one run: per-packet delay, flow rates, metrics, tables
#
# This notebook walks through one dual-point capture with the `cganalysis` API only: match
# the ingress and egress captures into the per-packet table, look at each packet's queuing
# delay and at the flows' rates, compute the run's metrics (docs/metrics.md) and render the
# TMA 2024 Table II layout and time-series figure for it.
#
# By default it reads the committed fixture `tests/fixtures/dualpoint` (a 4 Mbit/s HTB
# bottleneck with a 30-packet pfifo, an RTP flow on UDP port 30002 and an iperf3 Cubic flow
# from t = 1 s to 4 s). Point the parameters below at another run to explore it.

# %%
import json
import os
from pathlib import Path

import polars as pl
from IPython.display import Markdown, display

from cganalysis.matching import match_files
from cganalysis.metrics import (
    ResponseSettings,
    Step,
    Window,
    choose_capacity,
    parse_rules,
    prepare,
    run_metrics,
    spec_from_values,
)
from cganalysis.metrics.bitrate import bitrate_series
from cganalysis.metrics.compute import link_capacity
from cganalysis.metrics.delay import delay_cdf
from cganalysis.metrics.io import read_packets, read_run_spec
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.metrics.timeseries import run_timeseries
from cganalysis.report.figures import delay_cdf_figure, packet_delay_figure, timeseries_figure
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import to_markdown
from cganalysis.report.tables import tma_table2

# %% [markdown]
# ## Parameters
#
# `PACKETS`: a packets parquet written by `cganalysis packets` (then the captures are not
# read); `META`: a run's `meta.json` (keys in docs/metrics.md). Left as None, the fixture's
# captures are matched here and the run is described from the fixture's own metadata.


# %%
def repo_root() -> Path:
    """The checkout this notebook belongs to (nbmake may run it from a copy elsewhere)."""
    if "CGANALYSIS_REPO" in os.environ:
        return Path(os.environ["CGANALYSIS_REPO"])
    here = Path.cwd().resolve()
    return next(p for p in (here, *here.parents) if (p / "pyproject.toml").is_file())


REPO = repo_root()
RUN_DIR = REPO / "tests" / "fixtures" / "dualpoint"
PACKETS: Path | None = None
META: Path | None = None
BIN_S = 0.25  # the fixture lasts 4.5 s: finer than the 0.5 s default

# %% [markdown]
# ## The per-packet table
#
# One row per packet seen where packets enter the bottleneck, with its time there, its time
# at the exit (null if it never left), the queuing delay and whether it was lost.

# %%
if PACKETS is None:
    matched = match_files(RUN_DIR / "ingress.pcap", RUN_DIR / "egress.pcap")
    packets, flows = matched.packets, matched.flows
else:
    packets, flows = read_packets(PACKETS), None
packets.select("flow_id", "proto", "sport", "dport", "size_bytes", "delay_ms", "lost").head()

# %%
flows

# %% [markdown]
# ## What the run was
#
# Roles name the flows: `cg` the RTP flow, `competitor` the TCP flow. The fixture's metadata
# gives the bottleneck rate, the ports and when iperf3 ran; a testbed run's `meta.json`
# gives all of it directly.

# %%
if META is not None:
    spec = read_run_spec(META)
else:
    fixture = json.loads((RUN_DIR / "meta.json").read_text())
    tcp = fixture["tcp"]
    spec = spec_from_values(
        capacity=choose_capacity(
            float(fixture["bottleneck"]["rate"].removesuffix("mbit")), None, None
        ),
        window=Window(0.0, None),
        rules=parse_rules([f"cg=udp:{fixture['rtp']['port']}", f"competitor=tcp:{tcp['port']}"]),
        bin_s=BIN_S,
        t0_ns=fixture["traffic_start_ns"],
        schedule=[Step(tcp["start_s"], None), Step(tcp["start_s"] + tcp["duration_s"], 0.0)],
        # Xu & Claypool use 60 s before and after; this run is seconds long.
        response=ResponseSettings(before_s=1.0, settle_s=1.0),
        labels={"run_id": "dualpoint-fixture", "qdisc": "pfifo", "cca": tcp["cc"]},
    )
spec

# %% [markdown]
# ## Per-packet queuing delay
#
# Each dot is a packet; crosses on the time axis are packets the queue dropped. The dashed
# lines are the competing flow's start and end.

# %%
style = load_style()
prepared = prepare(packets, spec)
packet_delay_figure(prepared.packets, style=style, schedule=spec.schedule)

# %%
prepared.packets.group_by("role").agg(
    pl.len().alias("packets"),
    pl.col("delay_ms").mean().alias("delay_mean_ms"),
    pl.col("delay_ms").quantile(0.99).alias("delay_p99_ms"),
    pl.col("lost").sum().alias("lost"),
).sort("role")

# %%
delay_cdf_figure(
    {
        r: delay_cdf(prepared.packets.filter(pl.col("role") == r).get_column("delay_ms"))
        for r in ("cg", "competitor")
    },
    style=style,
)

# %% [markdown]
# ## Flow rates
#
# Delivered rate per flow in bins of `BIN_S` seconds, counted when packets leave the
# bottleneck (a bin without a packet is a zero rate).

# %%
per_flow = bitrate_series(
    prepared.packets, start_s=0.0, end_s=prepared.data_end_s, bin_s=spec.bin_s, key="flow_id"
)
per_flow.group_by("flow_id").agg(
    pl.col("rate_mbps").mean().alias("mean_mbps"), pl.col("rate_mbps").max().alias("max_mbps")
).sort("flow_id")

# %%
series = run_timeseries(prepared, bin_s=spec.bin_s, capacity=link_capacity(spec, None))
timeseries_figure(series, style=style, schedule=spec.schedule)

# %% [markdown]
# ## The run's metrics
#
# What `cganalysis metrics` writes: per role, the delay, bitrate, loss and utilisation
# statistics over the analysis window, and for the run the fairness, response and recovery.

# %%
doc = run_metrics(packets, spec)
pl.DataFrame(
    [
        {"role": role, **{k: v for k, v in values.items() if k != "loss_source"}}
        for role, values in doc["roles"].items()
    ]
).select(
    "role",
    "packets",
    "delay_mean_ms",
    "delay_std_ms",
    "pct_delay_over_50ms",
    "bitrate_mean_mbps",
    "loss_rate",
    "utilisation",
)

# %%
{
    k: doc[k]
    for k in (
        "utilisation_total",
        "fairness_ratio",
        "jain_index",
        "response_time_s",
        "response_status",
        "recovery_time_s",
        "recovery_status",
    )
}

# %% [markdown]
# ## The TMA 2024 Table II layout for this run
#
# With one run the table has its queue discipline's column only (one cell filled); the
# campaign's table comes from `cganalysis tables tma-table2 results/metrics/<campaign>/*.json`.

# %%
table = tma_table2(role_rows([doc]), run_rows([doc]), style=style, ccas=("cubic", "bbr"))
display(Markdown(to_markdown(table)))
