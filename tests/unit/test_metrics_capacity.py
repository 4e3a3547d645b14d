"""Capacity from mahimahi traces: counting opportunities, looping, scaling, reading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cganalysis.errors import ConfigError
from cganalysis.metrics.capacity import (
    LinkCapacity,
    opportunities_before,
    trace_capacity_bits,
    trace_capacity_series,
)
from cganalysis.metrics.io import read_trace
from tests.conftest import trace

# Two opportunities at 0 ms, one at 1, 2 and 4 ms: 5 per 4 ms period (the last time).
TRACE = np.array([0, 0, 1, 2, 4], dtype=np.float64)


def test_opportunities_before_loop_over_the_period() -> None:
    t = np.array([0, 0.5, 1, 1.5, 4, 5, 8, 9], dtype=np.float64)
    # Cycle 1 is 4 4 5 6 8: at 4 ms three opportunities share the instant (cycle 0's last and
    # cycle 1's two zeros), none of them before 4 ms. Before 9 ms: 5 + 5 + two at 8 ms.
    assert opportunities_before(TRACE, t).tolist() == [0, 2, 2, 3, 4, 7, 9, 12]


def test_series_by_hand() -> None:
    s = trace_capacity_series(TRACE, start_s=0.0, end_s=0.012, bin_s=0.004)
    # [0, 4) ms holds 4 opportunities (12 Mbit/s at 1500 B); each later period 5 (15 Mbit/s).
    assert s.get_column("capacity_mbps").to_list() == pytest.approx([12.0, 15.0, 15.0])
    scaled = trace_capacity_series(TRACE, start_s=0.004, end_s=0.008, bin_s=0.004, scale=2)
    assert scaled.get_column("capacity_mbps").item() == pytest.approx(30.0)


def test_offset_shifts_the_trace_and_before_it_there_is_no_capacity() -> None:
    bits = trace_capacity_bits(TRACE, start_s=0.0, end_s=0.004, offset_s=0.004)
    assert bits == 0.0
    bits = trace_capacity_bits(TRACE, start_s=0.004, end_s=0.008, offset_s=0.004)
    assert bits == 4 * 1500 * 8


def test_link_capacity_constant_and_trace_agree_on_a_flat_trace() -> None:
    flat = np.arange(1, 1001, dtype=np.float64)  # one opportunity per ms: 12 Mbit/s
    trace = LinkCapacity(trace_ms=flat)
    const = LinkCapacity(constant_mbps=12.0)
    assert trace.mean_mbps(10.0, 20.0) == pytest.approx(12.0)
    assert trace.bits(0.5, 3.5) == pytest.approx(const.bits(0.5, 3.5))
    assert const.series(0, 1.2, 0.5).get_column("capacity_mbps").to_list() == [12.0, 12.0]
    with pytest.raises(ConfigError):
        LinkCapacity()


def test_read_trace(tmp_path: Path) -> None:
    p = tmp_path / "x.down"
    p.write_text("0\n0\n1\n2\n4\n")
    assert read_trace(p).tolist() == TRACE.tolist()
    (tmp_path / "bad.down").write_text("0\nabc\n")
    with pytest.raises(ConfigError, match="line 2 is not a whole number of milliseconds"):
        read_trace(tmp_path / "bad.down")
    with pytest.raises(ConfigError, match="no such file"):
        read_trace(tmp_path / "missing.down")


def test_a_generated_trace_has_the_capacity_of_its_lines() -> None:
    path = trace("cga-lte-s3-60s.down")
    times = read_trace(path)
    # Over [0, T), T the last time: every line but the last (at T, the next period's
    # first instant) x 1500 bytes (the metrics' default).
    words = path.read_text().split()
    expected = (len(words) - 1) * 1500 * 8 / (int(words[-1]) / 1000) / 1e6
    mean = LinkCapacity(trace_ms=times).mean_mbps(0.0, float(times[-1]) / 1000.0)
    assert mean == pytest.approx(expected, rel=1e-9) and 10 < mean < 30
