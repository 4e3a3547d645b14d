"""RFC 3550 inter-arrival jitter."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from cganalysis.metrics.jitter import jitter_trace, rtp_jitter
from tests.unit.synthetic import flow, table


def reference_jitter(arrival_s: list[float], ts: list[int], clock: int) -> list[float]:
    """RFC 3550 A.8, written as the RFC does, one packet at a time."""
    j, out = 0.0, []
    for i in range(1, len(ts)):
        d = (arrival_s[i] - arrival_s[i - 1]) * clock - (ts[i] - ts[i - 1])
        j += (abs(d) - j) / 16
        out.append(j)
    return out


def test_constant_transit_has_no_jitter() -> None:
    arr = np.arange(10) * 20_000_000  # every 20 ms
    ts = np.arange(10) * 1800  # 20 ms at 90 kHz
    assert jitter_trace(arr, ts).tolist() == [0.0] * 9


def test_hand_values() -> None:
    # Second packet 1 ms late (90 units): J = 90/16; third back on time: |D| = 90 again.
    arr = np.array([0, 21_000_000, 40_000_000])
    ts = np.array([0, 1800, 3600])
    assert jitter_trace(arr, ts).tolist() == pytest.approx([90 / 16, 90 / 16 + (90 - 90 / 16) / 16])


def test_matches_the_rfc_loop_and_survives_timestamp_wrap() -> None:
    rng = np.random.default_rng(1)
    n = 500
    arrival = np.cumsum(rng.uniform(0.015, 0.025, n))
    ts = (2**32 - 50_000 + np.arange(n) * 1800) % 2**32  # wraps after ~28 packets
    unwrapped = (2**32 - 50_000 + np.arange(n) * 1800).tolist()
    ours = jitter_trace((arrival * 1e9).round().astype(np.int64), ts)
    ref = reference_jitter(arrival.tolist(), unwrapped, 90_000)
    assert ours.tolist() == pytest.approx(ref, rel=1e-6, abs=1e-6)


def test_rtp_jitter_in_ms_per_flow() -> None:
    # Flow 1: arrivals 0, 21, 40 ms for a 20 ms clock: J after 2 = 90/16 + (90 - 90/16)/16 units.
    a = flow([0.0, 0.021, 0.040], flow_id=1, rtp_ssrc=1, rtp_ts=[0, 1800, 3600], single=True)
    b = flow([0.0, 0.02, 0.04], flow_id=2, sport=9, rtp_ssrc=2, rtp_ts=[0, 1800, 3600], single=True)
    pk = table(a, b).with_columns(t_in_ns=pl.col("t_ingress_ns"))
    j = rtp_jitter(pk)
    units = [90 / 16, 90 / 16 + (90 - 90 / 16) / 16, 0.0, 0.0]
    assert j.packets == 4
    assert j.mean_ms == pytest.approx(np.mean(units) / 90)
    assert j.last_ms == pytest.approx((units[1] + 0.0) / 2 / 90)


def test_the_jitter_filter_is_scipys_lfilter_bit_for_bit() -> None:
    """The running jitter is the first-order IIR filter scipy.signal.lfilter computes (run
    without importing scipy.signal, which takes seconds)."""
    import numpy as np
    from scipy.signal import lfilter

    from cganalysis.metrics.jitter import jitter_trace

    rng = np.random.default_rng(3)
    arrival = np.cumsum(rng.integers(100_000, 40_000_000, 5_000)).astype(np.int64)
    rtp_ts = (np.arange(5_000) * 1_500 + rng.integers(0, 9_000, 5_000)) % 2**32
    ds = (np.diff(rtp_ts.astype(np.int64)) + 2**31) % 2**32 - 2**31
    dr = np.diff(arrival).astype(np.float64) * 90_000 / 1e9
    expected = lfilter([1.0 / 16.0], [1.0, -15.0 / 16.0], np.abs(dr - ds.astype(np.float64)))
    assert np.array_equal(jitter_trace(arrival, rtp_ts), expected)
