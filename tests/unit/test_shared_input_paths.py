"""Files a shared run or campaign file may name: traces only from the trace search path or
beside the run file, checked here without echoing their content; base and variant_of only
beside the campaign file (or in ../runs/ for a base)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.config import load_run
from cganalysis.metrics.io import read_trace
from cganalysis.traces.check import parse_trace

SECRET = "SECRET-MARKER-7f3a"
RUN: dict[str, Any] = {
    "name": "r",
    "schedule": {"preset": "custom", "duration_s": 60, "competitor": []},
    "bottleneck": {"backend": "emulator", "qdisc": {"kind": "pfifo", "limit": 250}},
    "cg": {"source": "cga-cg"},
}


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the run file's folder that a run file must not reach."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.down"
    path.write_text(f"{SECRET}\n")
    return path


def _run_file(folder: Path, trace: str) -> Path:
    folder.mkdir(exist_ok=True)
    doc = copy.deepcopy(RUN)
    doc["bottleneck"]["trace"] = trace
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(ConfigError) as err:
        load_run(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and SECRET not in message
    for w in words:
        assert w in message
    return message


def test_an_absolute_trace_path_is_refused(tmp_path: Path, secret: Path) -> None:
    _refused(_run_file(tmp_path / "shared", str(secret)), "bottleneck.trace")


def test_a_trace_path_with_dotdot_is_refused(tmp_path: Path, secret: Path) -> None:
    _refused(_run_file(tmp_path / "shared", "../outside/secret.down"), "bottleneck.trace")


def test_a_trace_symlink_leading_out_is_refused(tmp_path: Path, secret: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "t").mkdir(parents=True)
    (shared / "t" / "link.down").symlink_to(secret)
    (shared / "bare.down").symlink_to(secret)
    _refused(_run_file(shared, "t/link.down"), "bottleneck.trace")
    _refused(_run_file(shared, "bare.down"), "bottleneck.trace")


def test_a_trace_beside_the_run_file_that_is_no_trace_names_the_line_only(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "bad.down").write_text(f"1\n2\n{SECRET}\n")
    message = _refused(_run_file(shared, "bad.down"), "bottleneck.trace", "line 3")
    assert "whole number" in message


def test_a_good_trace_beside_the_run_file_is_accepted(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "traces").mkdir(parents=True)
    (shared / "traces" / "ok.down").write_text("0\n1\n1\n5\n")
    cfg = load_run(_run_file(shared, "traces/ok.down"))
    assert cfg.bottleneck.forward.trace == str((shared / "traces" / "ok.down").resolve())


def test_reading_a_capacity_trace_does_not_echo_it(tmp_path: Path) -> None:
    path = tmp_path / "t.down"
    path.write_text(f"{SECRET}\n")
    with pytest.raises(ConfigError, match="line 1") as err:
        read_trace(path)
    assert SECRET not in str(err.value)
    path.write_text("1\n3\n10\n")
    assert read_trace(path).tolist() == [1.0, 3.0, 10.0]


@pytest.mark.parametrize(
    ("text", "what"),
    [(b"", "empty"), (b"5\n3\n", "line 2 goes back"), (b"0\n0\n", "last time is 0")],
)
def test_trace_content_errors(text: bytes, what: str) -> None:
    with pytest.raises(ConfigError, match=what):
        parse_trace(text, "t")


_LINES = st.one_of(
    st.integers(0, 10**12).map(lambda n: f"{n}\n".encode()),
    st.binary(max_size=8),
    st.just(f"{SECRET}\n".encode()),
)


@given(st.lists(_LINES, max_size=8).map(b"".join))
def test_a_parsed_trace_is_sorted_whole_milliseconds(data: bytes) -> None:
    try:
        times = parse_trace(data, "t")
    except ConfigError as err:
        assert SECRET not in str(err) and "\n" not in str(err)
        return
    assert SECRET.encode() not in data
    assert times.size and times[-1] > 0 and bool(np.all(np.diff(times) >= 0))


@given(st.text(max_size=30))
def test_an_accepted_trace_path_stays_beside_the_file(text: str) -> None:
    from cganalysis.traces.find import TRACE_NAME

    parts = text.split("/")
    if all(TRACE_NAME.fullmatch(p) for p in parts):
        assert not text.startswith(("/", "-", ".")) and ".." not in parts and "\n" not in text


# --- campaign base and variant_of ---------------------------------------------------------


def _campaign(folder: Path, **keys: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"campaign": "c", "factors": {"cca": {"cubic": {}}}, **keys}
    path = folder / "camp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _base(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = copy.deepcopy(RUN)
    doc["bottleneck"] = {"rate_mbit": 20, "qdisc": {"kind": "pfifo", "limit": 250}}
    path = folder / "base.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("key", ["base", "variant_of"])
def test_campaign_files_name_files_beside_them_only(tmp_path: Path, secret: Path, key: str) -> None:
    secret.write_text(f"campaign: {SECRET}\n")
    base = _base(tmp_path / "outside")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "escape.yaml").symlink_to(secret)
    for value in (str(base), "../outside/base.yaml", "escape.yaml", "a\nb.yaml", "-x.yaml"):
        path = _campaign(shared, **{key: value})
        with pytest.raises(ConfigError, match=rf"camp\.yaml: key {key}") as err:
            load_campaign(path)
        assert "\n" not in str(err.value) and SECRET not in str(err.value)


def test_a_base_beside_or_in_the_runs_folder_is_read(tmp_path: Path) -> None:
    _base(tmp_path / "cfg" / "runs")
    c = load_campaign(_campaign(tmp_path / "cfg" / "campaigns", base="../runs/base.yaml"))
    assert [r.run_id for r in c.runs] == ["c-cubic-r01"]
    _base(tmp_path / "cfg" / "campaigns")
    c = load_campaign(_campaign(tmp_path / "cfg" / "campaigns", base="base.yaml"))
    assert len(c.runs) == 1
