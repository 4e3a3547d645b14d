"""Role rules: parsing, matching on either port, first match wins, reverse directions."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.errors import ConfigError
from cganalysis.metrics.roles import (
    RoleRule,
    assign_roles,
    dominant_direction,
    parse_rule,
    parse_rules,
    rules_from_mapping,
)
from tests.unit.synthetic import flow, table


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cg=udp:30002", RoleRule("cg", 17, 30002)),
        ("competitor=tcp", RoleRule("competitor", 6)),
        ("cg=udp:ssrc=0x64", RoleRule("cg", 17, None, 100)),
        ("cg=UDP:30002:ssrc=7", RoleRule("cg", 17, 30002, 7)),
        ("other=any", RoleRule("other", None)),
        ("competitor=6:5201", RoleRule("competitor", 6, 5201)),
    ],
)
def test_parse_rule(text: str, expected: RoleRule) -> None:
    assert parse_rule(text) == expected


def test_rule_text_round_trips() -> None:
    for text in ("cg=udp:30002", "competitor=tcp", "cg=udp:30002:ssrc=100", "other=any"):
        assert str(parse_rule(text)) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("cg", "missing '='"),
        ("cg=", "missing '='"),
        ("gamer=udp:1", "unknown role 'gamer'"),
        ("cg=sctp", "unknown protocol 'sctp'"),
        ("cg=udp:port", "port 'port' is not an integer"),
        ("cg=udp:70000", "port 70000 is outside"),
        ("cg=udp:1:2", "unexpected '2'"),
        ("cg=udp:ssrc=1:ssrc=2", "ssrc given twice"),
    ],
)
def test_bad_rules_name_the_rule_and_the_syntax(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_rule(text)
    assert says in str(err.value)
    assert repr(text) in str(err.value)
    assert "ROLE=PROTO[:PORT]" in str(err.value)


def test_rules_from_metadata_mapping_keep_order() -> None:
    rules = rules_from_mapping({"cg": ["udp:30002", "udp:30004"], "competitor": "tcp"})
    assert [str(r) for r in rules] == ["cg=udp:30002", "cg=udp:30004", "competitor=tcp"]


def _three_flows() -> pl.DataFrame:
    return table(
        flow([0.0], flow_id=0, proto=17, sport=30002, dport=40000),  # port on the source side
        flow([0.1], flow_id=1, proto=6, sport=5201, dport=50000),
        flow([0.2], flow_id=2, proto=17, sport=1111, dport=2222, rtp_ssrc=0x64),
        flow([0.3], flow_id=3, proto=1, sport=0, dport=0),
    )


def test_assign_roles_first_match_wins_and_port_matches_either_side() -> None:
    rules = parse_rules(["cg=udp:30002", "competitor=tcp", "cg=udp:ssrc=100", "competitor=udp"])
    roles = assign_roles(_three_flows(), rules).sort("flow_id").get_column("role").to_list()
    assert roles == ["cg", "competitor", "cg", "other"]


def test_no_rules_means_everything_is_other() -> None:
    roles = assign_roles(_three_flows(), []).get_column("role").unique().to_list()
    assert roles == ["other"]


def test_ssrc_rule_does_not_match_packets_without_rtp() -> None:
    rules = parse_rules(["cg=udp:ssrc=100"])
    roles = assign_roles(_three_flows(), rules).sort("flow_id").get_column("role").to_list()
    assert roles == ["other", "other", "cg", "other"]


@given(port=st.integers(0, 65535), sport=st.integers(0, 65535), dport=st.integers(0, 65535))
def test_port_rule_matches_iff_either_port_equals(port: int, sport: int, dport: int) -> None:
    df = flow([0.0], proto=17, sport=sport, dport=dport)
    role = assign_roles(df, [RoleRule("cg", 17, port)]).get_column("role").item()
    assert (role == "cg") == (port in (sport, dport))


def test_dominant_direction_drops_the_lighter_direction_of_a_connection() -> None:
    data = flow([0.0, 0.1, 0.2], flow_id=0, proto=6, src="a", sport=5201, dst="b", dport=9)
    acks = flow(
        [0.05, 0.15], flow_id=1, proto=6, src="b", sport=9, dst="a", dport=5201, size_bytes=52
    )
    other = flow([0.3], flow_id=2, proto=17, src="a", sport=1, dst="b", dport=2)
    kept, dropped = dominant_direction(table(data, acks, other))
    assert sorted(kept.get_column("flow_id").unique().to_list()) == [0, 2]
    assert dropped.select("src", "sport", "packets", "bytes").row(0) == ("b", 9, 2, 104)


def test_dominant_direction_sums_the_flows_of_one_direction() -> None:
    """Two flow ids on one directional 5-tuple (two RTP SSRCs) count together: each alone
    carries less than the other direction, both together more. The same answer when no
    packet has a flow id (grouped by the packets' ends then)."""
    ends = {"proto": 17, "src": "a", "sport": 30002, "dst": "b", "dport": 30002}
    one = flow([0.0, 0.1], flow_id=0, size_bytes=1000, **ends)
    two = flow([0.2, 0.3], flow_id=1, size_bytes=1000, **ends)
    back = flow([0.05, 0.15, 0.25], flow_id=2, size_bytes=1000, **{**ends, "src": "b", "dst": "a"})
    packets = table(one, two, back)
    kept, dropped = dominant_direction(packets)
    assert sorted(kept.get_column("flow_id").unique().to_list()) == [0, 1]
    assert dropped.select("src", "packets", "bytes").row(0) == ("b", 3, 3000)
    no_ids = packets.with_columns(pl.lit(None, dtype=pl.UInt32).alias("flow_id"))
    kept_no_ids, dropped_no_ids = dominant_direction(no_ids)
    assert kept_no_ids.drop("flow_id").equals(kept.drop("flow_id"))
    assert dropped_no_ids.equals(dropped)


def test_a_windows_packets_are_those_that_entered_in_it_half_open() -> None:
    """entered_between slices a table in ingress order: [start, end), as the filter it
    replaced selected, at the edges, outside the data and for an empty table."""
    from cganalysis.metrics.timebase import entered_between

    t = [0, 10, 10, 20, 30, 30, 40]
    packets = pl.DataFrame({"t_in_ns": t, "row": range(len(t))})

    def rows(a: int, b: int) -> list[int]:
        expected = packets.filter((pl.col("t_in_ns") >= a) & (pl.col("t_in_ns") < b))
        got = entered_between(packets, a, b)
        assert got.equals(expected)
        return got.get_column("row").to_list()

    assert rows(10, 30) == [1, 2, 3]
    assert rows(-5, 0) == [] and rows(41, 99) == [] and rows(30, 10) == []
    assert rows(0, 41) == list(range(7)) and rows(30, 31) == [4, 5]
    assert entered_between(packets.clear(), 0, 10).height == 0
