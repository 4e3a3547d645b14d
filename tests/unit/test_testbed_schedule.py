"""Schedules (the papers' presets, custom steps, scaling) and campaign expansion."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import deep_merge, load_campaign
from cganalysis.experiment.schedule import Step, parse_schedule, tma2024, xu2022
from cganalysis.metrics.runfacts import facts_from_meta
from cganalysis.testbed.spec.validate import Section

REPO = Path(__file__).resolve().parents[2]


def test_tma2024_preset_is_the_papers() -> None:
    s = tma2024()
    assert s.duration_s == 360
    assert [(p.start_s, p.duration_s, p.rate_mbit) for p in s.phases()] == [
        (60, 60, 10),
        (120, 60, 20),
        (180, 60, 30),
        (240, 60, 40),
        (300, 60, 45),
    ]
    assert s.cg_start_s == 0
    assert s.window_s == (120, 360)  # "from the third minute and onward"


def test_xu2022_preset_is_the_papers() -> None:
    s = xu2022()
    assert s.duration_s == 540
    assert [(p.start_s, p.duration_s, p.rate_mbit) for p in s.phases()] == [(180, 180, None)]
    assert s.fairness_window_s == (215, 360)


@pytest.mark.parametrize(("preset", "k"), [(tma2024, 1 / 12), (xu2022, 1 / 18)])
def test_quick_scaling_fits_30_s_with_whole_iperf3_seconds(preset, k) -> None:  # type: ignore[no-untyped-def]
    s = preset().fit(30.0)
    assert s.duration_s == pytest.approx(30.0)
    assert s.time_scale == pytest.approx(k)
    # iperf3 -t takes whole seconds: the quick profile's factors keep the steps whole.
    assert all(abs(p.duration_s - round(p.duration_s)) < 1e-9 for p in s.phases())
    assert preset().fit(1000.0) == preset()  # never scaled up


def test_custom_schedule_and_meta_for_the_metrics() -> None:
    sec = Section(
        {
            "preset": "custom",
            "duration_s": 20,
            "competitor": [
                {"t_s": 5, "rate_mbit": 3},
                {"t_s": 10, "rate_mbit": "bulk"},
                {"t_s": 15, "rate_mbit": "off"},
            ],
            "cg": {"start_s": 1},
            "window_s": [5, None],
        },
        "run.yaml",
        "schedule",
    )
    s = parse_schedule(sec)
    assert [(p.start_s, p.duration_s, p.rate_mbit) for p in s.phases()] == [
        (5, 5, 3),
        (10, 5, None),
    ]
    assert s.meta() == [
        {"t_s": 5, "rate_mbps": 3},
        {"t_s": 10, "rate_mbps": None},
        {"t_s": 15, "rate_mbps": 0},
    ]
    assert s.cg_start_s == 1
    assert s.window_s == (5, None)
    assert s.competitor_span() == (5, 15)
    assert Step(0, 0).label() == "off"


def test_time_scale_key_scales_everything() -> None:
    s = parse_schedule(Section({"preset": "tma2024", "time_scale": 0.5}, "r", "schedule"))
    assert s.duration_s == 180
    assert s.window_s == (60, 180)
    assert s.steps[0].t_s == 30


def test_unsorted_steps_are_refused() -> None:
    sec = Section(
        {"duration_s": 20, "competitor": [{"t_s": 5, "rate_mbit": 1}, {"t_s": 5, "rate_mbit": 2}]},
        "run.yaml",
        "schedule",
    )
    with pytest.raises(ConfigError, match="strictly increasing"):
        parse_schedule(sec)


def test_deep_merge_replaces_a_mapping_whose_kind_changes() -> None:
    base = {"bottleneck": {"rate_mbit": 8, "qdisc": {"kind": "pfifo", "limit": 100}}}
    same = deep_merge(base, {"bottleneck": {"qdisc": {"limit": 5}}})
    assert same["bottleneck"]["qdisc"] == {"kind": "pfifo", "limit": 5}
    other = deep_merge(base, {"bottleneck": {"qdisc": {"kind": "dualpi2"}}})
    assert other["bottleneck"] == {"rate_mbit": 8, "qdisc": {"kind": "dualpi2"}}
    assert base["bottleneck"]["qdisc"]["limit"] == 100  # not modified


def test_example_campaign_expands_to_readable_run_ids() -> None:
    c = load_campaign(REPO / "configs" / "campaigns" / "quick-example.yaml")
    assert [r.run_id for r in c.runs] == [
        "quick-example-pfifo-cubic-r01",
        "quick-example-pfifo-bbr-r01",
        "quick-example-htb-cubic-r01",
        "quick-example-htb-bbr-r01",
    ]
    htb = c.run("quick-example-htb-bbr-r01")
    assert htb.config.competitor.cca == "bbr"
    assert htb.config.all_labels()["qdisc"] == "htb"
    # One calibration per bottleneck: the CCA does not change it.
    assert htb.calibration_key == c.run("quick-example-htb-cubic-r01").calibration_key
    assert htb.calibration_key != c.run("quick-example-pfifo-bbr-r01").calibration_key
    with pytest.raises(ConfigError, match="no run"):
        c.run("nope")


def test_campaign_format_expresses_xu2022(tmp_path: Path) -> None:
    """Capacity x queue (in BDP) x CCA x 15 repetitions, as Xu & Claypool (270 runs)."""
    campaign = {
        "campaign": "xu2022",
        "run": {
            "name": "xu2022",
            "schedule": {"preset": "xu2022"},
            "bottleneck": {"rate_mbit": 25, "bdp_rtt_ms": 15, "qdisc": {"kind": "pfifo"}},
            "cg": {"source": "rtp-cbr", "rate_mbit": 30},
        },
        "repetitions": 15,
        "factors": {
            "capacity": {
                f"{c}mbit": {"bottleneck": {"rate_mbit": c}, "labels": {"link_mbps": c}}
                for c in (15, 25, 35)
            },
            "queue": {
                # 0p5xbdp: no "." in a run id (the workflow's file names), as xu2022.yaml
                f"{q}xbdp".replace(".", "p"): {
                    "bottleneck": {"qdisc": {"limit_bdp": q}},
                    "labels": {"queue": q},
                }
                for q in (0.5, 2, 7)
            },
            "cca": {c: {"competitor": {"cca": c}} for c in ("cubic", "bbr")},
        },
    }
    path = tmp_path / "xu2022.yaml"
    path.write_text(yaml.safe_dump(campaign, sort_keys=False))
    c = load_campaign(path)
    assert len(c.runs) == 3 * 3 * 2 * 15
    r = c.run("xu2022-35mbit-7xbdp-bbr-r15")
    # 35 Mbit/s x 15 ms x 7 / 1500 B
    assert r.config.bottleneck.forward.qdisc.params["limit"] == 307
    assert r.config.all_labels()["queue"] == 7
    assert len({x.calibration_key for x in c.runs}) == 9


def test_meta_schedule_and_roles_are_what_the_metrics_read() -> None:
    s = tma2024().fit(30)
    meta = {
        "roles": {"cg": "udp:30002", "competitor": "tcp"},
        "schedule": s.meta(),
        "analysis": {"window_s": list(s.window_s), "capacity_source": "measured"},
        "capacity_mbps": 50.0,
        "capacity_measured_mbps": 47.5,
        "start_ns": 1,
    }
    facts = facts_from_meta(meta, REPO)
    assert facts.capacity.mbps == 47.5
    assert facts.capacity.source == "measured"
    assert [st.rate_mbps for st in facts.schedule] == [10, 20, 30, 40, 45]
    assert facts.window.start_s == 10
