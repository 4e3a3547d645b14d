"""The plotting style file: loading, validation errors, lookups."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.report.style import find_style_file, load_style, style_from_mapping

REPO = Path(__file__).resolve().parents[2]
STYLE = REPO / "configs" / "plotting.yaml"


def test_the_committed_style_loads_and_covers_the_papers_names() -> None:
    style = load_style(STYLE)
    for kind, names in {
        "qdisc": ("pfifo", "htb", "dualpi2", "sqf"),
        "cca": ("cubic", "bbr", "bbr2"),
        "roles": ("cg", "competitor", "other"),
        "system": ("stadia", "geforce", "luna"),
    }.items():
        for name in names:
            assert name in style.entries[kind], f"{kind}.{name} missing from {STYLE}"
    # TMA 2024: CG blue solid, iperf orange with circle markers.
    cg, tcp = style.entry("roles", "cg"), style.entry("roles", "competitor")
    assert (cg.linestyle, cg.marker, tcp.marker) == ("-", "", "o")
    assert style.label("qdisc", "pfifo", short=True) == "Droptail"
    assert style.rc()["pdf.fonttype"] == 42


def test_unknown_names_fall_back_to_their_own_name() -> None:
    style = load_style(STYLE)
    e = style.entry("qdisc", "netem")
    assert (e.label, e.short, e.color) == ("netem", "netem", "#777777")
    assert style.order("qdisc", ["zzz", "htb", "pfifo"]) == ["pfifo", "htb", "zzz"]


def test_errors_name_the_key(tmp_path: Path) -> None:
    raw = yaml.safe_load(STYLE.read_text())
    raw["qdisc"]["htb"]["color"] = "green"
    with pytest.raises(ConfigError, match=r"key qdisc\.htb\.color"):
        style_from_mapping(raw, "x.yaml")
    raw = yaml.safe_load(STYLE.read_text())
    del raw["figure"]["dpi"]
    with pytest.raises(ConfigError, match="'dpi' is a required property"):
        style_from_mapping(raw, "x.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("figure: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_style(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_style(tmp_path / "missing.yaml")


def test_find_style_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CGANALYSIS_PLOTTING", raising=False)
    assert find_style_file(REPO / "notebooks") == STYLE
    monkeypatch.setenv("CGANALYSIS_PLOTTING", str(tmp_path / "mine.yaml"))
    assert find_style_file() == tmp_path / "mine.yaml"


def test_find_style_file_outside_a_project_names_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed package has no configs folder: outside a project the lookup must not
    # reach into wherever the package happens to live, and the error says what to do.
    monkeypatch.delenv("CGANALYSIS_PLOTTING", raising=False)
    with pytest.raises(ConfigError, match="--style"):
        find_style_file(tmp_path)
