"""End to end: the default campaign (TMA 2024) with the quick profile, for real.

`snakemake --profile profiles/quick` in a temporary workspace runs the six
TMA 2024 runs (pfifo / HTB / DualPI2 x Cubic / BBR, cga-cg SCReAM L4S, 50 Mbit/s, 15 ms
each way, schedules scaled to 30 s; ~6 min here), then packets, metrics, figures and
Table II, all of it as an ordinary user (issue 58): the suite runs as root in CI, so
Snakemake runs as ``nobody`` (setpriv) in a workspace that user owns, and every file the
workflow makes is that user's. A deliberately broken extra campaign (a CCA the kernel
lacks) checks that a failed run is reported, leaves nothing in data/raw and does not stop
the others; a second dry run checks that the campaign resumes (nothing left to do).
Assertions are on the shape of the results, not on numbers.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS
from tests.support.nobody import NOBODY, RUNTIME_DIR, as_nobody, nobody_env, nobody_folder
from tests.support.reportcheck import check_report

QUICK = ["snakemake", "--profile", "profiles/quick"]

BROKEN = """\
campaign: broken
base: quick-pfifo.yaml
factors:
  cca:
    vegas: {competitor: {cca: vegas}}
"""


def _workspace(tmp: Path) -> Path:
    tmp.mkdir()
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp / name).symlink_to(REPO / name)
    # A campaign's base is a file beside it (docs/security.md).
    (tmp / "quick-pfifo.yaml").write_bytes((REPO / "configs/runs/quick-pfifo.yaml").read_bytes())
    (tmp / "broken.yaml").write_text(BROKEN)
    (tmp / "with-broken.yaml").write_text(
        "experiments:\n  campaign_files:\n"
        "    [configs/campaigns/tma2024.yaml, configs/campaigns/tma2024-cellular.yaml,"
        " broken.yaml]\n"
    )
    os.chown(tmp, NOBODY, NOBODY)  # what the workflow makes there is nobody's
    return tmp


def _snakemake(work: Path, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """Snakemake as ``nobody``, its home beside the workspace."""
    return subprocess.run(
        as_nobody(*QUICK, *args),
        cwd=work,
        capture_output=True,
        text=True,
        env={**nobody_env(work.parent / "user"), "PYTHONWARNINGS": "ignore"},
        timeout=timeout_s,
        check=False,
    )


def _cg(work: Path, run_id: str) -> dict[str, float]:
    doc = json.loads((work / "results/metrics/tma2024-quick" / f"{run_id}.json").read_text())
    cg: dict[str, float] = doc["roles"]["cg"]
    return cg


def _nobodys_in_tmp() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if p.lstat().st_uid == NOBODY}


def test_quick_tma2024_campaign() -> None:
    need_root()  # to drop to nobody
    need_tool("snakemake", "cganalysis", "cga-cg", "cga-emu", "chromium", "setpriv", *TOOLS)
    with nobody_folder() as top:
        _campaign(top)


def _campaign(top: Path) -> None:
    before = _nobodys_in_tmp()
    work = _workspace(top / "work")
    # The quick profile's configfiles, plus a broken campaign next to the default ones.
    done = _snakemake(
        work,
        "--configfile",
        "configs/config.yaml",
        "profiles/quick/experiments.yaml",
        "with-broken.yaml",
    )
    log = done.stdout + done.stderr
    # keep-going: the broken run fails (here already at its calibration, which checks the
    # CCA), is reported, and the others all finish.
    assert done.returncode != 0, log[-3000:]
    assert "Error in rule calibrate" in log or "Error in rule experiment" in log, log[-3000:]
    # Every file of the campaign, raw runs to figures, is the user's; outside the workspace
    # and its home that user wrote nothing but its runtime folder (locks, state files).
    made = [p for d in ("data", "results", "logs") for p in (work / d).rglob("*")]
    assert made and {p.lstat().st_uid for p in made} == {NOBODY}
    assert _nobodys_in_tmp() - before <= {RUNTIME_DIR.name}, _nobodys_in_tmp() - before
    broken_logs = list((work / "logs").glob("*/broken-quick/*.log"))
    assert broken_logs and any("vegas" in p.read_text() for p in broken_logs)
    # Nothing of the failed run is left in data/raw (runs and calibrations are built aside
    # and renamed into place only when complete; Snakemake removes the failed outputs).
    raw = work / "data/raw"
    assert not [p for p in (raw / "broken-quick").rglob("*") if p.is_file()]

    runs = [f"tma2024-{q}-{c}-r01" for q in ("pfifo", "htb", "dualpi2") for c in ("cubic", "bbr")]
    for run_id in runs:
        meta = json.loads((raw / "tma2024-quick" / run_id / "meta.json").read_text())
        assert meta["campaign"] == "tma2024-quick"
        assert (work / "results/figures/tma2024-quick" / f"{run_id}.timeseries.pdf").stat().st_size
        cg = _cg(work, run_id)
        assert cg["packets"] > 1000 and cg["bitrate_mean_mbps"] > 0.4, (run_id, cg)

    # Shape: one shared drop-tail queue gives the CG flow far more queuing delay than an
    # HTB class of its own or DualPI2's L queue, against either CCA.
    for cca in ("cubic", "bbr"):
        fifo = _cg(work, f"tma2024-pfifo-{cca}-r01")["delay_mean_ms"]
        for q in ("htb", "dualpi2"):
            other = _cg(work, f"tma2024-{q}-{cca}-r01")["delay_mean_ms"]
            assert fifo > 2 * other and fifo > 5, (cca, q, fifo, other)

    # Table II renders with every cell.
    table = work / "results/tables/tma2024-quick/tma_table2"
    rows = list(csv.reader(table.with_suffix(".csv").open()))
    assert all(len(r) == 8 for r in rows), rows
    qdiscs, ccas, body = rows[0][2:], rows[1][2:], rows[2:]
    assert list(zip(qdiscs, ccas, strict=True)) == [
        (q, c) for q in ("Droptail", "HTB", "L4S") for c in ("Cubic", "BBR")
    ]
    # CG and TCP blocks (latency, spread, 4 thresholds, bitrate and quartiles, loss) and
    # the three utilisation rows, every cell filled.
    assert len(body) == 25, body
    assert all(cell.strip() not in ("", "nan", "None", "-") for r in body for cell in r), body
    for ext in (".md", ".tex", ".html"):
        assert table.with_suffix(ext).stat().st_size > 100

    # Table I: the cellular campaign over the generated LTE-like trace (capacity from it).
    table1 = work / "results/tables/tma2024-cellular-quick/tma_table1.csv"
    assert len(list(csv.reader(table1.open()))) > 3
    for run_id in ("tma2024-cellular-cga-cg-none-r01", "tma2024-cellular-cga-cg-scream-r01"):
        meta = json.loads((raw / "tma2024-cellular-quick" / run_id / "meta.json").read_text())
        assert meta["bottleneck_backend"] == "emulator" and meta["capacity_trace"]

    # Resumable: with the broken campaign gone, nothing is left to do.
    again = _snakemake(work, "-n", timeout_s=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr

    # The Snakemake report holds Table II and every run's figure, with captions.
    report = _snakemake(work, "--report", "report.html", timeout_s=300)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (work / "report.html").read_text(errors="replace")
    assert "Table II analogue" in html
    for run_id in runs:
        assert f"{run_id}.timeseries.png" in html
    # ... and a reader sees them: opened in a browser, every entry visited.
    walked = check_report(work / "report.html", work)
    assert sorted(walked) == ["Runs", "TMA 2024"]
    # Tables I and II, each campaign's claims, Table II's cells against the paper's, and
    # Figs. 4 (cellular) and 6-11: 2 + 2 + 1 + 7.
    names = sorted(Path(p).stem for p in walked["TMA 2024"])
    figures = [f"tma_fig{n}" for n in (4, 6, 7, 8, 9, 10, 11)]
    assert names == sorted(
        ["tma_table1", "tma_table2", "tma_claims", "tma_claims", "tma_paper_cells", *figures]
    ), names
