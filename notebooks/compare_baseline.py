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
# # A new run or campaign against the baseline dataset
#
# The campaigns behind the README's tables are committed as published datasets
# (`datasets/<campaign>-<YYYY-MM-DD>/`: every run's metrics, metadata, calibration, flows
# and time series; docs/datasets.md). `cganalysis.open_dataset(DIR)` opens one (checking
# every file against its `SHA256SUMS`), and `Dataset.compare(new)` puts a run or campaign
# of yours next to it, cell by cell: the new value, the baseline's, its spread over
# repetitions and whether the new value lies within it. On the command line:
# `cganalysis compare data/raw/<campaign> --baseline datasets/<name>`.
#
# By default this compares, against the kernel baseline, a re-run of the same campaign if
# there is one here (`sudo .venv/bin/snakemake --profile profiles/kernel`), else the
# emulator's TMA 2024 campaign (`tma2024`: the other data plane), else the committed
# `example` run (one HTB / Cubic run of 30 s: one cell, for illustration).

# %%
import matplotlib.pyplot as plt
import polars as pl

import cganalysis
import cganalysis.run
from cganalysis.dataset.compare import format_comparison

# %%
REPO = cganalysis.run.find_project()
baseline = cganalysis.open_dataset(
    REPO / "datasets" / "tma2024-kernel-2026-11-27", style=REPO / "configs" / "plotting.yaml"
)
RAW = REPO / "data" / "raw"
NEW_DIR = next(
    RAW / name
    for name in (baseline.campaign, "tma2024", "example")
    if any((RAW / name).glob("*/meta.json"))
)
new = cganalysis.open_campaign(NEW_DIR, style=REPO / "configs" / "plotting.yaml")
print(baseline, "against", f"{new.name}: {len(new)} runs")

# %% [markdown]
# ## The baseline
#
# Its runs and their labels, and its Table II as the workflow renders it (the README's
# "kernel" rows come from here; a test checks every printed number).

# %%
baseline.run_rows().select("run_id", "qdisc", "cca", "repetition", "utilisation_total")

# %% [markdown]
# ## Cell by cell
#
# One row per condition of the baseline (the labels that vary among its runs) and metric
# of Table II. `verdict` is `within` or `outside` the baseline's spread (its minimum and
# maximum over repetitions); a baseline with one run per condition has no spread, and
# says so: read `diff_pct` then, against the run-to-run spread docs/results.md reports.

# %%
table = baseline.compare(new)
print(format_comparison(table))

# %%
covered = table.filter(pl.col("verdict") != "no new run")
covered.select("metric", "new", "baseline", "baseline_min", "baseline_max", "diff_pct", "verdict")

# %% [markdown]
# ## New against baseline, per metric
#
# Each point is a cell; the bar is the baseline's spread (a point with one baseline
# run). On the diagonal, the new value equals the baseline's mean.

# %%
shown = ["CG Avg Latency (ms)", "CG Avg Bitrate (Mbit/s)", "TCP Avg Latency (ms)"]
fig, axes = plt.subplots(1, len(shown), figsize=(4 * len(shown), 3.6), layout="constrained")
for ax, metric in zip(axes, shown, strict=True):
    cells = covered.filter(pl.col("metric") == metric)
    base = cells.get_column("baseline").to_numpy()
    lo = base - cells.get_column("baseline_min").to_numpy()
    hi = cells.get_column("baseline_max").to_numpy() - base
    ax.errorbar(base, cells.get_column("new").to_numpy(), xerr=[lo, hi], fmt="o")
    top = max([*base, *cells.get_column("new").to_list(), 1e-3]) * 1.1
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8)
    ax.set(title=metric, xlabel="baseline", ylabel="new", xlim=(0, top), ylim=(0, top))
fig

# %% [markdown]
# ## One cell's time series, both sides
#
# The CG flow's delivered rate over time in the baseline's run and in the first new run
# of the same condition (the datasets keep every run's 0.5 s series, the figures' own).

# %%
first = new.runs[0]
keys = [k for k in ("qdisc", "cca") if k in first.labels]
match = baseline.run_rows().filter(
    pl.all_horizontal([pl.col(k) == str(first.labels[k]) for k in keys])
)
fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
for name, series in (
    (f"baseline {match.get_column('run_id')[0]}", baseline.timeseries(match["run_id"][0]))
    if match.height
    else (None, None),
    (f"new {first.run_id}", first.timeseries),
):
    if series is not None:
        cg = series.filter(pl.col("role") == "cg")
        ax.plot(cg.get_column("t_s"), cg.get_column("rate_mbps"), label=name, linewidth=0.8)
ax.set(xlabel="time (s)", ylabel="CG rate (Mbit/s)")
ax.legend()
fig
