"""``cganalysis dataset reproduce`` for real: a short sim run of a campaign, made by the code
of a commit of a repository of its own, published as a dataset's meta and metrics, made
again by that commit's code extracted into another folder (reprocode) and compared: bit
for bit, since the guest sees its code at fixed paths; then the same with the dataset's
record of the ingress capture altered, which must be named as the one difference (the
packets and every metric still agree)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cganalysis.dataset import reproduce
from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

CAMPAIGN = """\
campaign: tiny
repetitions: 1
run:
  name: tiny
  description: a short SCReAM flow against bulk Cubic through DualPI2 on simulated time
  testbed: sim
  schedule:
    preset: custom
    duration_s: 8
    competitor:
      - {t_s: 2, rate_mbit: bulk}
      - {t_s: 6, rate_mbit: "off"}
    window_s: [3, 6]
  bottleneck:
    backend: kernel
    rate_mbit: 12
    shaper: htb
    qdisc: {kind: dualpi2, limit: 1000}
  propagation: {forward_ms: 15, reverse_ms: 15}
  cg: {source: cga-cg, cc: scream, ecn: ect1, rate_mbit: 4, min_mbit: 0.5, max_mbit: 10,
       port: 30002, sport: 30001}
  competitor: {tool: iperf3, cca: cubic}
  calibration: {enabled: false}
factors:
  cca:
    cubic: {competitor: {cca: cubic}}
run_id: "{campaign}-{cca}-r{repetition:02d}"
"""
RUN = "tiny-cubic-r01"


def test_a_published_sim_run_is_made_again_bit_for_bit() -> None:
    need_root()
    need_tool(*TOOLS, "setpriv", "unshare")
    # World-readable (the sim kernel runs as an ordinary user), unlike root's tmp_path.
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        root = Path(folder)
        root.chmod(0o755)
        _check(root)


def _check(root: Path) -> None:
    for part in ("src", "requirements"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", ".gitignore"):
        shutil.copyfile(REPO / name, root / name)
    (root / "configs" / "campaigns").mkdir(parents=True)
    (root / "configs" / "campaigns" / "tiny.yaml").write_text(CAMPAIGN)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tiny"]):
        subprocess.run([*git, *argv], check=True)
    raw = root / "data" / "raw" / "tiny" / RUN
    made = subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", "experiment", "configs/campaigns/tiny.yaml",
         "--run", RUN, "--campaign", "tiny", "-o", str(raw.relative_to(root))],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(root / "src")},
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    dataset = root / "ds"
    (dataset / "meta").mkdir(parents=True)
    (dataset / "metrics").mkdir()
    shutil.copyfile(raw / "meta.json", dataset / "meta" / f"{RUN}.json")
    metrics = reproduce.analyse(raw, root / "analysis")
    (dataset / "metrics" / f"{RUN}.json").write_text(json.dumps(metrics))

    said: list[str] = []
    cache = root / "cache"
    same = reproduce.reproduce_run(root, dataset, RUN, root / "again", said.append, cache)
    assert same.identical, same.to_dict()
    assert {"ingress.pcap", "egress.pcap"} <= set(same.files_same)
    assert same.inputs_differ == []  # nothing the packets depend on differs
    # Made by the commit's code, extracted elsewhere (not root/src, which made the run).
    commit = json.loads((raw / "meta.json").read_text())["controller"]["git"]["commit"]
    assert [p.name for p in cache.iterdir()] == [commit]
    again = json.loads((root / "again" / RUN / "meta.json").read_text())
    assert again["testbed"]["sim"]["identity"]["host_paths"]["source"] == str(
        cache / commit / "src"
    )

    meta = json.loads((dataset / "meta" / f"{RUN}.json").read_text())
    meta["files"]["ingress.pcap"]["sha256"] = "0" * 64
    (dataset / "meta" / f"{RUN}.json").write_text(json.dumps(meta))
    other = reproduce.reproduce_run(root, dataset, RUN, root / "third", said.append, cache)
    assert not other.identical and other.files_differ == ["ingress.pcap"]
    # The raw run's capture is there: the packets are compared, and agree; so do the metrics.
    assert other.first_packet is None
    assert other.metrics_same > 100 and other.metrics_differ == []
    lines = reproduce.report(other)
    assert lines[0] == f"{RUN}:" and any("differ: ingress.pcap" in ln for ln in lines)
