"""Every field the native reader extracts, cross-checked against tshark on real captures
made with real tools (tests/fixtures: the dual-point run and the format zoo)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from cganalysis.capture import read_capture
from tests.conftest import FIXTURES, need_tool
from tests.integration.tshark_oracle import tshark_table

FORMATS = FIXTURES / "formats"
EXPECTED = json.loads((FORMATS / "expected.json").read_text())
VALID = sorted(
    name
    for name, facts in EXPECTED.items()
    if not name.startswith("_") and facts.get("valid") and facts["linktypes"] != [147]
)
CAPTURES = [FORMATS / n for n in VALID] + [
    FIXTURES / "dualpoint" / "ingress.pcap",
    FIXTURES / "dualpoint" / "egress.pcap",
]

# Fields compared on every IP packet, and those compared where tshark dissects them.
IP_FIELDS = ["ip_version", "src", "dst", "size_bytes", "dscp", "ecn", "ttl"]
TCP_FIELDS = ["tcp_seq", "tcp_ack", "tcp_flags", "tcp_payload_bytes"]
RTP_FIELDS = ["rtp_ssrc", "rtp_seq", "rtp_ts", "rtp_marker", "rtp_pt"]


def _mismatches(ours: pl.DataFrame, theirs: pl.DataFrame, fields: list[str]) -> pl.DataFrame:
    both = (
        ours.select(fields)
        .with_row_index("frame")
        .join(theirs.select(fields).with_row_index("frame"), on="frame", suffix="_tshark")
    )
    bad = pl.any_horizontal(
        ~pl.col(f).cast(pl.String).eq_missing(pl.col(f"{f}_tshark").cast(pl.String)) for f in fields
    )
    return both.filter(bad)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_fields_match_tshark(path: Path) -> None:
    need_tool("tshark")
    ours = read_capture(path).packets
    theirs = tshark_table(path)
    assert ours.height == theirs.height
    if path.name in EXPECTED:
        assert ours.height == EXPECTED[path.name]["packets"]
    if ours.height == 0:
        return
    assert ours["t_ns"].to_list() == theirs["t_ns"].to_list()
    assert ours["wire_len_bytes"].to_list() == theirs["wire_len_bytes"].to_list()
    assert ours["interface_id"].to_list() == theirs["interface_id"].to_list()

    bad = _mismatches(ours, theirs, IP_FIELDS)
    assert bad.height == 0, f"IP fields differ from tshark:\n{bad}"
    # IP ID: IPv4 always; IPv6 only with a fragment header.
    bad = _mismatches(ours, theirs, ["ip_id"])
    assert bad.height == 0, f"ip_id differs:\n{bad}"

    # Ports: wherever tshark dissects UDP/TCP. A first fragment carries the UDP header,
    # which we read and tshark (with reassembly off) leaves undissected.
    has_ports = theirs["sport"].is_not_null()
    first_fragment = theirs["fragment"] & ours["sport"].is_not_null() & ~has_ports
    bad = _mismatches(
        ours.filter(~first_fragment), theirs.filter(~first_fragment), ["sport", "dport"]
    )
    assert bad.height == 0, f"ports differ:\n{bad}"

    tcp = theirs["tcp_seq"].is_not_null() | ours["tcp_seq"].is_not_null()
    bad = _mismatches(ours.filter(tcp), theirs.filter(tcp), TCP_FIELDS)
    assert bad.height == 0, f"TCP fields differ:\n{bad}"

    rtp = ours["is_rtp"]
    assert (theirs.filter(rtp)["rtp_ssrc"].is_not_null()).all(), "tshark sees no RTP there"
    bad = _mismatches(ours.filter(rtp), theirs.filter(rtp), RTP_FIELDS)
    assert bad.height == 0, f"RTP fields differ:\n{bad}"


def test_dualpoint_rtp_stream_is_found() -> None:
    """The fixture's video stream is classified RTP, whole, and nothing else is."""
    ingress = read_capture(FIXTURES / "dualpoint" / "ingress.pcap").packets
    sent = json.loads((FIXTURES / "dualpoint" / "meta.json").read_text())["rtp"]
    rtp = ingress.filter(pl.col("is_rtp"))
    assert set(rtp["dport"].unique().to_list()) == {sent["port"]}
    assert set(rtp["rtp_ssrc"].unique().to_list()) == {sent["ssrc"]}
    stream = ingress.filter((pl.col("proto") == 17) & (pl.col("dport") == sent["port"]))
    assert rtp.height == stream.height == sent["sender_summary"]["packets"]
