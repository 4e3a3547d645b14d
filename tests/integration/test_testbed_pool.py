"""A testbed pool: two runs started together take the two testbeds of one pool and run
side by side (functional check only: two testbeds on one machine share its cores, which is
why timing-sensitive campaigns want one testbed per machine; docs/testbed.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, namespaces, popen, short_run, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


def test_two_runs_take_the_two_testbeds_of_a_pool_side_by_side(tmp_path: Path) -> None:
    need_root()
    need_tool(*TOOLS)
    # Two testbeds on this machine: network namespaces are private to a testbed, so two
    # named netns testbeds can both be up (a pool of machines or VMs works the same way).
    pool = [
        write({"backend": "netns", "name": f"bed-{x}"}, tmp_path / f"bed-{x}.yaml")
        for x in ("a", "b")
    ]
    run = short_run("pool")
    run["calibration"] = {"enabled": False}
    cfg = write(run, tmp_path / "run.yaml")
    before = namespaces()
    env = {**os.environ, "CGA_LOCK_DIR": str(tmp_path / "locks")}
    flags = [arg for bed in pool for arg in ("--testbed", bed)]
    procs = [popen("experiment", cfg, "-o", tmp_path / f"r{i}", *flags, env=env) for i in (1, 2)]
    results = [(p.wait(timeout=180), p.communicate()[1]) for p in procs]
    for code, err in results:
        assert code == 0, err[-2000:]
    metas = [json.loads((tmp_path / f"r{i}" / "meta.json").read_text()) for i in (1, 2)]
    # Each run names the testbed it ran on, and the pool it was given.
    names = sorted(m["testbed"]["name"] for m in metas)
    assert names == ["bed-a", "bed-b"]
    for m in metas:
        assert m["testbed"]["pool"] == ["bed-a", "bed-b"]
        assert Path(m["testbed"]["file"]).name == f"{m['testbed']['name']}.yaml"
    # Side by side: the traffic of one ran while the other's did.
    spans = [(m["times"]["start_ns"], m["times"]["end_ns"]) for m in metas]
    assert max(s for s, _ in spans) < min(e for _, e in spans), "the runs did not overlap"
    assert namespaces() == before, "a testbed was left up"
    # Both testbeds are free again: a third run takes the first one at once.
    third = popen("experiment", cfg, "-o", tmp_path / "r3", *flags, env=env)
    code, (_, err) = third.wait(timeout=180), third.communicate()
    assert code == 0, err[-2000:]
    assert "waiting for testbed" not in err
    meta = json.loads((tmp_path / "r3" / "meta.json").read_text())
    assert meta["testbed"]["name"] == "bed-a"
