"""Flow starts: a CG flow or a competitor step whose first packet at the ingress tap trails
its scheduled start, or never comes, flags the run (metrics/starts.py), on synthetic input."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cganalysis.errors import ConfigError
from cganalysis.experiment.schedule import Schedule, Step, tma2024, xu2022
from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.rows import run_rows
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_meta, facts_from_values
from cganalysis.metrics.starts import (
    START_TOLERANCE_S,
    PlannedStart,
    check_starts,
    planned_starts,
    start_flags,
)
from cganalysis.report.tables import flagged_note
from tests.unit.synthetic import T0_NS, cbr, table

CG = PlannedStart("cg", "CG flow", 0.0)


def _one(planned: PlannedStart, starts: dict[str, list[float]]) -> str | None:
    (check,) = check_starts([planned], starts)
    return check.flag()


def test_a_flow_on_time_is_not_flagged() -> None:
    (check,) = check_starts([CG], {"cg": [0.06]})
    assert check.ok and check.flag() is None
    assert check.late_s == pytest.approx(0.06)


def test_a_late_cg_flow_is_one_sentence_with_its_delay_and_tolerance() -> None:
    flag = _one(CG, {"cg": [31.2]})
    assert flag == (
        "CG flow: first packet at the ingress tap 31.2 s after its scheduled start at 0.0 s "
        f"(allowed: {START_TOLERANCE_S:g} s)"
    )


def test_no_cg_packet_is_flagged() -> None:
    assert _one(CG, {"competitor": [1.0]}) == (
        "CG flow: no packet at the ingress tap from its scheduled start at 0.0 s on"
    )


def test_the_tolerance_is_the_boundary() -> None:
    assert _one(CG, {"cg": [START_TOLERANCE_S]}) is None
    assert _one(CG, {"cg": [START_TOLERANCE_S + 0.01]}) is not None
    # A little early (two hosts' clocks) is on time; a flow long before is another one.
    assert _one(PlannedStart("cg", "CG flow", 10.0), {"cg": [9.5]}) is None
    assert _one(PlannedStart("cg", "CG flow", 10.0), {"cg": [3.0]}) is not None


def test_each_competitor_step_is_its_own_connection() -> None:
    step1 = PlannedStart("competitor", "step 1", 60.0, 120.0)
    step2 = PlannedStart("competitor", "step 2", 120.0, 180.0)
    # Step 1's connection on time, step 2's 5 s late: step 1's does not count for step 2.
    checks = check_starts([step1, step2], {"competitor": [60.01, 60.02, 125.0]})
    assert [c.ok for c in checks] == [True, False]
    assert checks[1].late_s == pytest.approx(5.0)
    # Step 2's connection never came before step 3's time: absent, not on time.
    flag = _one(step2, {"competitor": [60.01, 180.5]})
    assert flag == (
        "step 2: no packet at the ingress tap between its scheduled start at 120.0 s and "
        "the next step at 180.0 s"
    )


def test_planned_starts_follow_the_runners_phases() -> None:
    for sched in (tma2024(), xu2022(), tma2024().scaled(30 / 360)):
        planned = planned_starts(json.loads(json.dumps(sched.to_dict())))
        comp = [p for p in planned if p.role == "competitor"]
        assert [p.t_s for p in comp] == pytest.approx([ph.start_s for ph in sched.phases()])
        assert planned[0] == PlannedStart("cg", "CG flow", 0.0, None, "its scheduled stop")
    tma = planned_starts(tma2024().to_dict())
    assert tma[2].name == "competing TCP flow, step 2 of 5 (20 Mbit/s)"
    assert (tma[2].t_s, tma[2].until_s) == (120.0, 180.0)
    assert tma[5].until_s is None  # the last step runs to the end
    xu = planned_starts(xu2022().to_dict())
    assert [(p.name, p.t_s, p.until_s) for p in xu[1:]] == [
        ("competing TCP flow, step 1 of 1 (bulk)", 180.0, 360.0)
    ]


def test_a_stopped_cg_flow_ends_its_span() -> None:
    sched = dataclasses.replace(tma2024(), cg_start_s=5.0, cg_stop_s=20.0, steps=(Step(1, 0.0),))
    (cg,) = planned_starts(sched.to_dict())
    assert (cg.t_s, cg.until_s) == (5.0, 20.0)
    assert "and its scheduled stop at 20.0 s" in str(_one(cg, {"cg": [21.0]}))


RULES = parse_rules(["cg=udp:30002", "competitor=tcp"])


def _doc(cg_from_s: float | None, **kw: Any) -> dict[str, Any]:
    """CG 2 Mbit/s from ``cg_from_s`` (None: no CG packet), TCP from 10 s, 40-s run."""
    flows = [cbr(5, 10.0, 40.0, flow_id=1, proto=6, sport=50000, dport=5201)]
    if cg_from_s is not None:
        flows.append(cbr(2, cg_from_s, 40.0, flow_id=0, sport=30001, dport=30002))
    sched = Schedule("custom", 40.0, (Step(10.0, None),))
    facts = facts_from_values(
        capacity=choose_capacity(10.0, None, None),
        window=Window(0, 40),
        rules=RULES,
        t0_ns=kw.pop("t0_ns", T0_NS),
    )
    facts = dataclasses.replace(facts, planned_starts=planned_starts(sched.to_dict()), **kw)
    doc = run_metrics(table(*flows), facts)
    validate_metrics(doc)
    return doc


def test_the_metrics_flag_a_late_cg_flow_after_the_runs_own_flags() -> None:
    doc = _doc(31.2, run_flags=("queue not drained when the captures stopped",))
    assert doc["flags"] == [
        "queue not drained when the captures stopped",
        "CG flow: first packet at the ingress tap 31.2 s after its scheduled start at 0.0 s "
        "(allowed: 2 s)",
    ]
    cg, comp = doc["flow_starts"]
    assert (cg["role"], cg["ok"], cg["late_s"]) == ("cg", False, pytest.approx(31.2))
    assert (comp["role"], comp["ok"], comp["late_s"]) == ("competitor", True, 0.0)
    # ... and so in the tables' run rows and their note.
    runs = run_rows([{**doc, "run": {"run_id": "r1", "qdisc": "htb", "cca": "cubic"}}])
    assert "CG flow: first packet" in flagged_note(runs)[0]


def test_the_metrics_flag_a_run_without_cg_packets() -> None:
    doc = _doc(None)
    assert start_flags([]) == []
    assert doc["flags"] == [
        "CG flow: no packet at the ingress tap from its scheduled start at 0.0 s on"
    ]
    assert doc["flow_starts"][0]["first_packet_s"] is None


def test_on_time_flows_and_runs_without_the_runners_clock_are_not_flagged() -> None:
    assert _doc(0.05)["flags"] == []
    # t0 from the first packet: the schedule's times say nothing about the captures.
    doc = _doc(31.2, t0_ns=None)
    assert doc["flags"] == [] and doc["flow_starts"] == []


def _meta(**detail: Any) -> dict[str, Any]:
    return {
        "roles": {"cg": "udp:30002", "competitor": "tcp"},
        "capacity_mbps": 8.0,
        "start_ns": T0_NS,
        "schedule": [{"t_s": 6.0, "rate_mbps": None}, {"t_s": 14.0, "rate_mbps": 0}],
        "analysis": {"window_s": [0, None]},
        **({"schedule_detail": detail} if detail else {}),
    }


def test_spec_reads_the_starts_from_schedule_detail_only() -> None:
    facts = facts_from_meta(_meta(cg_start_s=0.0, duration_s=18.0), Path())
    assert [(p.role, p.t_s, p.until_s) for p in facts.planned_starts] == [
        ("cg", 0.0, None),
        ("competitor", 6.0, 14.0),
    ]
    # A meta.json the runner did not write (captures from elsewhere): nothing to check.
    assert facts_from_meta(_meta(), Path()).planned_starts == ()
    assert facts_from_meta(_meta(time_scale=0.5), Path()).planned_starts == ()
    # What the runner writes passes the schema the metrics read it with.
    detail = json.loads(json.dumps(xu2022().scaled(1 / 3).to_dict()))
    assert len(facts_from_meta(_meta(**detail), Path()).planned_starts) == 2


def test_a_bad_schedule_detail_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"key schedule_detail\.cg_start_s"):
        facts_from_meta(_meta(cg_start_s="soon"), Path())
