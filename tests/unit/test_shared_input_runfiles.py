"""Run and campaign files from other labs: what they may add to a sender's command line,
which labels they may set, and how much memory or time a small file may ask for. Every
refusal is one ConfigError line naming the file and the key."""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.cg.senderargs import CGA_CG_SEND, SCREAM_BW_TEST_TX, SENDER_OPTIONS
from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.config import load_run, parse_run
from cganalysis.experiment.labelkeys import LABEL_COLUMNS, reserved_columns
from cganalysis.experiment.sources import SOURCES
from cganalysis.io import read_json_object, read_yaml

RUN: dict[str, Any] = {
    "name": "r",
    "schedule": {"preset": "custom", "duration_s": 60, "competitor": []},
    "bottleneck": {"rate_mbit": 20, "qdisc": {"kind": "pfifo", "limit": 250}},
    "cg": {"source": "cga-cg"},
}


def _run(**over: Any) -> dict[str, Any]:
    doc = copy.deepcopy(RUN)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key].update(value)
        else:
            doc[key] = value
    return doc


def _refused(doc: dict[str, Any], tmp_path: Path, *words: str) -> str:
    path = tmp_path / "shared.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as err:
        load_run(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path))
    for w in words:
        assert w in message
    return message


# --- cg.sender_args ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "args", "word"),
    [
        ("cga-cg", ["--log", "/etc"], "'--log'"),
        ("cga-cg", ["--frames", "/etc/shadow"], "'--frames'"),
        ("cga-cg", ["--duration", "100000"], "'--duration'"),
        ("cga-cg", ["--spin-us=50"], "'--spin-us=50'"),
        ("cga-cg", ["--seed", "-1"], "'-1'"),
        ("cga-cg", ["--seed", "1\n--log"], "'1\\n--log'"),
        ("cga-cg", ["--l4s-alpha-gain", "inf"], "'inf'"),
        ("cga-cg", ["--l4s-alpha-gain"], "'--l4s-alpha-gain'"),
        ("cga-cg", ["--profile", "ericsson-2024"], "'ericsson-2024'"),
        ("scream-reference", ["-log", "/etc/cron.d/x"], "'-log'"),
        ("scream-reference", ["-key", "2"], "'-key'"),
        ("scream-reference", ["-rand", "-log"], "'-log'"),
    ],
)
def test_sender_args_outside_the_allow_list_are_refused(
    tmp_path: Path, source: str, args: list[str], word: str
) -> None:
    doc = _run(cg={"source": source, "sender_args": args})
    message = _refused(doc, tmp_path, "cg.sender_args", word)
    first = next(iter(SENDER_OPTIONS[source]))
    assert first in message  # the allowed options are listed


def test_sender_args_on_the_allow_list_pass(tmp_path: Path) -> None:
    cfg = parse_run(
        _run(cg={"sender_args": ["--l4s-alpha-gain", 0.0625, "--relaxed-pacing", "--seed", 7]}),
        "r.yaml",
        tmp_path,
    )
    assert cfg.cg.sender_args == ("--l4s-alpha-gain", "0.0625", "--relaxed-pacing", "--seed", "7")
    # SCReAM's three profiles (native/cg/src/cli/args.rs), aca6556's as the paper ran it
    for profile in ("ericsson", "ericsson-2023", "draft"):
        run = parse_run(_run(cg={"sender_args": ["--profile", profile]}), "r.yaml", tmp_path)
        assert run.cg.sender_args == ("--profile", profile)
        assert run.cg.to_dict()["sender_args"] == ["--profile", profile]  # meta.json's cg
    ref = parse_run(
        _run(cg={"source": "scream-reference", "sender_args": ["-key", 2, 4, "-rand", 10]}),
        "r.yaml",
        tmp_path,
    )
    assert ref.cg.sender_args == ("-key", "2", "4", "-rand", "10")


def test_every_source_taking_sender_args_has_an_allow_list() -> None:
    takers = {name for name, s in SOURCES.items() if s.takes_sender_args}
    assert takers == set(SENDER_OPTIONS)
    for options in (CGA_CG_SEND, SCREAM_BW_TEST_TX):
        assert not {"--log", "--frames", "--bind", "-log", "-append", "-if"} & set(options)


_OPTION_WORDS = st.sampled_from(sorted({*CGA_CG_SEND, *SCREAM_BW_TEST_TX}))


@given(
    st.lists(
        st.one_of(_OPTION_WORDS, st.text(max_size=12), st.sampled_from(["/etc", "..", "-1"])),
        min_size=1,
        max_size=6,
    )
)
def test_no_accepted_sender_word_is_a_path_or_a_dash_value(words: list[str]) -> None:
    """Whatever is accepted is options of the list, each followed by plain values: no
    newline, no path, no value starting with a dash."""
    from cganalysis.cg.senderargs import check_sender_args

    for source, options in SENDER_OPTIONS.items():
        try:
            accepted = check_sender_args(source, words, "f.yaml")
        except ConfigError as err:
            assert "\n" not in str(err) and "f.yaml: key cg.sender_args" in str(err)
            continue
        i = 0
        while i < len(accepted):
            assert accepted[i] in options
            n = len(options[accepted[i]])
            for value in accepted[i + 1 : i + 1 + n]:
                assert value[:1] not in ("-", "/", ".") and "\n" not in value
                assert "/" not in value and ".." not in value
            i += 1 + n


# --- labels ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["t_s", "run_id", "rate_mbps", "role", "Bad", "a b", "x\ny"])
def test_label_keys_that_name_a_column_or_are_not_identifiers_are_refused(
    tmp_path: Path, key: str
) -> None:
    _refused(_run(labels={key: "v"}), tmp_path, "labels")


def test_label_columns_stay_settable(tmp_path: Path) -> None:
    cfg = parse_run(_run(labels={"qdisc": "htb", "link": "lte"}), "r.yaml", tmp_path)
    assert cfg.labels == {"qdisc": "htb", "link": "lte"}
    assert "t_s" in reserved_columns() and not set(LABEL_COLUMNS) & reserved_columns()


@given(st.text(max_size=20))
def test_an_accepted_label_key_is_an_identifier_and_no_column(key: str) -> None:
    try:
        parse_run(_run(labels={key: "v"}), "r.yaml", Path())
    except ConfigError as err:
        assert "\n" not in str(err)
        return
    assert key.isidentifier() and key == key.lower() and key not in reserved_columns()


# --- sizes: YAML, JSON, run ids, runs, durations, numbers --------------------------------


def test_a_yaml_alias_bomb_is_one_line_and_fast(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    doc = yaml.safe_dump(_run())
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n" + doc + "description: *a9\n")
    assert path.stat().st_size < 2000
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"bomb\.yaml: .*aliases") as err:
        load_run(path)
    assert time.monotonic() - start < 5 and "\n" not in str(err.value)


def test_big_and_deep_yaml_files_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("description: " + "x" * (2 << 20) + "\n")
    with pytest.raises(ConfigError, match=r"big\.yaml: larger than 1024 KiB"):
        read_yaml(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml: nested") as err:
        read_yaml(deep)
    assert "\n" not in str(err.value)


def test_deep_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    path.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match=r"run metadata .*meta\.json: nested too deeply"):
        read_json_object(path, "run metadata")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"a": [1, 2]}))
    assert read_json_object(ok, "run metadata") == {"a": [1, 2]}


def test_a_huge_integer_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(
        yaml.safe_dump(_run()).replace("source: cga-cg", f"rate_mbit: {10**400}\n  source: cga-cg")
    )
    with pytest.raises(ConfigError, match=r"huge\.yaml: .*64 bits") as err:
        load_run(path)
    assert "\n" not in str(err.value)


def test_an_endless_duration_is_refused(tmp_path: Path) -> None:
    sched = {"preset": "custom", "duration_s": 1e308, "competitor": [], "time_scale": 10}
    _refused(_run(schedule=sched), tmp_path, "schedule.time_scale", "one day")
    sched = {"preset": "custom", "duration_s": 100_000, "competitor": []}
    _refused(_run(schedule=sched), tmp_path, "schedule.time_scale", "one day")


def _campaign(tmp_path: Path, **over: Any) -> Path:
    doc: dict[str, Any] = {
        "campaign": "c",
        "run": _run(),
        "factors": {"cca": {"cubic": {"competitor": {"cca": "cubic"}}}},
    }
    doc.update(over)
    path = tmp_path / "camp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    "template",
    [
        "{campaign}-{repetition:999999999}",
        "{campaign}-{repetition:>9}",
        "{campaign!r}",
        "{campaign.__class__}",
        "{cca[0]}",
        "x\n{campaign}",
        "../{campaign}",
        "{unknown}",
    ],
)
def test_run_id_templates_outside_the_grammar_are_refused(tmp_path: Path, template: str) -> None:
    path = _campaign(tmp_path, run_id=template)
    with pytest.raises(ConfigError, match=r"camp\.yaml: key run_id") as err:
        load_campaign(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("level", ["x1.51", "v2.0"])
def test_a_run_id_with_a_dot_is_refused_naming_it(tmp_path: Path, level: str) -> None:
    """The workflow names a run's files <run_id>.<what>.<ext>; a dotted id found no input
    in its report rules (a MissingInputException naming no key)."""
    path = _campaign(tmp_path, factors={"scale": {level: {}}}, run_id="{campaign}-{scale}")
    with pytest.raises(
        ConfigError, match=rf"camp\.yaml: key run_id: c-{re.escape(level)}: no '\.'"
    ):
        load_campaign(path)


@given(st.text(max_size=30))
def test_an_accepted_run_id_template_makes_plain_ids(template: str) -> None:
    from cganalysis.experiment.campaignrules import check_run_id_template
    from cganalysis.testbed.spec.validate import Section

    sec = Section({"run_id": template}, "c.yaml")
    try:
        check_run_id_template(sec, template, ["campaign", "repetition"])
    except ConfigError:
        return
    run_id = template.format(campaign="c", repetition=1)
    assert len(run_id) <= len(template) + 9 and "\n" not in run_id and "/" not in run_id


def test_too_many_runs_are_refused_before_any_is_planned(tmp_path: Path) -> None:
    levels = {f"l{i}": {} for i in range(30)}
    factors = {"a": levels, "b": levels, "c": levels}  # 27,000 runs
    path = _campaign(tmp_path, factors=factors)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"camp\.yaml: key factors: 27000 runs"):
        load_campaign(path)
    assert time.monotonic() - start < 5
