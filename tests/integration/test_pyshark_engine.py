"""The slow reference engine (pyshark, tshark underneath) agrees with the native one."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from cganalysis.capture import read_capture
from cganalysis.matching import match_files
from tests.conftest import FIXTURES, need_tool

# `truncated` differs by design: tshark flags what its dissectors find short, we flag a
# header cut by the snaplen. The hashes are engine-specific (see pyshark_engine.py).
NOT_COMPARED = {"flow_hash", "l4_hash", "truncated"}


@pytest.mark.parametrize(
    "name",
    [
        "formats/eth-ipv6.pcap",
        "formats/eth-frag4.pcap",
        "formats/sll2.pcap",
        "formats/two-ifaces.pcapng",
        "formats/qinq.pcap",
    ],
)
def test_engines_read_the_same_fields(name: str) -> None:
    need_tool("tshark")
    path = FIXTURES / name
    fast = read_capture(path).packets
    slow = read_capture(path, engine="pyshark").packets
    assert fast.height == slow.height > 0
    differ = {
        c: int((~fast[c].eq_missing(slow[c])).sum()) for c in fast.columns if c not in NOT_COMPARED
    }
    assert not any(differ.values()), f"columns that differ: {differ}"


def test_engines_match_the_dualpoint_run_identically(dualpoint_dir: Path) -> None:
    need_tool("tshark")
    ingress, egress = dualpoint_dir / "ingress.pcap", dualpoint_dir / "egress.pcap"
    fast = match_files(ingress, egress).packets
    slow = match_files(ingress, egress, engine="pyshark").packets
    cols = ["t_ingress_ns", "t_egress_ns", "lost", "ce_marked", "rtp_seq_ext", "size_bytes"]
    assert fast.select(cols).equals(slow.select(cols))
    assert fast["lost"].sum() > 0 and fast.filter(pl.col("lost").not_()).height > 1000
