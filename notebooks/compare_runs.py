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
# # Comparing the runs of a campaign
#
# `cganalysis.open_campaign(DIR)` opens every run of `data/raw/<campaign>/` (what
# `snakemake` made) and compares them: one row per run, one row per run and role, the TMA
# 2024 Table II, and the figures of any single run. Metrics the workflow already wrote
# (`results/metrics/<campaign>/`) are read; the others are computed here.
#
# By default it opens the `tma2024` campaign if it has been run here
# (`sudo .venv/bin/snakemake --cores 4`), else the quick one, else the committed `example`
# campaign (a single run: every table then has one row).

# %%
import polars as pl
from IPython.display import Markdown, display

import cganalysis
import cganalysis.run
from cganalysis.report.explore import metric_heatmap, timeseries_grid
from cganalysis.report.tablefmt import to_markdown

# %%
REPO = cganalysis.run.find_project()
RAW = REPO / "data" / "raw"
CAMPAIGN_DIR = next(
    RAW / name
    for name in ("tma2024", "tma2024-quick", "example")
    if any((RAW / name).glob("*/meta.json"))
)
campaign = cganalysis.open_campaign(CAMPAIGN_DIR, style=REPO / "configs" / "plotting.yaml")
style = campaign.runs[0].style
print(f"{campaign.name}: {len(campaign)} runs")

# %% [markdown]
# ## One row per run
#
# The run's labels (queue discipline, congestion control, repetition, ...), utilisation,
# fairness, and the competing flow's response and recovery times. A run whose metadata
# carries flags (capture drops, a sender that fell behind its pacing schedule) says so in
# `flags`: look at it before trusting its numbers.

# %%
runs = campaign.run_rows()
runs.select(
    [
        c
        for c in ("run_id", "qdisc", "cca", "utilisation_total", "fairness_ratio")
        if c in runs.columns
    ]
)

# %%
pl.DataFrame(
    {"run_id": [r.run_id for r in campaign], "flags": [", ".join(r.flags) for r in campaign]}
)

# %% [markdown]
# ## One row per run and role
#
# Queuing delay, delivered bitrate and loss of the CG flow and of the competing TCP flow,
# over each run's analysis window.

# %%
roles = campaign.role_rows()
roles.select(
    [
        c
        for c in (
            "run_id",
            "role",
            "delay_mean_ms",
            "delay_p95_ms",
            "bitrate_mean_mbps",
            "loss_rate",
        )
        if c in roles.columns
    ]
).sort("run_id", "role")

# %% [markdown]
# ## The TMA 2024 Table II over the campaign
#
# Runs of the same condition are averaged; runs of different conditions are never mixed
# (one table per condition).

# %%
display(Markdown(to_markdown(campaign.tma_table2())))

# %% [markdown]
# ## One metric across the conditions
#
# The CG flow's mean queuing delay by queue discipline (down) and competing CCA (across),
# repetitions averaged (seaborn's annotated heatmap). Any column of `role_rows()` works
# (`"delay_p95_ms"`, `"loss_rate"`, `"bitrate_mean_mbps"`), and `role="competitor"` shows
# the TCP flow.

# %%
metric_heatmap(roles, "delay_mean_ms", style=style, fmt=".1f", label="CG mean queuing delay (ms)")

# %% [markdown]
# ## Every run over time, one panel per condition
#
# Throughput against time of every run (seaborn's objects interface), one panel per queue
# discipline and CCA, repetitions overlaid; `y="delay_mean_ms"` (with
# `label="Queuing delay (ms)"`) shows the queuing delay instead.

# %%
timeseries_grid(campaign.timeseries(), style=style)

# %% [markdown]
# ## Any run's figures
#
# Every run is a `cganalysis.Run`: its packets, time series and figures are one call away.

# %%
first = campaign.runs[0]
first.timeseries_figure()
