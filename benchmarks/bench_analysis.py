"""The analysis stage of a campaign, job by job, next to reading its captures twice.

    python -m benchmarks.bench_analysis [--campaign tma2024-kernel] [--repeat 3] [--runs N]

For each run of ``data/raw/<campaign>/`` (its captures and meta.json), in fresh processes
as the workflow's jobs run (their outputs into a temporary folder, the repository's own
outputs untouched), the median wall and CPU time (all threads, user + system) of:

- the reference: a process that reads the run's two captures twice with the native
  reader (what `cganalysis packets` must do at least once; the issue's bound for any job);
- `cganalysis packets` (matching, the packet and flow tables);
- `cganalysis metrics --run meta.json --timeseries` (the metrics document and series);
- `cganalysis figures timeseries` (the per-run figure, PNG and PDF);
- and once for the campaign, the workflow's jobs for all its runs (the metrics job, with the
  threads rules/metrics.smk gives it, ``--threads``, and with one; the time-series figures
  job, one process, as rules/figures.smk runs it) and `cganalysis tables tma-table2` over
  its metrics files, next to reading every run's captures twice (the sum over the runs,
  one process after another, each reading its two captures in turn);
- beside them, a process that only starts Python and imports polars and matplotlib: the
  floor of any job written in Python that draws.

Each job's figures are printed next to the reference's measured in the same run, as a
ratio. The metrics job with two threads may use two cores where the reference uses about
one: the CPU column says what each costs in all. The page cache is warm (one untimed run of each
first): the jobs are compared with a warm read, the stricter bound. On a machine shared
with other work, CPU times say more than wall times.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.command_runs import children_cpu_s

REPO = Path(__file__).resolve().parents[1]

_READ_TWICE = """
import sys
from cganalysis import _native
for _ in range(2):
    for path in sys.argv[1:]:
        _native.read_capture(path)
"""
_IMPORTS = "import polars, matplotlib.pyplot, cganalysis.report.artefacts"
# The workflow's jobs per campaign (rules/metrics.smk, rules/figures.smk), as their scripts
# run them: the runs' files, four (metrics, after its threads) or three (figure) a run.
_CAMPAIGN_METRICS = """
import sys
from pathlib import Path
from cganalysis.metrics.io import RunFiles, metrics_of_runs
a = [Path(x) for x in sys.argv[2:]]
runs = [RunFiles(*a[i : i + 4]) for i in range(0, len(a), 4)]
metrics_of_runs(runs, sys.stderr, workers=int(sys.argv[1]))
"""
_CAMPAIGN_FIGURES = """
import sys
from pathlib import Path
from cganalysis.report.artefacts import write_runs_from_files
style, *a = (Path(x) for x in sys.argv[1:])
runs = [(a[i], a[i + 1], a[i + 2]) for i in range(0, len(a), 3)]
write_runs_from_files("timeseries", runs, style, sys.stderr)
"""


def measure(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``argv`` in a fresh process, after one untimed run."""
    walls, cpus = [], []
    for i in range(repeat + 1):
        cpu, _ = children_cpu_s()
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr.decode()[-2000:]}")
        if i:
            walls.append(wall)
            cpus.append(children_cpu_s()[0] - cpu)
    return statistics.median(walls), statistics.median(cpus)


def captures(run: Path) -> tuple[Path, Path]:
    def one(side: str) -> Path:
        found = sorted(run.glob(f"{side}*.pcap")) + sorted(run.glob(f"{side}*.pcapng"))
        if not found:
            raise SystemExit(f"{run}: no {side} capture")
        return found[0]

    return one("ingress"), one("egress")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaign", default="tma2024-kernel")
    ap.add_argument("--root", type=Path, default=REPO, help="the repository (data/raw)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=0, help="only the first N runs (0: all)")
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="the campaign metrics job's threads (2: what rules/metrics.smk declares; it "
        "is also timed with one)",
    )
    args = ap.parse_args()
    raw = args.root / "data" / "raw" / args.campaign
    runs = sorted(p.parent for p in raw.glob("*/meta.json") if not p.parent.name.startswith("_"))
    runs = [r for r in runs if any(r.glob("ingress*.pcap*"))][: args.runs or None]
    if not runs:
        raise SystemExit(f"{raw}: no run with captures (make the campaign first)")
    py, cga = sys.executable, [sys.executable, "-m", "cganalysis.cli"]
    style = args.root / "configs" / "plotting.yaml"
    rows: list[tuple[str, str, float, float, float, float]] = []
    floor = measure([py, "-c", _IMPORTS], args.repeat)
    print(f"{args.campaign}: {len(runs)} runs, {args.repeat} timed runs each (medians)")
    with tempfile.TemporaryDirectory(prefix="cga-bench-analysis-") as tmp:
        out = Path(tmp)
        metrics_files: list[str] = []
        campaign_metrics: list[str] = []
        campaign_figures: list[str] = [str(style)]
        read_twice = [0.0, 0.0]
        for run in runs:
            ingress, egress = captures(run)
            size_mb = (ingress.stat().st_size + egress.stat().st_size) / 1e6
            ref = measure([py, "-c", _READ_TWICE, str(ingress), str(egress)], args.repeat)
            packets, metrics = out / f"{run.name}.packets.parquet", out / f"{run.name}.json"
            series, figure = out / f"{run.name}.ts.parquet", out / f"{run.name}.timeseries"
            jobs = {
                "packets": [*cga, "packets", str(ingress), str(egress), "-o", str(packets)],
                "metrics": [
                    *cga, "metrics", str(packets), "--run", str(run / "meta.json"),
                    "-o", str(metrics), "--timeseries", str(series),
                ],
                "figure": [
                    *cga, "figures", "timeseries", str(series), "--metrics", str(metrics),
                    "--style", str(style), "-o", str(figure),
                ],
            }  # fmt: skip
            print(f"  {run.name} ({size_mb:.0f} MB of captures)", flush=True)
            rows.append((run.name, "read both captures twice", *ref, *ref))
            for job, argv in jobs.items():
                rows.append((run.name, job, *measure(argv, args.repeat), *ref))
            metrics_files.append(str(metrics))
            read_twice = [read_twice[0] + ref[0], read_twice[1] + ref[1]]
            meta = run / "meta.json"
            campaign_metrics += [str(p) for p in (packets, meta, out / f"c.{run.name}.json")]
            campaign_metrics.append(str(out / f"c.{run.name}.ts.parquet"))
            campaign_figures += [str(series), str(metrics), str(out / f"c.{run.name}.timeseries")]
        table = [*cga, "tables", "tma-table2", *metrics_files, "-o", str(out / "table2")]
        tables = measure(table, args.repeat)
        campaign: dict[str, tuple[float, float]] = {}
        for threads in sorted({args.threads, 1}, reverse=True):
            metrics_job = [py, "-c", _CAMPAIGN_METRICS, str(threads), *campaign_metrics]
            label = f"metrics ({threads} thread{'s' if threads > 1 else ''})"
            campaign[label] = measure(metrics_job, args.repeat)
        figures_job = [py, "-c", _CAMPAIGN_FIGURES, *campaign_figures]
        campaign["time-series figures"] = measure(figures_job, args.repeat)
        campaign["tables tma-table2"] = tables
    print()
    print("| run | job | wall (s) | CPU (s) | wall / read twice | CPU / read twice |")
    print("|---|---|--:|--:|--:|--:|")
    for run_id, job, wall, cpu, ref_wall, ref_cpu in rows:
        print(
            f"| {run_id} | {job} | {wall:.2f} | {cpu:.2f} | "
            f"{wall / ref_wall:.1f} | {cpu / ref_cpu:.1f} |"
        )
    per_job: dict[str, list[float]] = {}
    for _, job, wall, _, _, _ in rows:
        per_job.setdefault(job, []).append(wall)
    print()
    print("| per job, over the runs | wall (s), sum | longest |")
    print("|---|--:|--:|")
    for job, walls in per_job.items():
        print(f"| {job} | {sum(walls):.2f} | {max(walls):.2f} |")
    print(f"| tables tma-table2 (once) | {tables[0]:.2f} | {tables[0]:.2f} |")
    print(
        f"\nPython + polars + matplotlib imports alone: {floor[0]:.2f} s wall, {floor[1]:.2f} s CPU"
    )
    print(
        f"\nThe workflow's jobs for the campaign ({len(runs)} runs), next to reading every "
        f"run's captures twice ({read_twice[0]:.2f} s wall, {read_twice[1]:.2f} s CPU; the "
        "packets jobs are one a run, above):\n"
    )
    print("| job | wall (s) | CPU (s) | wall / read twice | CPU / read twice |")
    print("|---|--:|--:|--:|--:|")
    for job, (wall, cpu) in campaign.items():
        print(
            f"| {job} | {wall:.2f} | {cpu:.2f} | "
            f"{wall / read_twice[0]:.2f} | {cpu / read_twice[1]:.2f} |"
        )


if __name__ == "__main__":
    main()
