"""Adaptiveness A = 1/2 (1 - C/Cmax) + 1/2 (1 - E/Emax) over a set of conditions."""

from __future__ import annotations

import polars as pl
import pytest

from cganalysis.metrics.adaptiveness import adaptiveness


def test_adaptiveness_by_hand() -> None:
    frame = pl.DataFrame(
        {
            "system": ["a", "b", "c", "d"],
            "response_time_s": [2.0, 10.0, None, 5.0],
            "response_status": ["reached", "reached", "never", "reached"],
            "recovery_time_s": [20.0, 40.0, 10.0, None],
            "recovery_status": ["reached", "reached", "reached", "not_applicable"],
        }
    )
    a = adaptiveness(frame).get_column("adaptiveness").to_list()
    # Cmax 10, Emax 40. a: .5(1 - .2) + .5(1 - .5) = .65; b: 0; c: never -> 0, .5 * .75.
    assert a[0] == pytest.approx(0.65)
    assert a[1] == pytest.approx(0.0)
    assert a[2] == pytest.approx(0.375)
    assert a[3] is None


def test_all_immediate_is_most_adaptive() -> None:
    frame = pl.DataFrame(
        {
            "response_time_s": [0.0, 0.0],
            "response_status": ["reached", "reached"],
            "recovery_time_s": [0.0, 0.0],
            "recovery_status": ["reached", "reached"],
        }
    )
    assert adaptiveness(frame).get_column("adaptiveness").to_list() == [1.0, 1.0]
