"""The registry of testbed types is what runs consult: a run file's `testbed:` key, the
testbed files, the lock, the host that decides and the testbed built in a vm guest."""

from __future__ import annotations

from pathlib import Path

import pytest

from cganalysis.errors import ConfigError

# Not `TestbedRef`: pytest would take a class named Test... for tests.
from cganalysis.experiment.config import TestbedRef as Ref
from cganalysis.experiment.config import parse_run, parse_testbed_ref
from cganalysis.experiment.plan import guest_host_side
from cganalysis.testbed.bedfile import BACKENDS, load_testbed_file
from cganalysis.testbed.spec.validate import Section
from cganalysis.testbed.types import TESTBED_TYPES, built_here
from cganalysis.testbed.vm.config import GUEST_ENV
from tests.conftest import REPO


def test_every_committed_testbed_file_is_read_by_its_type() -> None:
    assert tuple(TESTBED_TYPES) == BACKENDS
    kinds = {load_testbed_file(p).backend for p in sorted((REPO / "configs/testbeds").glob("*"))}
    assert kinds == set(TESTBED_TYPES)


def test_a_bare_name_is_a_testbed_only_for_the_types_that_need_no_file(tmp_path: Path) -> None:
    for kind, t in TESTBED_TYPES.items():
        sec = Section({"testbed": kind}, "r.yaml")
        if t.bare:
            assert parse_testbed_ref(sec, tmp_path) == Ref(kind)
        else:
            with pytest.raises(ConfigError, match=rf"{kind}: no such testbed file"):
                parse_testbed_ref(sec, tmp_path)


def test_the_testbeds_of_this_machine_share_its_lock() -> None:
    assert Ref("uml").lock_name() == Ref("netns").lock_name() == "netns"
    assert Ref("netns", name="second").lock_name() == "netns-second"
    path = REPO / "configs/testbeds/lab-example.yaml"
    assert Ref("ssh", path).lock_name().startswith("ssh-")
    assert Ref("vm").lock_name() == "vm"


def test_inside_its_guest_a_vm_run_builds_the_netns_testbed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = {
        "name": "r",
        "testbed": "vm",
        "schedule": {"preset": "custom", "duration_s": 60, "competitor": []},
        "bottleneck": {"rate_mbit": 50, "qdisc": {"kind": "pfifo", "limit": 250}},
    }
    cfg = parse_run(run, "r.yaml", tmp_path)
    monkeypatch.delenv(GUEST_ENV, raising=False)
    assert built_here("vm").name == "vm" and guest_host_side(cfg)
    monkeypatch.setenv(GUEST_ENV, "{}")
    assert built_here("vm").name == "netns" and not guest_host_side(cfg)
    assert built_here("uml").name == "uml"


def test_every_type_run_in_a_guest_has_a_hand_over_and_only_those() -> None:
    from cganalysis.experiment.runner import HAND_OVER

    in_guest = {t.name for t in TESTBED_TYPES.values() if t.guest_builds is not None}
    assert set(HAND_OVER) == in_guest == {"vm", "sim"}


def test_a_guest_job_round_trips_and_its_failures_raise_as_a_local_run_would(
    tmp_path: Path,
) -> None:
    from cganalysis.experiment import handover
    from cganalysis.experiment.config import load_run
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.testbed.shared.hosts import TestbedError

    cfg = load_run(REPO / "configs" / "runs" / "quick-sim-dualpi2.yaml")
    said: list[str] = []
    opts = RunOptions(run_id="r", max_duration_s=3.0, progress=lambda m: None)
    handover.write_job(tmp_path, handover.GuestJob("experiment", cfg, opts))
    job = handover.read_job(tmp_path, said.append)
    assert job.cfg == cfg and job.mode == "experiment" and job.options.max_duration_s == 3.0
    job.options.progress("hello")
    assert said == ["hello"]
    handover.raise_for({"ok": True}, "sim")
    with pytest.raises(ConfigError, match=r"in the sim guest: bad key \(x\)"):
        handover.raise_for({"ok": False, "kind": "config", "error": "bad key"}, "sim", " (x)")
    with pytest.raises(TestbedError, match="in the vm guest: gone"):
        handover.raise_for({"ok": False, "kind": "testbed", "error": "gone"}, "vm")
