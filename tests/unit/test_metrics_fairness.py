"""Xu's bitrate-difference ratio and Jain's index."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.metrics.fairness import jain_index, xu_fairness_ratio


def test_xu_ratio_by_hand() -> None:
    assert xu_fairness_ratio(12.5, 12.5, 25.0) == 0.0
    assert xu_fairness_ratio(25.0, 0.0, 25.0) == 1.0
    assert xu_fairness_ratio(0.0, 25.0, 25.0) == -1.0
    assert xu_fairness_ratio(20.0, 25.0, 50.0) == pytest.approx(-0.1)
    with pytest.raises(ValueError, match="capacity"):
        xu_fairness_ratio(1.0, 1.0, 0.0)


def test_jain_by_hand() -> None:
    assert jain_index([10.0, 10.0]) == 1.0
    assert jain_index([10.0, 0.0]) == 0.5
    assert jain_index([20.0, 25.0]) == pytest.approx(45**2 / (2 * (400 + 625)))
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None


@given(st.floats(0, 100), st.floats(0, 100))
def test_ratio_in_range_when_flows_fit(a: float, b: float) -> None:
    cap = max(a + b, 1e-3)
    assert -1.0 <= xu_fairness_ratio(a, b, cap) <= 1.0
    j = jain_index([a, b])
    assert j is None or 0.5 - 1e-12 <= j <= 1.0 + 1e-12
