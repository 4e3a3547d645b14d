"""Run facts: windows, steps, capacity choice and META.json validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cganalysis.errors import ConfigError
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_meta, parse_window
from cganalysis.metrics.steps import Step, parse_step


def test_parse_window() -> None:
    assert parse_window("120:360") == Window(120.0, 360.0)
    assert parse_window("120:") == Window(120.0, None)
    assert str(parse_window("0.5:")) == "0.5:"


@pytest.mark.parametrize("text", ["120", "a:b", "360:120", "10:10", ":5", "nan:3"])
def test_bad_window_names_the_flag(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_window(text)
    assert "--window" in str(err.value) or "window" in str(err.value)


def test_parse_step() -> None:
    assert parse_step("60:10") == Step(60.0, 10.0)
    assert parse_step("180:bulk") == Step(180.0, None)
    assert parse_step("360:off") == Step(360.0, 0.0)
    assert parse_step("180:bulk").on and not parse_step("360:0").on


@pytest.mark.parametrize("text", ["60", "60:-1", "x:10", "60:fast"])
def test_bad_step(text: str) -> None:
    with pytest.raises(ConfigError, match="--step"):
        parse_step(text)


def test_capacity_prefers_measured_then_configured_and_trace_wins() -> None:
    assert choose_capacity(50.0, 47.8, None).source == "measured"
    assert choose_capacity(50.0, 47.8, None).mbps == 47.8
    assert choose_capacity(50.0, 47.8, None, prefer="configured").mbps == 50.0
    assert choose_capacity(50.0, None, None).source == "configured"
    assert choose_capacity(None, 47.8, None, prefer="configured").mbps == 47.8
    assert choose_capacity(50.0, None, Path("t.down")).source == "trace"


def test_no_capacity_says_which_flags_to_give() -> None:
    with pytest.raises(ConfigError, match="--capacity-mbps"):
        choose_capacity(None, None, None)
    with pytest.raises(ConfigError, match="positive"):
        choose_capacity(-5.0, None, None)


def meta(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "tma2024-htb-cubic-r01",
        "campaign": "tma2024",
        "qdisc": "htb",
        "cca": "cubic",
        "repetition": 1,
        "start_ns": 1_700_000_000_000_000_000,
        "capacity_mbps": 50,
        "roles": {"cg": "udp:30002", "competitor": "tcp"},
        "schedule": [
            {"t_s": 60, "rate_mbps": 10},
            {"t_s": 120, "rate_mbps": 20},
            {"t_s": 360, "rate_mbps": 0},
        ],
        "analysis": {"window_s": [120, 360], "bin_s": 0.5, "response": {"smooth_s": 2}},
        "something_the_testbed_also_writes": {"kernel": "6.18"},
    }
    base.update(over)
    return base


def test_xu_response_windows_scale_with_a_scaled_schedule() -> None:
    # A 9-minute xu2022 run scaled to 3 minutes: 20 s before the arrival, the last 20 s of
    # the TCP phase (what the runner records as schedule_detail.time_scale).
    third = {"schedule_detail": {"time_scale": 1 / 3}}
    facts = facts_from_meta(meta(**third), Path("/runs/r01"))
    assert facts.response.before_s == pytest.approx(20)
    assert facts.response.settle_s == pytest.approx(20)
    assert facts.response.smooth_s == 2
    # What meta.json says explicitly wins.
    analysis = {"window_s": [120, 360], "response": {"before_s": 45}}
    facts = facts_from_meta(meta(**third, analysis=analysis), Path("/runs/r01"))
    assert facts.response.before_s == 45 and facts.response.settle_s == pytest.approx(20)


def test_facts_from_meta_reads_every_key() -> None:
    facts = facts_from_meta(meta(), Path("/runs/r01"))
    assert facts.window == Window(120, 360)
    assert facts.capacity.source == "configured" and facts.capacity.mbps == 50
    assert [str(r) for r in facts.rules] == ["cg=udp:30002", "competitor=tcp"]
    assert facts.schedule[0] == Step(60, 10) and not facts.schedule[-1].on
    assert facts.t0_ns == 1_700_000_000_000_000_000
    assert facts.response.smooth_s == 2 and facts.response.before_s == 60
    assert facts.labels == {
        "run_id": "tma2024-htb-cubic-r01",
        "campaign": "tma2024",
        "qdisc": "htb",
        "cca": "cubic",
        "repetition": 1,
    }


def test_trace_path_is_relative_to_the_metadata() -> None:
    m = meta(capacity_trace="../traces/x.down", capacity_trace_scale=2)
    facts = facts_from_meta(m, Path("/runs/r01"))
    assert facts.capacity.trace == Path("/runs/r01/../traces/x.down")
    assert facts.capacity.trace_scale == 2


def test_a_generated_trace_recorded_elsewhere_is_found_by_name(tmp_path: Path) -> None:
    # A run made on another machine names its trace there; a generated one is made again.
    m = meta(capacity_trace="/elsewhere/data/traces/cga-lte-s5-20s.down")
    got = facts_from_meta(m, tmp_path).capacity.trace
    assert got is not None and got.name == "cga-lte-s5-20s.down" and got.is_file()
    assert int(got.read_text().split()[-1]) == 20_000


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"roles": None}, "roles"),
        ({"analysis": {"bin_s": 0.5}}, "analysis.window_s"),
        ({"analysis": {"window_s": [120]}}, "analysis.window_s"),
        ({"analysis": {"window_s": [120, 360], "bin": 1}}, "analysis"),
        ({"capacity_mbps": -1}, "capacity_mbps"),
        ({"schedule": [{"t_s": 60}]}, "schedule.0"),
    ],
)
def test_bad_meta_names_the_key(change: dict[str, Any], key: str) -> None:
    m = meta(**change)
    m = {k: v for k, v in m.items() if v is not None}
    with pytest.raises(ConfigError) as err:
        facts_from_meta(m, Path(), where="r01/META.json")
    assert f"key {key}" in str(err.value)
    assert "r01/META.json" in str(err.value)


def test_meta_without_any_capacity() -> None:
    m = meta()
    del m["capacity_mbps"]
    with pytest.raises(ConfigError, match="capacity_mbps"):
        facts_from_meta(m, Path())


def test_meta_with_a_bad_rule_or_window_or_schedule() -> None:
    with pytest.raises(ConfigError, match="unknown protocol"):
        facts_from_meta(meta(roles={"cg": "quic:443"}), Path())
    with pytest.raises(ConfigError, match="end must be after the start"):
        facts_from_meta(meta(analysis={"window_s": [360, 120]}), Path())
    sched = [{"t_s": 60, "rate_mbps": 10}, {"t_s": 30, "rate_mbps": 0}]
    with pytest.raises(ConfigError, match="strictly increasing"):
        facts_from_meta(meta(schedule=sched), Path())
