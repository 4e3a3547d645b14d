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
# This notebook walks through one run with the `cganalysis` run API: `open_run(DIR)` takes
# a raw run folder (`data/raw/<campaign>/<run_id>/`: the two captures and `meta.json`) and
# gives its per-packet table, flows, metadata, metrics, time series and figures. Inside a
# project, what the workflow already made (`data/processed/...`, `results/metrics/...`) is
# read instead of being recomputed.
#
# By default it opens the committed example run `data/raw/example/htb-pfifo-cubic-r01` (a
# 4 Mbit/s HTB bottleneck with a 30-packet pfifo, an RTP flow on UDP port 30002 and an
# iperf3 Cubic flow from t = 1 s to 4 s). Point `RUN_DIR` at another run to explore it.

# %%
import polars as pl
from IPython.display import Markdown, display

import cganalysis
import cganalysis.run
from cganalysis.report.explore import delay_ecdf_by_flow
from cganalysis.report.tablefmt import to_markdown

# %%
REPO = cganalysis.run.find_project()
RUN_DIR = REPO / "data" / "raw" / "example" / "htb-pfifo-cubic-r01"
STYLE = REPO / "configs" / "plotting.yaml"
run = cganalysis.open_run(RUN_DIR, style=STYLE)
run

# %% [markdown]
# ## What the run was
#
# `meta.json` describes the run: the bottleneck, the schedule, which flow plays which role
# (`cg` the RTP flow, `competitor` the TCP flow), the analysis window. `run.facts` is how the
# metrics read it; `run.flags` lists anything suspect (capture drops, timer stalls, ...).

# %%
run.labels, run.facts.schedule, run.flags

# %% [markdown]
# ## The per-packet table
#
# One row per packet seen where packets enter the bottleneck, with its time there, its time
# at the exit (null if it never left), the queuing delay and whether it was lost.

# %%
run.packets.select("flow_id", "proto", "sport", "dport", "size_bytes", "delay_ms", "lost").head()

# %%
run.flows

# %% [markdown]
# ## Per-packet queuing delay
#
# Each dot is a packet; crosses on the time axis are packets the queue dropped. The dashed
# lines are the competing flow's start and end.

# %%
run.packet_delay_figure()

# %%
run.prepared.packets.group_by("role").agg(
    pl.len().alias("packets"),
    pl.col("delay_ms").mean().alias("delay_mean_ms"),
    pl.col("delay_ms").quantile(0.99).alias("delay_p99_ms"),
    pl.col("lost").sum().alias("lost"),
).sort("role")

# %%
run.delay_cdf_figure()

# %% [markdown]
# ## Queuing delay per flow
#
# The CDF above pools each role's flows. Flow by flow (seaborn's ECDF; a role's colour, its
# further flows lighter), a run where iperf3 opens one TCP connection per rate step, or
# where a stray flow crossed the bottleneck, shows which flow queued and how far.

# %%
delay_ecdf_by_flow(run.prepared.packets, style=run.style)

# %% [markdown]
# ## Throughput, delay and loss over time
#
# Delivered rate per role in bins of the run's `bin_s`, counted when packets leave the
# bottleneck (a bin without a packet is a zero rate): the TMA 2024 time-series figure.

# %%
run.timeseries.group_by("role").agg(
    pl.col("rate_mbps").mean().alias("mean_mbps"),
    pl.col("rate_mbps").max().alias("max_mbps"),
).sort("role")

# %%
run.timeseries_figure()

# %% [markdown]
# ## The run's metrics
#
# What `cganalysis metrics` writes: per role, the delay, bitrate, loss and utilisation
# statistics over the analysis window, and for the run the fairness, response and recovery.

# %%
doc = run.metrics
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
# With one run the table has its queue discipline's column only (one cell filled); a whole
# campaign's table is `cganalysis.open_campaign("data/raw/<campaign>").tma_table2()` (the
# notebook `compare_runs.py`), or `cganalysis tables tma-table2 results/metrics/<campaign>/*.json`.

# %%
campaign = cganalysis.open_campaign(RUN_DIR.parent, runs=[RUN_DIR], style=STYLE)
display(Markdown(to_markdown(campaign.tma_table2())))
