"""The project's cellular traces: statistics against the model, determinism, the search path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cganalysis.cli import main
from cganalysis.errors import ConfigError
from cganalysis.metrics.io import read_trace
from cganalysis.traces.find import find_trace
from cganalysis.traces.generate import TraceRecipe, generate
from cganalysis.traces.mahimahi import OPPORTUNITY_BYTES, opportunities, trace_stats
from cganalysis.traces.model import MODELS, rate_per_ms, state_sequence, stationary


def _batch_se(x: np.ndarray, batches: int = 40) -> float:
    """Standard error of the mean of a correlated series by batch means (batches much
    longer than a state's dwell time are about independent)."""
    means = x[: x.size // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(means.std(ddof=1) / np.sqrt(batches))


@pytest.mark.parametrize(("model", "direction"), [("lte", "down"), ("lte", "up"), ("5g", "down")])
def test_trace_statistics_match_the_model_within_sampling_error(model: str, direction: str) -> None:
    m = MODELS[model]
    recipe = TraceRecipe(model, seed=7, duration_s=2400, direction=direction)
    times = generate(recipe)
    st, model_says = trace_stats(times), stationary(m, direction)
    duration_ms = recipe.duration_s * 1000
    # Sampling tolerance from the realisation itself: per-second rate and outage indicator.
    rate = rate_per_ms(m, recipe.seed, duration_ms, direction)
    per_s = rate.reshape(-1, 1000).mean(axis=1)
    outage = (state_sequence(m, recipe.seed, duration_ms) == m.index("outage")).astype(float)
    se_rate, se_out = _batch_se(per_s), _batch_se(outage.reshape(-1, 1000).mean(axis=1))
    print(st.lines(), model_says, se_rate, se_out)
    assert abs(st.mean_rate_mbps - model_says.mean_rate_mbps) < 4 * se_rate
    # Outages seen in the file (silences > 50 ms) against the model's outage fraction; a
    # silence spans the outage plus up to one opportunity's spacing on each side.
    slack = st.outages * 0.03 / recipe.duration_s
    assert abs(st.outage_fraction - model_says.outage_fraction) < 4 * se_out + slack
    assert 0 < st.per_second_mbps["p5"] < st.per_second_mbps["p50"] < st.per_second_mbps["p95"]
    assert st.per_second_mbps["p95"] <= max(s.rate_mbps for s in m.states) * (1 + m.jitter)


def test_the_trace_carries_the_rate_to_within_one_opportunity() -> None:
    rate = np.full(1000, 12.0)  # 12 Mbit/s: 1500 bytes per ms, 1504 per opportunity
    times = opportunities(rate)
    assert times.size == int(12e6 / 8 / OPPORTUNITY_BYTES)
    counts = np.bincount(times, minlength=1000)
    assert set(counts.tolist()) <= {0, 1} and counts[:500].sum() in (498, 499)


def test_generation_is_deterministic_and_seeded() -> None:
    a = generate(TraceRecipe("lte", 3, 60))
    assert np.array_equal(a, generate(TraceRecipe("lte", 3, 60)))
    assert not np.array_equal(a, generate(TraceRecipe("lte", 4, 60)))
    assert a[-1] == 60_000 and np.all(np.diff(a) >= 0)
    # Both directions share the state sequence: the outages coincide.
    down, up = trace_stats(a), trace_stats(generate(TraceRecipe("lte", 3, 60, "up")))
    assert down.outages == up.outages
    assert up.mean_rate_mbps == pytest.approx(down.mean_rate_mbps * 0.5, rel=0.02)


def test_names_stand_for_recipes() -> None:
    recipe = TraceRecipe.from_name("cga-5g-s12-90s.up")
    assert recipe == TraceRecipe("5g", 12, 90, "up") and recipe.name == "cga-5g-s12-90s.up"
    assert TraceRecipe.from_name("cga-wifi-s1-90s.up") is None
    assert TraceRecipe.from_name("TMobile-LTE-short.down") is None


def test_search_path_finds_generates_and_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, runs = tmp_path / "mine", tmp_path / "runs"
    mine.mkdir()
    runs.mkdir()
    monkeypatch.setenv("CGA_TRACES", str(mine))
    monkeypatch.setenv("XDG_DATA_DIRS", str(tmp_path / "share"))
    (tmp_path / "share" / "mahimahi" / "traces").mkdir(parents=True)
    (tmp_path / "share" / "mahimahi" / "traces" / "Op.down").write_text("0\n5\n")
    assert find_trace("Op.down", runs) == tmp_path / "share/mahimahi/traces/Op.down"
    (mine / "Op.down").write_text("1\n5\n")  # the user's own folder comes first
    assert find_trace("Op.down", runs) == mine / "Op.down"
    got = find_trace("cga-lte-s1-20s.down", runs)
    assert got == mine / "cga-lte-s1-20s.down" and read_trace(got)[-1] == 20_000
    (runs / "x").mkdir()
    (runs / "x" / "y.down").write_text("1\n")
    assert find_trace("x/y.down", runs) == runs / "x" / "y.down"  # a path: not searched
    with pytest.raises(ConfigError, match="no absolute path, no"):
        find_trace("../x/y.down", runs)  # a shared run file reaches nothing outside
    with pytest.raises(ConfigError) as err:
        find_trace("Nowhere.down", runs, where="run.yaml: key bottleneck.trace")
    msg = str(err.value)
    assert msg.startswith("run.yaml: key bottleneck.trace: trace Nowhere.down not found")
    assert str(mine) in msg and str(tmp_path / "share/mahimahi/traces") in msg


def test_cli_generate_prints_statistics_and_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "trace",
                "generate",
                "--model",
                "5g",
                "--seed",
                "2",
                "--duration-s",
                "30",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (tmp_path / "cga-5g-s2-30s.down").is_file()
    assert "mean rate:" in out and "per-second rate" in out and "model (long run)" in out
    assert main(["trace", "generate", "--duration-s", "0", str(tmp_path / "x")]) == 2
