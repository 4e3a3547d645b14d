"""RTP streams are decided in capture time order, whatever the row order of the table."""

from __future__ import annotations

import polars as pl

from cganalysis.capture import read_capture
from cganalysis.capture.rtp import classify_rtp_streams
from tests.conftest import FIXTURES


def test_row_order_does_not_change_the_streams() -> None:
    packets = read_capture(FIXTURES / "dualpoint" / "ingress.pcap").packets
    streams = classify_rtp_streams(packets)
    assert streams, "the fixture carries an RTP video stream"
    shuffled = packets.sample(fraction=1.0, shuffle=True, seed=7)
    assert not shuffled["t_ns"].is_sorted(nulls_last=True)
    assert classify_rtp_streams(shuffled) == streams
    assert classify_rtp_streams(packets.reverse()) == streams
    # an out-of-order pair inside a stream is what the sort is for
    assert classify_rtp_streams(pl.concat([packets.tail(5), packets.head(-5)])) == streams
