"""Every validator of names that reach a command line accepts nothing outside its grammar:
no newline (``re.match`` with ``^...$`` let a trailing one through), no leading dash (a tool
reads it as an option), no shell metacharacter, whatever hypothesis generates."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.errors import ConfigError
from cganalysis.testbed.spec.validate import (
    HOSTNAME,
    IFNAME,
    IPV4,
    SAFE_PATH,
    TOKEN,
    USERNAME,
    Section,
    check_name,
)

PATTERNS = {
    "IFNAME": IFNAME,
    "HOSTNAME": HOSTNAME,
    "USERNAME": USERNAME,
    "TOKEN": TOKEN,
    "SAFE_PATH": SAFE_PATH,
    "IPV4": IPV4,
}
#: What no validated name may hold: whitespace (newlines above all), quotes, the shell's
#: metacharacters, NUL.
FORBIDDEN = set(string.whitespace) | set("'\"`$;&|<>()*?[]{}!#\\\x00")

# Text that mixes the grammar's own characters with the dangerous ones, so hypothesis finds
# near misses (a valid name plus one newline) rather than only random noise.
near_miss = st.text(
    alphabet=st.sampled_from(
        list(string.ascii_letters + string.digits + "_.-/~+@=:,") + sorted(FORBIDDEN)
    ),
    max_size=40,
)


def accepts(pattern: re.Pattern[str], value: str) -> bool:
    """Whether Section.string accepts ``value`` under ``pattern`` (the one entry point)."""
    try:
        Section({"k": value}, "test.yaml").string("k", pattern=pattern)
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(PATTERNS))
@given(value=near_miss)
def test_nothing_outside_the_grammar_is_accepted(name: str, value: str) -> None:
    if accepts(PATTERNS[name], value):
        assert value, "the empty string was accepted"
        assert not FORBIDDEN & set(value), f"{name} accepted {value!r}"
        assert not value.startswith("-"), f"{name} accepted the option-like {value!r}"


@pytest.mark.parametrize("name", sorted(PATTERNS))
@pytest.mark.parametrize("suffix", ["\n", "\r\n", " ", "\x00"])
def test_a_valid_name_with_a_trailing_newline_is_refused(name: str, suffix: str) -> None:
    valid = {"IPV4": "10.0.0.1", "USERNAME": "cga"}.get(name, "router0")
    assert accepts(PATTERNS[name], valid)
    assert not accepts(PATTERNS[name], valid + suffix)


@pytest.mark.parametrize("value", ["-oProxyCommand=x", "--help", "-", "-x/y"])
def test_safe_path_refuses_a_leading_dash(value: str) -> None:
    with pytest.raises(ConfigError, match=r"test\.yaml: key k: .* is not allowed here"):
        Section({"k": value}, "test.yaml").string("k", pattern=SAFE_PATH)


@given(value=near_miss)
def test_check_name_matches_the_token_grammar_whole(value: str) -> None:
    try:
        check_name(value, "run id")
    except ConfigError:
        return
    assert TOKEN.fullmatch(value)
    assert not FORBIDDEN & set(value)


SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


#: Schema keys whose value is appended to another name, so may start with a dash.
SUFFIX_KEYS = {"campaign_suffix"}


def _schema_patterns() -> list[tuple[str, str]]:
    """(key, pattern) of every pattern in the workflow's configuration schema."""
    found: list[tuple[str, str]] = []

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.append((key, node["pattern"]))
            for name, child in node.items():
                walk(child, key if name in ("items", "properties") else str(name))
        elif isinstance(node, list):
            for child in node:
                walk(child, key)

    walk(yaml.safe_load(SCHEMA.read_text(encoding="utf-8")), "")
    return found


@pytest.mark.parametrize(("key", "pattern"), _schema_patterns())
@given(value=near_miss)
def test_the_workflow_schema_patterns_refuse_newlines_and_dashes(
    key: str, pattern: str, value: str
) -> None:
    # The workflow's validator (jsonschema) matches with re.search, as here.
    if re.search(pattern, value):
        assert not FORBIDDEN & set(value), f"{key}: {pattern} accepted {value!r}"
        if key not in SUFFIX_KEYS:
            assert not value.startswith("-"), f"{key}: {pattern} accepted {value!r}"


def test_the_workflow_schema_refuses_a_campaign_with_a_newline() -> None:
    from jsonschema import ValidationError, validate

    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    validate({"campaigns": ["tma2024"]}, schema)
    with pytest.raises(ValidationError):
        validate({"campaigns": ["evil\n"]}, schema)
