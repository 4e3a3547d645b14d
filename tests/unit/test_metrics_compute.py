"""One run's metrics end to end, on synthetic packet tables with hand-computed answers."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cganalysis.errors import ConfigError
from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.runfacts import RunFacts, Window, choose_capacity, facts_from_values
from cganalysis.metrics.steps import Step
from cganalysis.metrics.timebase import prepare
from cganalysis.metrics.timeseries import run_timeseries
from tests.unit.synthetic import T0_NS, cbr, flow, table

RULES = parse_rules(["cg=udp:30002", "competitor=tcp"])


def facts(**kw: Any) -> RunFacts:
    base: dict[str, Any] = {
        "capacity": choose_capacity(50.0, None, None),
        "window": Window(20, 50),
        "rules": RULES,
        "t0_ns": T0_NS,
    }
    base.update(kw)
    return facts_from_values(**base)


def tma_like() -> pl.DataFrame:
    """CG 20 Mbit/s for 60 s; TCP 25 Mbit/s from 10 s. 1250-byte packets, so every 0.5 s bin
    holds exactly 1000 CG packets and 1250 TCP packets.

    CG delays alternate 5 and 15 ms (mean 10, std 5; half the packets above 10 ms); TCP
    delays are 40 ms and one TCP packet in 100 is lost.
    """
    n_cg = 60 * 2000
    cg = cbr(20, 0, 60, flow_id=0, sport=30001, dport=30002, delay_ms=[5.0, 15.0] * (n_cg // 2))
    n_tcp = 50 * 2500
    lost = [i % 100 == 0 for i in range(n_tcp)]
    tcp = cbr(25, 10, 60, flow_id=1, proto=6, sport=5201, dport=50000, delay_ms=40.0, lost=lost)
    return table(cg, tcp)


@pytest.fixture(scope="module")
def tma_doc() -> dict[str, Any]:
    s = facts(schedule=(Step(10, 25), Step(60, 0)))
    return run_metrics(tma_like(), s)


def test_per_role_values_by_hand(tma_doc: dict[str, Any]) -> None:
    cg, tcp = tma_doc["roles"]["cg"], tma_doc["roles"]["competitor"]
    assert cg["packets"] == 30 * 2000
    assert cg["delay_mean_ms"] == pytest.approx(10.0)
    assert cg["delay_std_ms"] == pytest.approx(5.0)
    assert cg["delay_var_ms2"] == pytest.approx(25.0)
    assert cg["pct_delay_over_10ms"] == pytest.approx(50.0)
    assert cg["pct_delay_over_20ms"] == 0.0
    assert cg["bitrate_mean_mbps"] == pytest.approx(20.0)
    assert cg["bitrate_q1_mbps"] == pytest.approx(20.0)
    assert cg["bitrate_median_mbps"] == pytest.approx(20.0)
    assert cg["loss_rate"] == 0.0
    assert cg["utilisation"] == pytest.approx(0.4)
    assert tcp["delay_mean_ms"] == pytest.approx(40.0)
    assert tcp["pct_delay_over_20ms"] == 100.0
    assert tcp["loss_rate"] == pytest.approx(0.01)
    assert tcp["offered_mean_mbps"] == pytest.approx(25.0)
    assert tcp["bitrate_mean_mbps"] == pytest.approx(24.75)  # 1 % lost
    assert tcp["utilisation"] == pytest.approx(24.75 / 50)


def test_top_level_values_by_hand(tma_doc: dict[str, Any]) -> None:
    assert tma_doc["utilisation_total"] == pytest.approx((20 + 24.75) / 50)
    assert tma_doc["fairness_ratio"] == pytest.approx((20 - 24.75) / 50)
    assert tma_doc["jain_index"] == pytest.approx(44.75**2 / (2 * (20**2 + 24.75**2)))
    # The CG flow never changed its rate: nothing to respond to.
    assert (tma_doc["response_status"], tma_doc["response_time_s"]) == ("reached", 0.0)
    # The competitor leaves when the data ends: no recovery to measure.
    assert tma_doc["recovery_status"] == "not_applicable"
    assert tma_doc["recovery_time_s"] is None
    inputs = tma_doc["inputs"]
    assert inputs["window_s"] == [20.0, 50.0]
    assert inputs["window_effective_s"] == [20.0, 50.0]
    assert tma_doc["warnings"] == []
    assert inputs["capacity"] == pytest.approx(
        {
            "source": "configured",
            "mbps": 50.0,
            "configured_mbps": 50.0,
            "measured_mbps": None,
            "trace": None,
            "trace_scale": None,
            "trace_offset_s": None,
        }
    )
    assert inputs["rules"] == ["cg=udp:30002", "competitor=tcp", "other=(unmatched)"]
    assert inputs["bin_s"] == 0.5 and inputs["t0_source"] == "meta"


def test_phases_split_at_the_competitor_arrival(tma_doc: dict[str, Any]) -> None:
    before = tma_doc["phases"]["before_competitor"]
    assert before["window_s"] == [0.0, 10.0]
    assert before["roles"]["competitor"]["packets"] == 0
    assert before["roles"]["competitor"]["delay_mean_ms"] is None
    assert before["roles"]["cg"]["bitrate_mean_mbps"] == pytest.approx(20.0, abs=0.05)
    assert tma_doc["phases"]["with_competitor"]["roles"]["competitor"]["loss_rate"] == (
        pytest.approx(0.01, abs=1e-3)
    )


def test_document_matches_its_schema_and_ranges(tma_doc: dict[str, Any]) -> None:
    validate_metrics(tma_doc)


def test_no_competing_flow() -> None:
    doc = run_metrics(table(cbr(20, 0, 60, dport=30002, delay_ms=1.0)), facts())
    assert doc["fairness_ratio"] is None and doc["jain_index"] is None
    assert doc["response_time_s"] is None and doc["response_status"] == "not_applicable"
    assert doc["recovery_status"] == "not_applicable"
    assert doc["roles"]["competitor"]["packets"] == 0
    assert doc["roles"]["competitor"]["bitrate_mean_mbps"] == 0.0
    assert doc["roles"]["competitor"]["loss_rate"] is None
    assert doc["utilisation_total"] == pytest.approx(0.4)
    assert any("competitor" in w for w in doc["warnings"])
    assert doc["inputs"]["schedule_source"] == "none"
    validate_metrics(doc)


def test_window_longer_than_the_data_is_clipped_and_said() -> None:
    doc = run_metrics(tma_like(), facts(window=Window(20, 100)))
    # The last packet enters at 59.9995 s: whole bins end at 59.5 s.
    assert doc["inputs"]["window_effective_s"] == [20.0, 59.5]
    assert any("after the last packet" in w for w in doc["warnings"])
    # Utilisation divides by the window observed, not the one asked for.
    assert doc["roles"]["cg"]["utilisation"] == pytest.approx(0.4)


def test_window_outside_the_data_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"--window 100:200: outside the data"):
        run_metrics(tma_like(), facts(window=Window(100, 200)))
    with pytest.raises(ConfigError, match="shorter than one bin"):
        run_metrics(tma_like(), facts(window=Window(59.8, 70)))


def test_empty_bins_pull_the_quartiles_down() -> None:
    # CG sends 20 Mbit/s except for a 10 s pause inside the 30 s window: 20 of the 60 bins are
    # empty, so the mean is 20 x 2/3 and Q1 (rank 14.75 of 0..59) is 0.
    times = np.concatenate([np.arange(0, 30, 0.0005), np.arange(40, 60, 0.0005)])
    doc = run_metrics(table(flow(times, dport=30002)), facts())
    cg = doc["roles"]["cg"]
    assert cg["bitrate_mean_mbps"] == pytest.approx(40.0 / 3.0)
    assert cg["bitrate_q1_mbps"] == 0.0
    assert cg["bitrate_median_mbps"] == pytest.approx(20.0)


def test_a_flow_that_never_recovers() -> None:
    # Xu's schedule: CG at 30, down to 10 while TCP runs (180-360 s), stays at 10 after.
    cg = table(
        cbr(30, 0, 180, dport=30002, size_bytes=1500),
        cbr(10, 180, 540, dport=30002, size_bytes=1500),
    )
    tcp = cbr(15, 180, 360, proto=6, flow_id=1, sport=5201, dport=1, size_bytes=1500)
    s = facts(
        capacity=choose_capacity(25.0, None, None),
        window=Window(0, None),
        schedule=(Step(180, None), Step(360, 0)),
    )
    doc = run_metrics(table(cg, tcp), s)
    # The rate drops at once, but the bin [180, 180.5) still delivers the last 30 Mbit/s packet
    # (sent at 179.9995 s, 1 ms through the queue), and the target's std is 0: one bin late.
    assert doc["response_status"] == "reached" and doc["response_time_s"] == 0.5
    assert (doc["recovery_status"], doc["recovery_time_s"]) == ("never", None)
    kinds = [(e["kind"], e["status"]) for e in doc["events"]]
    assert kinds == [("arrival", "reached"), ("departure", "never")]


def test_schedule_is_inferred_from_the_competitor_when_not_given() -> None:
    cg = cbr(20, 0, 60, dport=30002)
    tcp = cbr(10, 20, 40, proto=6, flow_id=1, sport=5201, dport=1)
    doc = run_metrics(table(cg, tcp), facts(window=Window(0, None)))
    assert doc["inputs"]["schedule_source"] == "inferred"
    steps = doc["inputs"]["schedule"]
    assert steps[0]["t_s"] == pytest.approx(20.0) and steps[0]["rate_mbps"] is None
    assert steps[1]["t_s"] == pytest.approx(40.0, abs=0.01) and steps[1]["rate_mbps"] == 0.0
    # Fairness is over the bins where the competitor was on: (20 - 10) / 50.
    assert doc["fairness_ratio"] == pytest.approx(0.2, abs=0.01)


def test_fairness_window_given_explicitly() -> None:
    doc = run_metrics(tma_like(), facts(fairness_window=Window(30, 40)))
    assert doc["fairness"]["from_s"] == 30.0 and doc["fairness"]["to_s"] == 40.0
    assert doc["fairness"]["bins"] == 20


def test_reverse_direction_is_left_out() -> None:
    data = cbr(10, 0, 30, proto=6, flow_id=1, src="s", sport=5201, dst="c", dport=9)
    acks = cbr(
        0.5,
        0,
        30,
        proto=6,
        flow_id=2,
        src="c",
        sport=9,
        dst="s",
        dport=5201,
        size_bytes=52,
        lost=None,
    )
    cg = cbr(10, 0, 30, dport=30002)
    doc = run_metrics(table(cg, data, acks), facts(window=Window(0, None)))
    assert doc["inputs"]["excluded_reverse"]["flows"] == 1
    assert doc["roles"]["competitor"]["bitrate_mean_mbps"] == pytest.approx(10.0, abs=0.05)
    both = run_metrics(table(cg, data, acks), facts(window=Window(0, None), direction="all"))
    assert both["inputs"]["excluded_reverse"]["flows"] == 0
    assert both["roles"]["competitor"]["bitrate_mean_mbps"] > 10.4


def test_single_capture_mode() -> None:
    # No egress: bitrate at ingress, loss from RTP sequence gaps, jitter, no delay.
    n = 2000
    seq = [i for i in range(n + 20) if i % 101 != 50][:n]  # 1 % of numbers missing
    times = np.arange(n) * 0.005
    rtp = flow(times, dport=30002, rtp_ssrc=7, rtp_seq=seq, single=True)
    doc = run_metrics(table(rtp), facts(window=Window(0, None)))
    cg = doc["roles"]["cg"]
    assert doc["inputs"]["mode"] == "single"
    assert doc["inputs"]["bitrate_point"] == "ingress"
    assert cg["delay_count"] == 0 and cg["delay_mean_ms"] is None
    assert cg["loss_source"] == "rtp_sequence"
    expected = seq[-1] - seq[0] + 1
    assert cg["loss_rate"] == pytest.approx((expected - n) / expected)
    assert cg["bitrate_mean_mbps"] == pytest.approx(1250 * 8 / 0.005 / 1e6, rel=1e-3)
    assert cg["jitter_mean_ms"] is not None
    validate_metrics(doc)


def test_trace_capacity() -> None:
    flat = np.arange(1, 10_001, dtype=np.float64)  # one 1500 B opportunity per ms: 12 Mbit/s
    s = facts(
        capacity=choose_capacity(None, None, __import__("pathlib").Path("flat.down")),
        window=Window(20, 60),
    )
    doc = run_metrics(tma_like(), s, trace_ms=flat)
    assert doc["inputs"]["capacity"]["source"] == "trace"
    assert doc["inputs"]["capacity"]["mbps"] == pytest.approx(12.0)
    assert doc["roles"]["cg"]["utilisation"] == pytest.approx(20.0 / 12.0)
    assert any("total utilisation" in w for w in doc["warnings"])


def test_missing_column_names_it() -> None:
    with pytest.raises(ConfigError, match=r"lacks column.*delay_ms"):
        run_metrics(tma_like().drop("delay_ms"), facts())


def test_timeseries_for_the_figures() -> None:
    pk = tma_like()
    s = facts()
    ts = run_timeseries(prepare(pk, s), bin_s=0.5)
    cg = ts.filter(pl.col("role") == "cg")
    assert cg.height == 119  # whole bins up to the last packet at 59.9995 s
    assert cg.get_column("delay_mean_ms").mean() == pytest.approx(10.0)
    tcp = ts.filter(pl.col("role") == "competitor")
    assert tcp.filter(pl.col("t_s") < 10).get_column("loss_pct").null_count() == 20
    during = tcp.filter(pl.col("t_s") >= 10).get_column("loss_pct")
    assert during.mean() == pytest.approx(1.0, abs=1e-3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rate_cg=st.floats(0.5, 40),
    rate_tcp=st.floats(0.5, 40),
    loss_every=st.integers(2, 50),
    delay=st.floats(0, 200),
)
def test_ranges_hold_for_any_run(
    rate_cg: float, rate_tcp: float, loss_every: int, delay: float
) -> None:
    cg = cbr(rate_cg, 0, 12, dport=30002, delay_ms=delay, size_bytes=1500)
    n = round(12 * rate_tcp * 1e6 / 8 / 1500)
    lost = [i % loss_every == 0 for i in range(n)]
    tcp = cbr(rate_tcp, 0, 12, proto=6, flow_id=1, sport=5201, lost=lost, size_bytes=1500)
    doc = run_metrics(table(cg, tcp), facts(window=Window(2, 12)))
    validate_metrics(doc)
