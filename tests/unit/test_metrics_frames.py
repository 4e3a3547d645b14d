"""Frame rate (Xu Table 6): frames whose every packet crossed the bottleneck, per second."""

from __future__ import annotations

import polars as pl
import pytest

from cganalysis.metrics.frames import frame_rate


def _packets(rows: list[tuple[int, int | None, int | None, bool | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "flow_id": pl.UInt32,
            "rtp_ts": pl.UInt32,
            "rtp_seq_ext": pl.Int64,
            "lost": pl.Boolean,
        },
        orient="row",
    )


def test_a_frame_missing_one_packet_is_not_delivered() -> None:
    rows: list[tuple[int, int | None, int | None, bool | None]] = []
    seq = 0
    # Flow 0: frames at ts 0, 1500, 3000, 4500 of 3 packets each; the third loses one.
    for ts in (0, 1500, 3000, 4500):
        for k in range(3):
            rows.append((0, ts, seq, ts == 3000 and k == 1))
            seq += 1
    # Flow 1 (another SSRC) reuses timestamp 0: a frame of its own, delivered.
    rows += [(1, 0, 0, False), (1, 0, 1, False)]
    # A TCP packet (no RTP) and a frame entered outside the egress capture's span.
    rows += [(2, None, None, True), (0, 6000, seq, None), (0, 6000, seq + 1, False)]
    got = frame_rate(_packets(rows), duration_s=2.0)
    assert got is not None
    assert (got.frames_delivered, got.frames_incomplete) == (4, 1)
    assert got.frame_rate_fps == pytest.approx(2.0)


def test_no_rtp_or_no_known_fate_gives_no_rate() -> None:
    assert frame_rate(_packets([(2, None, None, False)]), duration_s=1.0) is None
    assert frame_rate(_packets([(0, 10, 1, None)]), duration_s=1.0) is None
