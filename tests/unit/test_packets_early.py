"""``cganalysis packets`` starts reading its captures before it parses its arguments
(:mod:`cganalysis.matching.early`): which command lines it reads early, that the match then
takes the options parsed after, and that a read not taken is dropped."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cganalysis import _native
from cganalysis.cli import main
from cganalysis.matching import MatchOptions, early, match_files
from tests.support.synthetic import Knobs, make_scenario

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dualpoint"
IN, EG = str(FIXTURE / "ingress.pcap"), str(FIXTURE / "egress.pcap")


@pytest.mark.parametrize(
    ("words", "read_early"),
    [
        ([IN, EG, "-o", "p.parquet"], True),
        (["-o", "p.parquet", IN, EG], True),
        ([IN, EG, "--output=p.parquet", "--max-delay-ms", "15", "--end-guard-ms=5"], True),
        ([IN, EG, "-o", "p.parquet", "--flows", "f.parquet", "--summary", "s.json"], True),
        # options that choose the engine or streaming, their prefixes, help: parsed first
        ([IN, EG, "-o", "p.parquet", "--engine", "pyshark"], False),
        ([IN, EG, "-o", "p.parquet", "--stream-above-mb", "0"], False),
        ([IN, EG, "-o", "p.parquet", "--stream", "0"], False),
        ([IN, EG, "-op.parquet"], False),
        ([IN, EG, "-h"], False),
        # not two regular files
        ([IN, "-o", "p.parquet"], False),
        ([IN, EG, EG, "-o", "p.parquet"], False),
        ([IN, str(FIXTURE), "-o", "p.parquet"], False),
        ([IN, str(FIXTURE / "missing.pcap"), "-o", "p.parquet"], False),
    ],
)
def test_which_command_lines_are_read_early(words: list[str], read_early: bool) -> None:
    assert (early.early_captures(words) is not None) is read_early


def test_the_plain_options_are_the_commands_own_and_take_one_value() -> None:
    """An option renamed or made a flag in the parser would leave the early start reading
    a command line wrongly: each must be one of ``packets``' options, taking one value,
    and none may choose the engine or streaming."""
    from cganalysis.cli import build_parser

    sub = next(a for a in build_parser("packets")._actions if a.dest == "command")
    parser = sub.choices["packets"]  # type: ignore[union-attr]
    by_flag = {flag: action for action in parser._actions for flag in action.option_strings}
    for flag in early._PLAIN_OPTIONS:
        action = by_flag[flag]
        assert action.nargs is None and action.const is None, flag
        assert action.dest not in {"engine", "stream_above_mb", "chunk_packets"}, flag


def test_captures_above_the_streaming_threshold_are_not_read_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = (FIXTURE / "ingress.pcap").stat().st_size + (FIXTURE / "egress.pcap").stat().st_size
    monkeypatch.setattr(early, "DEFAULT_STREAM_ABOVE_MB", size / 1e6 - 1e-6)
    assert early.early_captures([IN, EG, "-o", str(tmp_path / "p.parquet")]) is None
    monkeypatch.setattr(early, "DEFAULT_STREAM_ABOVE_MB", size / 1e6)
    assert early.early_captures([IN, EG, "-o", str(tmp_path / "p.parquet")]) == (IN, EG)


def test_the_command_matches_the_early_read_with_the_options_parsed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The match started early is the one that runs (the other way to start one fails
    here), with the options the command line gives after the captures."""
    ingress, egress = make_scenario(Knobs(seed=11, jitter_us=20_000)).write(tmp_path)

    def not_this_way(*args: object) -> None:
        raise AssertionError("the match was started again instead of taking the early read")

    monkeypatch.setattr(_native, "start_match", not_this_way)
    out = tmp_path / "p.parquet"
    args = ["packets", str(ingress), str(egress), "-o", str(out)]
    assert main([*args, "--max-delay-ms", "15", "--end-guard-ms", "5"]) == 0
    reference = match_files(ingress, egress, options=MatchOptions(15.0, 5.0))
    assert_frame_equal(pl.read_parquet(out), reference.packets)
    assert not early._early, "the read was taken"


def test_a_command_line_not_read_early_matches_as_usual(tmp_path: Path) -> None:
    ingress, egress = make_scenario(Knobs(seed=3)).write(tmp_path)
    out = tmp_path / "p.parquet"
    # an abbreviated --stream-above-mb: streaming, which the early read must not pre-empt
    assert main(["packets", str(ingress), str(egress), "-o", str(out), "--stream", "0"]) == 0
    assert_frame_equal(pl.read_parquet(out), match_files(ingress, egress).packets)


def test_a_read_not_taken_is_dropped_when_the_command_ends(tmp_path: Path) -> None:
    # The options are refused after the captures started to be read.
    with pytest.raises(SystemExit, match="must not be negative"):
        main(["packets", IN, EG, "-o", str(tmp_path / "p.parquet"), "--max-delay-ms", "-1"])
    assert not early._early
    # A read of other captures is not taken for these.
    early.start_early([IN, EG, "-o", str(tmp_path / "p.parquet")])
    assert early._take_early(Path(EG), Path(IN)) is None
    assert not early._early


def test_a_read_needs_its_options_once() -> None:
    pending = _native.start_read(IN, EG)
    with pytest.raises(RuntimeError, match="no options yet"):
        pending.result()
    pending.match_with(2_000_000_000)
    with pytest.raises(RuntimeError, match="already given its options"):
        pending.match_with(2_000_000_000)
    tables, result = pending.result()
    assert tables is not None and result["counts"]["packets_in"] > 0
    with pytest.raises(ValueError, match="must not be negative"):
        _native.start_read(IN, EG).match_with(-1)
