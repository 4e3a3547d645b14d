"""The queue disciplines' one declaration (testbed/spec/qdiscs.json): where each kind runs
decides which data plane may take it, and docs/architecture.md's recipe for a new kernel
discipline names files that exist, at most five."""

from __future__ import annotations

import re
from pathlib import Path

from cganalysis.testbed.spec.qdisc_kinds import (
    ALL_KINDS,
    DECLARED,
    DEFAULTS,
    EMULATOR_ONLY,
    KERNEL_ONLY,
    KINDS,
    RUNS_IN,
)

REPO = Path(__file__).resolve().parents[2]


def _recipe_files() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    recipe = text[text.index("**A queue discipline.**") : text.index("**A metric.**")]
    steps = re.findall(r"^\d+\. `([^`]+)`", recipe, flags=re.MULTILINE)
    return [step.replace("KIND", "pie") for step in steps]


def test_the_recipe_lists_at_most_five_files_and_each_exists() -> None:
    files = _recipe_files()
    assert 0 < len(files) <= 5, files
    missing = [f for f in files if not (REPO / f).is_file()]
    assert not missing, missing


def test_where_a_kind_runs_decides_which_plane_takes_it() -> None:
    assert set(RUNS_IN) == set(DECLARED) and all(RUNS_IN.values())
    assert all(runs <= {"kernel", "emulator"} for runs in RUNS_IN.values())
    assert {k for k, r in RUNS_IN.items() if r == {"emulator"}} == EMULATOR_ONLY == {"sqf", "drr"}
    assert {k for k, r in RUNS_IN.items() if r == {"kernel"}} == KERNEL_ONLY
    assert set(KINDS) == {k for k, r in RUNS_IN.items() if "kernel" in r} | {"htb"}
    assert set(ALL_KINDS) == set(DECLARED) | {"htb"}


def test_every_default_is_a_declared_parameter_of_its_kind() -> None:
    for kind, defaults in DEFAULTS.items():
        if kind != "htb":
            assert set(defaults) <= set(DECLARED[kind]), kind
    # What cga-emu applies when a key is absent (native/emulator/src/config/discipline.rs).
    assert DEFAULTS["fq_codel"]["drop_batch"] == 64 and DEFAULTS["pie"]["ecn"] is False
