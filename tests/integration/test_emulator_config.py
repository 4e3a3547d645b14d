"""cga-emu refuses bad configurations with exit code 2 and one line naming the key (unknown
discipline, impossible parameters, unreadable or empty traces, missing interfaces), and the
Python helpers turn that into a ConfigError. Nothing here opens a socket: every case fails
before, so it runs without root in the host's namespace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cganalysis.emulator import Emulator, check_config, find_emulator, write_config
from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.config import RunConfig, load_run
from cganalysis.testbed.dataplane.bottleneck import start_emulator
from cganalysis.testbed.rendering import emuconf
from cganalysis.testbed.shared.hosts import NetnsHost
from tests.conftest import REPO, trace
from tests.integration.emu_helpers import need_emulator

TRACE = trace("cga-lte-s2-60s.down")


def base(**a_to_b: Any) -> dict[str, Any]:
    return {"interfaces": {"a": "nosuch0emu", "b": "nosuch1emu"}, "a_to_b": a_to_b or None}


def refused(tmp_path: Path, config: dict[str, Any] | str, *args: str) -> str:
    path = tmp_path / "EMU.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    res = subprocess.run(
        [str(find_emulator()), "--config", str(path), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cga-emu: "), res.stderr
    return lines[0]


@pytest.fixture(autouse=True)
def _emulator() -> None:
    need_emulator()


@pytest.mark.parametrize(
    ("pipeline", "key", "words"),
    [
        ({"qdisc": {"kind": "wfq"}}, "a_to_b.qdisc.kind", "unknown discipline 'wfq'"),
        ({"qdisc": {"kind": "pfifo", "limit": 0}}, "a_to_b.qdisc.limit", "integer in [1"),
        ({"qdisc": {"kind": "pfifo", "limt": 10}}, "a_to_b.qdisc.limt", "unknown key"),
        ({"qdisc": {"kind": "dualpi2", "classic_protection": 150}}, "protection", "[0, 100]"),
        ({"qdisc": {"kind": "dualpi2", "alpha": 0}}, "a_to_b.qdisc.alpha", "gain"),
        ({"qdisc": {"kind": "sfq", "divisor": 1000}}, "a_to_b.qdisc.divisor", "power of two"),
        ({"rate": {"mbit": -5}}, "a_to_b.rate.mbit", "rate in Mbit/s"),
        ({"rate": {"mbit": 5, "trace": "x"}}, "a_to_b.rate", "not both"),
        ({"delay_ms": 5, "jitter_ms": 10}, "a_to_b.jitter_ms", "must not exceed delay_ms"),
        ({"loss": 1.5}, "a_to_b.loss", "probability"),
        (
            {"qdisc": {"kind": "htb", "default": "10",
                       "classes": [{"classid": "10", "rate_mbit": 20, "ceil_mbit": 10}]}},
            "a_to_b.qdisc.classes[0].ceil_mbit",
            "must be >= rate_mbit",
        ),
        (
            {"qdisc": {"kind": "htb", "default": "30",
                       "classes": [{"classid": "10", "rate_mbit": 20}]}},
            "a_to_b.qdisc.default",
            "no class has id 30",
        ),
    ],
)  # fmt: skip
def test_impossible_configs_are_refused(
    tmp_path: Path, pipeline: dict[str, Any], key: str, words: str
) -> None:
    line = refused(tmp_path, base(**pipeline))
    assert key in line and words in line


def test_unreadable_or_empty_traces_are_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, base(rate={"trace": str(tmp_path / "missing.down")}))
    assert "a_to_b.rate.trace" in line and "cannot read trace" in line
    (tmp_path / "empty.down").write_text("\n")
    line = refused(tmp_path, base(rate={"trace": str(tmp_path / "empty.down")}))
    assert "a_to_b.rate.trace" in line and "empty" in line
    (tmp_path / "bad.down").write_text("0\n5\nfast\n")
    line = refused(tmp_path, base(rate={"trace": str(tmp_path / "bad.down")}))
    assert "line 3" in line
    line = refused(tmp_path, base(rate={"trace": str(tmp_path)}))
    assert "a_to_b.rate.trace" in line


def test_bad_json_and_usage(tmp_path: Path) -> None:
    line = refused(tmp_path, '{"interfaces": {"a": "x", "b": "y"},\n "a_to_b": {]}')
    assert "not valid JSON" in line and "line 2" in line
    line = refused(tmp_path, {"interfaces": {"a": "x"}})
    assert "interfaces.b: is required" in line


def test_missing_interface_is_a_config_error(tmp_path: Path) -> None:
    line = refused(tmp_path, base(rate={"mbit": 10}))
    assert "interfaces.a: no interface 'nosuch0emu'" in line


def test_valid_config_and_trace_pass_the_check(tmp_path: Path) -> None:
    cfg = base(
        rate={"trace": str(TRACE), "scale": 2.0},
        qdisc={"kind": "dualpi2", "limit": 1000, "target_ms": 15},
        delay_ms=10,
    )
    check_config(write_config(cfg, tmp_path / "EMU.json"))


def test_python_helpers_raise_config_errors(tmp_path: Path) -> None:
    path = write_config(base(qdisc={"kind": "nosuch"}), tmp_path / "EMU.json")
    with pytest.raises(ConfigError, match=r"a_to_b\.qdisc\.kind"):
        check_config(path)
    with pytest.raises(ConfigError, match=r"a_to_b\.qdisc\.kind"):
        Emulator(path).start()
    path = write_config(base(rate={"mbit": 10}), tmp_path / "EMU2.json")
    with pytest.raises(ConfigError, match=r"interfaces\.a: no interface"):
        Emulator(path).start()


def _every_configured_run() -> dict[str, RunConfig]:
    """Every run file and every run every campaign plans, as the runner gets them."""
    runs = {str(p): load_run(p) for p in sorted((REPO / "configs" / "runs").glob("*.yaml"))}
    for path in sorted((REPO / "configs" / "campaigns").glob("*.yaml")):
        runs.update({f"{path} ({r.run_id})": r.config for r in load_campaign(path).runs})
    return runs


def test_every_configured_run_writes_emulator_files_the_emulator_accepts(tmp_path: Path) -> None:
    """The writer (emuconf, from a run file the run parser accepted) against the reader's
    own check: a key or range the two spell differently fails here, not in a run."""
    written: dict[str, str] = {}
    for where, cfg in _every_configured_run().items():
        b = cfg.bottleneck
        configs = [
            emuconf.bottleneck_config("a0", "b0", b.forward, b.reverse, "/tmp/stats.jsonl", 100.0),
            emuconf.delay_config("a1", "b1", cfg.propagation),
        ]
        for config in configs:
            written.setdefault(json.dumps(config, sort_keys=True), where)
    assert len(written) > 10  # pfifo, htb, sfq, dualpi2, traces, delays: many files
    for i, (text, where) in enumerate(written.items()):
        path = write_config(json.loads(text), tmp_path / f"emu-{i}.json")
        try:
            check_config(path)
        except ConfigError as err:
            raise AssertionError(f"{where}: cga-emu refuses what emuconf wrote: {err}") from err


def test_the_testbed_checks_emulator_files_before_starting_one(tmp_path: Path) -> None:
    """A file the emulator refuses stops the run with one line naming the file and the key,
    before any emulator process is started."""
    host = NetnsHost("router", None, tmp_path)
    config = base(qdisc={"kind": "pfifo", "limit": 0})
    with pytest.raises(ConfigError) as err:
        start_emulator(host, config, tmp_path, "bottleneck")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(str(tmp_path / "emu-bottleneck.json"))
    assert "a_to_b.qdisc.limit" in line
    assert host.procs == []
