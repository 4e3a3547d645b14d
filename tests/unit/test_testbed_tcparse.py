"""Reading tc statistics (JSON and the text form of classes) into qdisc-stats records."""

from __future__ import annotations

import json
from pathlib import Path

from cganalysis.experiment.meta import busy_rate_mbps
from cganalysis.experiment.rundir import inventory
from cganalysis.testbed.dataplane.bottleneck import tc_rate_mbit
from cganalysis.testbed.rendering import tcparse

# `tc -s class show` of iproute2 6.1 on kernel 6.18 (HTB classes print no JSON there).
CLASS_TEXT = """\
class htb 1:10 parent 1:1 leaf 10: prio 0 rate 2Mbit ceil 8Mbit burst 1600b cburst 1600b 
 Sent 151400 bytes 100 pkt (dropped 3, overlimits 7 requeues 0) 
 backlog 3028b 2p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 100000 ctokens: 25000

class htb 1:1 root rate 8Mbit ceil 8Mbit burst 1600b cburst 1600b 
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 25000 ctokens: 25000

class htb 1:20 parent 1:1 leaf 20: prio 1 rate 6Mbit ceil 8Mbit burst 1599b cburst 1600b 
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 2Kb 0p requeues 0
"""  # noqa: W291 - tc's own trailing spaces

QDISC_JSON = json.dumps(
    [
        {
            "kind": "htb",
            "handle": "1:",
            "root": True,
            "bytes": 9000,
            "packets": 6,
            "drops": 4,
            "overlimits": 9,
            "requeues": 0,
            "backlog": 3028,
            "qlen": 2,
        },
        {
            "kind": "dualpi2",
            "handle": "10:",
            "parent": "1:1",
            "bytes": 9000,
            "packets": 6,
            "drops": 4,
            "backlog": 3028,
            "qlen": 2,
            "prob": 0.012,
            "delay-c": 1500,
            "delay-l": 80,
            "pkts-in-c": 40,
            "pkts-in-l": 60,
            "maxq": 12,
            "ecn-mark": 5,
            "step-mark": 3,
        },
    ]
)


def test_class_text() -> None:
    classes = tcparse.parse_class_text(CLASS_TEXT)
    assert [c["classid"] for c in classes] == ["1:10", "1:1", "1:20"]
    c10 = classes[0]
    assert c10["sent_bytes"] == 151400 and c10["sent_packets"] == 100
    assert c10["dropped"] == 3 and c10["overlimits"] == 7
    assert c10["backlog_bytes"] == 3028 and c10["backlog_packets"] == 2
    assert c10["rate"] == "2Mbit" and c10["prio"] == "0" and c10["leaf"] == "10:"
    assert classes[2]["backlog_bytes"] == 2048  # iproute2 prints exact KiB with a unit
    assert tc_rate_mbit(classes[1]["rate"]) == 8.0
    assert tc_rate_mbit("500Kbit") == 0.5


def test_record_sums_marks_and_copies_dualpi2_state() -> None:
    rec = tcparse.record(
        5, "a_to_b", "rtr1", tcparse.parse_qdisc_json(QDISC_JSON), tcparse.parse_class_text("")
    )
    assert rec["qdisc"] == "htb"
    assert rec["sent_bytes"] == 9000 and rec["dropped"] == 4 and rec["backlog_packets"] == 2
    assert rec["marked"] == 8  # ecn marks + step marks
    assert rec["prob"] == 0.012 and rec["delay_c_us"] == 1500 and rec["delay_l_us"] == 80
    assert [q["kind"] for q in rec["qdiscs"]] == ["htb", "dualpi2"]
    assert "classes" not in rec
    assert tcparse.parse_qdisc_json("not json") == []


def test_busy_rate_counts_only_backlogged_polls(tmp_path: Path) -> None:
    lines = []
    for i in range(20):
        backlog = 5 if 5 <= i < 15 else 0
        lines.append(
            {
                "t_ns": i * 100_000_000,
                "direction": "a_to_b",
                "sent_bytes": i * 100_000,
                "backlog_packets": backlog,
            }
        )
    path = tmp_path / "qdisc-stats.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    # 100 kB per 100 ms = 8 Mbit/s while backlogged.
    assert busy_rate_mbps(path) == 8.0


def test_inventory_has_checksums(tmp_path: Path) -> None:
    (tmp_path / "a.pcap").write_bytes(b"abc")
    (tmp_path / "meta.json").write_text("{}")
    inv = inventory(tmp_path)
    assert list(inv) == ["a.pcap"]
    assert inv["a.pcap"]["sha256"].startswith("ba7816bf")  # type: ignore[union-attr]
