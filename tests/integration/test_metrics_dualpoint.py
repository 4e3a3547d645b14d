"""Metrics and the exploration notebook on the committed real dual-point capture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cganalysis.matching import MatchedPackets, match_files
from cganalysis.metrics.io import read_run_facts
from tests.conftest import need_tool

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("explore_run", "compare_runs", "compare_baseline")


def _matched(dualpoint_dir: Path) -> MatchedPackets:
    return match_files(dualpoint_dir / "ingress.pcap", dualpoint_dir / "egress.pcap")


def test_metrics_agree_with_the_capture(dualpoint_dir: Path) -> None:
    from cganalysis.metrics import (
        Step,
        Window,
        choose_capacity,
        facts_from_values,
        parse_rules,
        run_metrics,
    )
    from cganalysis.metrics.docschema import validate_metrics

    meta = json.loads((dualpoint_dir / "meta.json").read_text())
    qdisc = json.loads((dualpoint_dir / "qdisc.json").read_text())
    pfifo_drops = next(q["drops"] for q in qdisc if q["kind"] == "pfifo")
    m = _matched(dualpoint_dir)
    facts = facts_from_values(
        capacity=choose_capacity(4.0, None, None),
        window=Window(0, None),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp:5201"]),
        bin_s=0.25,
        t0_ns=meta["traffic_start_ns"],
        schedule=[Step(1.0, None), Step(4.0, 0.0)],
    )
    doc = run_metrics(m.packets, facts)
    # The run's own metadata describes the same run.
    from_meta = run_metrics(m.packets, read_run_facts(dualpoint_dir / "meta.json"))
    assert from_meta["roles"]["cg"] == doc["roles"]["cg"]
    validate_metrics(doc)
    cg, tcp = doc["roles"]["cg"], doc["roles"]["competitor"]
    # Every drop of the pfifo is a loss of one of the two roles (README: 12 RTP, 11 TCP).
    assert cg["packets_lost"] + tcp["packets_lost"] == pfifo_drops
    # 1 Mbit/s of RTP, 60 frames of 2 packets per second; TCP fills the rest of 4 Mbit/s.
    assert cg["bitrate_mean_mbps"] == pytest.approx(1.0, rel=0.1)
    assert 0.6 < doc["utilisation_total"] <= 1.0
    # A 30-packet pfifo at 4 Mbit/s holds at most ~91 ms.
    assert 0 <= cg["delay_max_ms"] < 100 and tcp["pct_delay_over_100ms"] == 0.0
    assert doc["fairness_ratio"] < 0  # TCP takes most of the link
    assert doc["recovery_status"] == "reached"
    # 60 frames of 2 packets per second; each of the 12 RTP drops spoils a frame (at least
    # 6 frames if drops come in pairs). The window (whole bins) may cut one frame in two.
    frames = cg["frames_delivered"] + cg["frames_incomplete"]
    assert abs(frames - cg["packets"] / 2) <= 1
    assert 6 <= cg["frames_incomplete"] <= cg["packets_lost"]
    start_s, end_s = doc["inputs"]["window_effective_s"]
    assert cg["frame_rate_fps"] == pytest.approx(cg["frames_delivered"] / (end_s - start_s))
    assert 50 < cg["frame_rate_fps"] < 60
    assert tcp["frame_rate_fps"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_exploration_notebooks_run(tmp_path: Path, name: str) -> None:
    need_tool("jupytext")
    ipynb = tmp_path / f"{name}.ipynb"
    source = REPO / "notebooks" / f"{name}.py"
    subprocess.run(["jupytext", "--to", "ipynb", str(source), "-o", str(ipynb)], check=True)
    env = {**os.environ, "CGANALYSIS_REPO": str(REPO), "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbmake", str(ipynb), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
