"""The streaming match (bounded memory) against the whole-capture match: on random
synthetic pairs, read in small chunks so that chunk boundaries cut through look-alike
groups, RTP sequence and IP ID wraps, reordering and the end guard, the tables and the
summary must be the same."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from cganalysis.capture.writer import write_pcap
from cganalysis.errors import MatchError
from cganalysis.matching import MatchOptions, match_files
from cganalysis.matching.streaming import match_to_files
from tests.support.synthetic import Knobs, knobs_strategy, make_scenario
from tests.unit.test_matching_directions import _acks

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dualpoint"


def assert_same(
    ingress: Path, egress: Path, chunk: int, options: MatchOptions | None = None
) -> None:
    try:
        ref = match_files(ingress, egress, options=options)
    except MatchError as err:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            with pytest.raises(MatchError) as got:
                match_to_files(
                    ingress,
                    egress,
                    out / "p.parquet",
                    out / "e.parquet",
                    options=options,
                    chunk_packets=chunk,
                )
            assert list(out.iterdir()) == [], "a failed match leaves no file"
        assert str(got.value) == str(err)
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        summary = match_to_files(
            ingress,
            egress,
            out / "p.parquet",
            out / "e.parquet",
            flows=out / "f.parquet",
            options=options,
            chunk_packets=chunk,
        )
        # nothing left behind (the tables kept aside while reverse flows are taken out)
        assert sorted(f.name for f in out.iterdir()) == ["e.parquet", "f.parquet", "p.parquet"]
        packets = pl.read_parquet(out / "p.parquet")
        alone = pl.read_parquet(out / "e.parquet")
        flows = pl.read_parquet(out / "f.parquet")
    assert_frame_equal(packets, ref.packets)
    assert_frame_equal(alone, ref.egress_only)
    # the mean is exact here (integer sum), polars' float sum may differ in the last bits
    assert_frame_equal(flows.drop("delay_mean_ms"), ref.flows.drop("delay_mean_ms"))
    assert_frame_equal(
        flows.select("delay_mean_ms"), ref.flows.select("delay_mean_ms"), rel_tol=1e-12
    )
    assert summary.to_dict() == ref.summary.to_dict()


@pytest.mark.parametrize("chunk", [1, 7, 100, 1 << 20])
def test_the_dualpoint_fixture_streams_to_the_same_tables(chunk: int) -> None:
    assert_same(FIXTURE / "ingress.pcap", FIXTURE / "egress.pcap", chunk)


def _disorder(df: pl.DataFrame, rng: np.random.Generator, share: float) -> pl.DataFrame:
    """Moves a share of the packets elsewhere in the file (their times stay)."""
    n = df.height
    order = np.arange(n)
    moved = np.flatnonzero(rng.random(n) < share)
    order[moved] = rng.permutation(order[moved]) if len(moved) else order[moved]
    return df[order]


def _spoil_timestamps(path: Path, rng: np.random.Generator, share: float) -> None:
    """Gives a share of the records an out-of-range sub-second field (no time)."""
    data = bytearray(path.read_bytes())
    off = 24
    while off + 16 <= len(data):
        caplen = int.from_bytes(data[off + 8 : off + 12], "little")
        if rng.random() < share:
            data[off + 4 : off + 8] = (0xFFFFFFFF).to_bytes(4, "little")
        off += 16 + caplen
    path.write_bytes(bytes(data))


cases = st.fixed_dictionaries(
    {
        "knobs": knobs_strategy(max_packets=200, max_udp=40),
        "chunk": st.integers(1, 64),
        "disorder_in": st.sampled_from([0.0, 0.0, 0.05, 0.3]),
        "disorder_eg": st.sampled_from([0.0, 0.0, 0.05]),
        "acks": st.sampled_from([0, 0, 10, 200]),
        "strays": st.integers(0, 3),
        "egress_stops_at": st.sampled_from([1.0, 0.5, 0.8]),
        "no_time": st.sampled_from([0.0, 0.0, 0.0, 0.02]),
        "max_delay_ms": st.sampled_from([2000.0, 4.0, 9.0]),
        "end_guard_ms": st.sampled_from([None, None, 0.0, 3.0]),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
# Egress chunks of one packet, two in a row without a time (read live, the watermark of a
# lookahead without a time once said that nothing earlier was to come).
@example(
    {
        "knobs": Knobs(
            seed=176,
            n_rtp=0,
            n_tcp=74,
            n_udp=40,
            p_drop=0.0,
            p_dup=0.2,
            p_retx=0.0,
            p_ce=0.0,
            jitter_us=0,
            rtp_seq_start=0,
            ip_id_start=0,
        ),
        "chunk": 1,
        "disorder_in": 0.3,
        "disorder_eg": 0.0,
        "acks": 10,
        "strays": 1,
        "egress_stops_at": 1.0,
        "no_time": 0.02,
        "max_delay_ms": 2000.0,
        "end_guard_ms": None,
    }
)
def test_streaming_equals_the_whole_capture_match(case: dict[str, object]) -> None:
    k = case["knobs"]
    assert isinstance(k, Knobs)
    scenario = make_scenario(k)
    if scenario.egress.height == 0:
        return
    rng = np.random.default_rng(k.seed)
    ingress, egress = scenario.ingress, scenario.egress
    n_acks = int(case["acks"])  # type: ignore[call-overload]
    if n_acks:  # a tap that sees both directions: ACKs reach egress first
        start = int(ingress["t_ns"].min())  # type: ignore[arg-type]
        at_eg = _acks(start + np.arange(n_acks, dtype=np.int64) * 1_000_000, 7)
        at_in = at_eg.with_columns(pl.col("t_ns") + 50_000)
        ingress = pl.concat([ingress, at_in.cast(ingress.schema)]).sort("t_ns")
        egress = pl.concat([egress, at_eg.cast(egress.schema)]).sort("t_ns")
    strays = int(case["strays"])  # type: ignore[call-overload]
    if strays:  # packets seen only at egress
        extra = egress.head(strays).with_columns(
            pl.col("payload_tag") + 1_000_000, pl.col("ip_id") ^ 0x5A5A
        )
        egress = pl.concat([egress, extra]).sort("t_ns")
    stop = float(case["egress_stops_at"])  # type: ignore[arg-type]
    if stop < 1.0:  # the egress capture stopped before the ingress capture
        t0, t1 = int(ingress["t_ns"].min()), int(ingress["t_ns"].max())  # type: ignore[arg-type]
        egress = egress.filter(pl.col("t_ns") < t0 + int((t1 - t0) * stop))
        if egress.height == 0:
            return
    ingress = _disorder(ingress, rng, float(case["disorder_in"]))  # type: ignore[arg-type]
    egress = _disorder(egress, rng, float(case["disorder_eg"]))  # type: ignore[arg-type]
    options = MatchOptions(
        max_delay_ms=float(case["max_delay_ms"]),  # type: ignore[arg-type]
        end_guard_ms=case["end_guard_ms"],  # type: ignore[arg-type]
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_pcap(folder / "in.pcap", ingress)
        write_pcap(folder / "eg.pcap", egress)
        no_time = float(case["no_time"])  # type: ignore[arg-type]
        if no_time:
            _spoil_timestamps(folder / "in.pcap", rng, no_time)
            _spoil_timestamps(folder / "eg.pcap", rng, no_time)
        assert_same(folder / "in.pcap", folder / "eg.pcap", int(case["chunk"]), options)  # type: ignore[call-overload]


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("max_delay_ms", [4.0, 9.0])
def test_an_egress_capture_that_stops_first_waits_for_the_end_guard(
    tmp_path: Path, seed: int, max_delay_ms: float
) -> None:
    """Packets lost in the last max-delay before the egress capture stopped get their
    verdict from the largest delay, known only at the end: they must wait for it."""
    scenario = make_scenario(Knobs(seed=seed, n_rtp=300, n_tcp=300, n_udp=100, p_drop=0.3))
    ingress = scenario.ingress
    t0, t1 = int(ingress["t_ns"].min()), int(ingress["t_ns"].max())  # type: ignore[arg-type]
    egress = scenario.egress.filter(pl.col("t_ns") < (t0 + t1) // 2)
    write_pcap(tmp_path / "in.pcap", ingress)
    write_pcap(tmp_path / "eg.pcap", egress)
    assert_same(tmp_path / "in.pcap", tmp_path / "eg.pcap", 5, MatchOptions(max_delay_ms))


@pytest.mark.parametrize("max_delay_ms", [9.0, 2000.0])
def test_packets_without_time_in_a_capture_out_of_order(
    tmp_path: Path, max_delay_ms: float
) -> None:
    """Rows without a time go last in time order; their flows are numbered last."""
    scenario = make_scenario(Knobs(seed=11, n_rtp=150, n_tcp=150, n_udp=50))
    rng = np.random.default_rng(11)
    write_pcap(tmp_path / "in.pcap", _disorder(scenario.ingress, rng, 0.2))
    write_pcap(tmp_path / "eg.pcap", scenario.egress)
    _spoil_timestamps(tmp_path / "in.pcap", rng, 0.05)
    _spoil_timestamps(tmp_path / "eg.pcap", rng, 0.05)
    for chunk in (1, 4, 64):
        assert_same(tmp_path / "in.pcap", tmp_path / "eg.pcap", chunk, MatchOptions(max_delay_ms))


def test_the_command_streams_large_captures_and_gives_the_same_files(tmp_path: Path) -> None:
    """`cganalysis packets` matches small captures in memory and large ones streaming
    (--stream-above-mb): the files are the same either way, byte for byte."""
    from cganalysis.cli import main
    from cganalysis.io import read_provenance

    ingress, egress = FIXTURE / "ingress.pcap", FIXTURE / "egress.pcap"
    out: dict[str, dict[str, pl.DataFrame]] = {}
    for how, limit in (("memory", "1000"), ("streaming", "0")):
        folder = tmp_path / how
        argv = ["packets", str(ingress), str(egress), "-o", str(folder / "p.parquet")]
        argv += ["--flows", str(folder / "f.parquet"), "--stream-above-mb", limit]
        assert main([*argv, "--chunk-packets", "64"]) == 0
        out[how] = {
            name: pl.read_parquet(folder / name)
            for name in ("p.parquet", "p.egress-only.parquet", "f.parquet")
        }
        out[how]["summary"] = pl.DataFrame([read_provenance(folder / "p.parquet")])
    for name in ("p.parquet", "p.egress-only.parquet", "summary"):
        assert_frame_equal(out["memory"][name], out["streaming"][name])
    for name in ("p.parquet", "p.egress-only.parquet"):
        assert (tmp_path / "memory" / name).read_bytes() == (
            tmp_path / "streaming" / name
        ).read_bytes()
    flows = out["memory"]["f.parquet"], out["streaming"]["f.parquet"]
    assert_frame_equal(flows[0], flows[1], rel_tol=1e-12)


@pytest.mark.parametrize("egress_stops_at", [1.0, 0.1])
def test_memory_holds_max_delay_of_packets_not_the_capture(
    tmp_path: Path, egress_stops_at: float
) -> None:
    """The buffers hold about max-delay of traffic plus a chunk, also when the ingress
    capture runs on long after the egress capture stopped."""
    scenario = make_scenario(Knobs(seed=5, n_rtp=20_000, n_tcp=20_000, n_udp=10_000))
    ingress = scenario.ingress  # ~5,000 packets/s for ~10 s
    t0, t1 = int(ingress["t_ns"].min()), int(ingress["t_ns"].max())  # type: ignore[arg-type]
    egress = scenario.egress.filter(pl.col("t_ns") < t0 + int((t1 - t0) * egress_stops_at))
    write_pcap(tmp_path / "in.pcap", ingress)
    write_pcap(tmp_path / "eg.pcap", egress)
    assert_same(tmp_path / "in.pcap", tmp_path / "eg.pcap", 1_000, MatchOptions(100.0))
    largest = _most_held(tmp_path / "in.pcap", tmp_path / "eg.pcap", tmp_path / "out")
    # 100 ms of traffic is ~500 packets: with chunks of 1,000 (one read ahead at each
    # point) and the matcher walking once half as many as it holds have come, a few
    # thousand at most, a tenth of the capture
    assert 0 < largest < 5_000, f"{largest} packets held of {ingress.height}"
    # and not more for a longer capture: its first half holds as much
    mid = t0 + (t1 - t0) // 2
    write_pcap(tmp_path / "in2.pcap", ingress.filter(pl.col("t_ns") < mid))
    write_pcap(tmp_path / "eg2.pcap", egress.filter(pl.col("t_ns") < mid))
    half = _most_held(tmp_path / "in2.pcap", tmp_path / "eg2.pcap", tmp_path / "out2")
    assert largest <= 1.25 * half, f"{largest} packets held, {half} for the first half"


def _most_held(ingress: Path, egress: Path, out: Path) -> int:
    """The most packets a streaming match (100 ms max delay, chunks of 1,000) held."""
    timings: dict[str, float] = {}
    match_to_files(
        ingress,
        egress,
        out / "p.parquet",
        out / "e.parquet",
        options=MatchOptions(100.0),
        chunk_packets=1_000,
        timings=timings,
    )
    return int(timings["most_held"])


def test_captures_given_the_wrong_way_round_fail_alike() -> None:
    with pytest.raises(MatchError):
        match_files(FIXTURE / "egress.pcap", FIXTURE / "ingress.pcap")
    assert_same(FIXTURE / "egress.pcap", FIXTURE / "ingress.pcap", 100)


FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"


@pytest.mark.parametrize("name", sorted(p.name for p in FORMATS.glob("*.pcap*")))
def test_every_format_fixture_streams_as_it_matches_in_memory(name: str) -> None:
    """Each reader fixture as both points (every packet its own twin), or the same error."""
    from cganalysis.errors import CaptureError

    path = FORMATS / name
    try:
        match_files(path, path)
    except CaptureError as err:
        with tempfile.TemporaryDirectory() as tmp, pytest.raises(CaptureError) as got:
            out = Path(tmp)
            match_to_files(path, path, out / "p.parquet", out / "e.parquet", chunk_packets=2)
        assert str(got.value) == str(err)
        return
    except MatchError:
        pass  # assert_same expects the same error
    assert_same(path, path, 2)


@pytest.mark.parametrize(
    ("chunk", "page_cache_bytes"), [(1, None), (64, None), (5_000, None), (64, 1)]
)
def test_streamed_files_are_the_in_memory_files_byte_for_byte(
    tmp_path: Path, chunk: int, page_cache_bytes: int | None
) -> None:
    """Reordering and losses, any chunk, and captures too big for the page cache (each
    pass dropping the pages it read): the same bytes either way (tables of several row
    groups of 2^18 rows: `benchmarks.bench_capture` compares them)."""
    from cganalysis.matching.native import match_files_native

    scenario = make_scenario(Knobs(seed=9, n_rtp=400, n_tcp=400, n_udp=200, p_drop=0.05))
    rng = np.random.default_rng(9)
    write_pcap(tmp_path / "in.pcap", _disorder(scenario.ingress, rng, 0.05))
    write_pcap(tmp_path / "eg.pcap", scenario.egress)
    memory = match_files_native(tmp_path / "in.pcap", tmp_path / "eg.pcap")
    memory.write(tmp_path / "m.parquet", tmp_path / "m.eo.parquet")
    summary = match_to_files(
        tmp_path / "in.pcap",
        tmp_path / "eg.pcap",
        tmp_path / "s.parquet",
        tmp_path / "s.eo.parquet",
        chunk_packets=chunk,
        page_cache_bytes=page_cache_bytes,
    )
    assert summary.to_dict() == memory.summary.to_dict()
    for a, b in (("m.parquet", "s.parquet"), ("m.eo.parquet", "s.eo.parquet")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes()


@pytest.mark.parametrize("keep_delays", [0, 7])
def test_the_flow_table_is_the_same_when_its_delays_spill_to_a_file(
    tmp_path: Path, keep_delays: int
) -> None:
    """Beyond the delays kept in memory, the percentiles come from a radix search over
    a file of them: the same flow table, and no file left."""
    from cganalysis.matching.native import match_files_native

    scenario = make_scenario(Knobs(seed=21, n_rtp=300, n_tcp=300, n_udp=100))
    write_pcap(tmp_path / "in.pcap", scenario.ingress)
    write_pcap(tmp_path / "eg.pcap", scenario.egress)
    out = tmp_path / "out"
    match_to_files(
        tmp_path / "in.pcap",
        tmp_path / "eg.pcap",
        out / "p.parquet",
        out / "e.parquet",
        flows=out / "f.parquet",
        chunk_packets=50,
        keep_delays=keep_delays,
    )
    assert sorted(p.name for p in out.iterdir()) == ["e.parquet", "f.parquet", "p.parquet"]
    memory = match_files_native(tmp_path / "in.pcap", tmp_path / "eg.pcap")
    expected = pl.DataFrame(memory.flow_table(), schema=pl.read_parquet(out / "f.parquet").schema)
    assert_frame_equal(pl.read_parquet(out / "f.parquet"), expected)


@pytest.mark.parametrize(("disorder", "read_first"), [(0.0, False), (0.01, False), (0.3, True)])
def test_the_egress_capture_is_read_once_unless_out_of_order_beyond_a_chunk(
    tmp_path: Path, disorder: float, read_first: bool
) -> None:
    """A pcap egress capture is read live in the matching pass (no first pass over it):
    in order, or out of order within a chunk and the next, and the first pass is made
    only when a packet comes earlier than that; the same bytes either way."""
    from cganalysis.matching.native import match_files_native

    scenario = make_scenario(Knobs(seed=5, n_rtp=300, n_tcp=300, n_udp=100, p_drop=0.05))
    egress = scenario.egress.sort("t_ns")
    if disorder:
        # A few packets moved to a neighbour's place, or many anywhere in the file.
        rng = np.random.default_rng(5)
        if read_first:
            egress = _disorder(egress, rng, disorder)
        else:
            order = np.arange(egress.height)
            for i in np.flatnonzero(rng.random(egress.height - 1) < disorder):
                order[i], order[i + 1] = order[i + 1], order[i]
            egress = egress[order]
    write_pcap(tmp_path / "in.pcap", scenario.ingress)
    write_pcap(tmp_path / "eg.pcap", egress)
    memory = match_files_native(tmp_path / "in.pcap", tmp_path / "eg.pcap")
    memory.write(tmp_path / "m.parquet", tmp_path / "m.eo.parquet")
    steps: dict[str, float] = {}
    match_to_files(
        tmp_path / "in.pcap",
        tmp_path / "eg.pcap",
        tmp_path / "s.parquet",
        tmp_path / "s.eo.parquet",
        chunk_packets=50,
        timings=steps,
    )
    assert steps["egress_first_pass"] == float(read_first)
    again = [s for s in steps if "out of order" in s]
    assert again == (
        ["matching (the egress capture out of order: read first)"] if read_first else []
    )
    for a, b in (("m.parquet", "s.parquet"), ("m.eo.parquet", "s.eo.parquet")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes()
