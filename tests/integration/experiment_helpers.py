"""Shared by the experiment integration tests: short run files and running the CLI."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "configs" / "runs"
#: Tools an experiment needs on this host.
TOOLS = ("ip", "tc", "ethtool", "iperf3", "tcpdump", "ping", "ss")


def short_run(name: str, **overrides: Any) -> dict[str, Any]:
    """quick-pfifo scaled to an 18 s schedule with a short calibration (~25 s in all)."""
    doc = copy.deepcopy(yaml.safe_load((RUNS / "quick-pfifo.yaml").read_text()))
    doc["name"] = name
    doc["schedule"] = {
        "preset": "custom",
        "duration_s": 18,
        "competitor": [{"t_s": 6, "rate_mbit": "bulk"}, {"t_s": 14, "rate_mbit": "off"}],
        "window_s": [8, 14],
    }
    doc["calibration"] = {"enabled": True, "idle_s": 0.5, "saturation_s": 2, "on_low": "flag"}
    for path, value in overrides.items():
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return doc


def write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cli(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 150.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def inproc(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (no 3 s interpreter start-up), with ``env`` as the
    environment meanwhile; for commands that stop before any traffic."""
    import contextlib
    import io

    from cganalysis.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(list(map(str, args)), code, out.getvalue(), err.getvalue())


def popen(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cganalysis.cli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def logging_path(tmp: Path, tools: tuple[str, ...]) -> dict[str, str]:
    """An environment whose PATH first has wrappers that log every call of ``tools``."""
    import shutil

    bin_dir = tmp / "logbin"
    bin_dir.mkdir()
    log = tmp / "calls.log"
    for tool in tools:
        real = shutil.which(tool)
        if real is None:
            continue
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\nexec "{real}" "$@"\n')
        script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return env


def calls(tmp: Path) -> list[str]:
    log = tmp / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def assert_flows_started(
    meta: dict[str, Any], run_dir: Path, packets: Any, allowed_late_s: float | None = None
) -> None:
    """The CG flow and each competitor step are in the captures, at the ingress tap within
    the tolerance of their scheduled start: the check the metrics flag a run by
    (``cganalysis.metrics.starts``), on this run's matched ``packets`` (PACKETS).
    ``allowed_late_s`` replaces that tolerance where a testbed is known to be slower (the
    metrics still flag such a start)."""
    from cganalysis.metrics.runfacts import facts_from_meta
    from cganalysis.metrics.starts import start_checks
    from cganalysis.metrics.timebase import prepare

    facts = facts_from_meta(meta, run_dir)
    prepared = prepare(packets, facts)
    cg = prepared.packets.filter(prepared.packets["role"] == "cg")
    assert cg.height > 0, "no CG packet in the captures"
    assert cg["t_egress_ns"].drop_nulls().len() > 0, "no CG packet crossed the bottleneck"
    checks = start_checks(prepared, facts.planned_starts)
    assert {c.planned.role for c in checks} == {"cg", "competitor"}, checks
    late = [c.flag() for c in checks if not c.ok]
    if allowed_late_s is None:
        assert not late, late
        return
    too_late = [c.flag() for c in checks if c.late_s is None or c.late_s > allowed_late_s]
    assert not too_late, too_late
