"""One declaration of the queue disciplines' parameter ranges
(src/cganalysis/testbed/spec/qdiscs.json): run files (testbed/spec/qdisc.py) and cga-emu
(native/emulator/src/ranges.rs) accept and refuse exactly the same values, checked for
every parameter at its bounds and just outside them."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cganalysis.emulator.binary import find_emulator
from cganalysis.errors import ConfigError
from cganalysis.testbed.spec.qdisc import parse_qdisc
from cganalysis.testbed.spec.qdisc_kinds import DECLARED, LEAF_PARAMS, RUNS_IN
from cganalysis.testbed.spec.validate import Section

pytestmark = pytest.mark.tools


def _cases() -> list[tuple[str, str, Any, bool]]:
    """(kind, parameter, value, accepted) at and just outside every declared bound."""
    cases: list[tuple[str, str, Any, bool]] = []
    for kind, params in DECLARED.items():
        if "emulator" not in RUNS_IN[kind]:
            continue  # a kernel-only discipline: cga-emu refuses it by design
        for name, d in params.items():
            # Booleans have no range; max_rtt_ms / typical_rtt_ms derive target, tupdate,
            # alpha and beta (checked in their own ranges), so their edges test those.
            if d["type"] == "bool" or name in ("max_rtt_ms", "typical_rtt_ms"):
                continue
            lo, hi = float(d["min"]), d.get("max")
            step = 1 if d["type"] == "int" else max(lo * 1e-3, 1e-6)
            cases += [(kind, name, _num(lo, d), True), (kind, name, _num(lo - step, d), False)]
            if hi is not None and math.isfinite(hi):
                cases += [(kind, name, _num(hi, d), True), (kind, name, _num(hi + 1, d), False)]
    return cases


def _num(x: float, d: dict[str, Any]) -> int | float:
    return int(x) if d["type"] == "int" else x


def _python_accepts(kind: str, name: str, value: Any) -> bool:
    try:
        parse_qdisc(
            Section({"kind": kind, name: value}, "run.yaml", "bottleneck.qdisc"), 10.0, None
        )
    except ConfigError as e:
        assert f"bottleneck.qdisc.{name}" in str(e), str(e)  # the error names the key
        return False
    return True


def _emulator_accepts(emu: str, tmp: Path, kind: str, name: str, value: Any) -> bool:
    doc = {"kind": kind, name: value}
    cfg = {
        "interfaces": {"a": "rtr0", "b": "rtr1"},
        "a_to_b": {"rate": {"mbit": 10}, "qdisc": doc},
    }
    path = tmp / "emu.json"
    path.write_text(json.dumps(cfg))
    done = subprocess.run(
        [emu, "--config", str(path), "--check"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        assert name in done.stderr, done.stderr
    return done.returncode == 0


def test_python_and_the_emulator_agree_on_every_declared_range(tmp_path: Path) -> None:
    emu = str(find_emulator())
    assert set(DECLARED) == set(LEAF_PARAMS)
    for kind, params in DECLARED.items():
        assert set(params) == set(LEAF_PARAMS[kind]), kind
    disagree = []
    for kind, name, value, accepted in _cases():
        py = _python_accepts(kind, name, value)
        rust = _emulator_accepts(emu, tmp_path, kind, name, value)
        if not (py == rust == accepted):
            disagree.append(
                f"{kind}.{name}={value!r}: python {py}, cga-emu {rust}, declared {accepted}"
            )
    assert not disagree, "\n".join(disagree)
