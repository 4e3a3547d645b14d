"""The one plotting style: labels, colours and markers from ``configs/plotting.yaml``.

Every figure and table asks the :class:`Style` for a name's label and look, so a change in
the YAML file changes every artefact at once (one place, as in pantheon's config).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from cganalysis.errors import ConfigError
from cganalysis.jsoncheck import check_document

if TYPE_CHECKING:  # importing matplotlib costs a table job most of its time
    from matplotlib.typing import RcKeyType

Kind = Literal["roles", "qdisc", "cca", "system"]
KINDS: tuple[Kind, ...] = ("roles", "qdisc", "cca", "system")
ENV_VAR = "CGANALYSIS_PLOTTING"
RELATIVE_PATH = Path("configs") / "plotting.yaml"

_colour = {"type": "string", "pattern": "^#[0-9A-Fa-f]{6}$"}
_entry = {
    "type": "object",
    "required": ["label", "color"],
    "properties": {
        "label": {"type": "string"},
        "short": {"type": "string"},
        "color": _colour,
        "marker": {"type": "string"},
        "linestyle": {"type": "string"},
    },
    "additionalProperties": False,
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["figure", "events", "heatmap", *KINDS],
    "properties": {
        "figure": {
            "type": "object",
            "required": [
                "column_width_in",
                "full_width_in",
                "font_size",
                "font_family",
                "line_width",
                "marker_size",
                "dpi",
            ],
            "properties": {
                "column_width_in": {"type": "number", "exclusiveMinimum": 0},
                "full_width_in": {"type": "number", "exclusiveMinimum": 0},
                "font_size": {"type": "number", "exclusiveMinimum": 0},
                "font_family": {"type": "string"},
                "line_width": {"type": "number", "exclusiveMinimum": 0},
                "marker_size": {"type": "number", "exclusiveMinimum": 0},
                "dpi": {"type": "integer", "minimum": 50},
            },
            "additionalProperties": False,
        },
        "events": {
            "type": "object",
            "properties": {
                "step_color": _colour,
                "step_linestyle": {"type": "string"},
                "capacity_color": _colour,
                "capacity_linestyle": {"type": "string"},
            },
            "required": ["step_color", "step_linestyle", "capacity_color", "capacity_linestyle"],
            "additionalProperties": False,
        },
        "heatmap": {
            "type": "object",
            "properties": {
                "fairness_cmap": {"type": "string"},
                "time_cmap": {"type": "string"},
                "never_color": _colour,
                "missing_color": _colour,
            },
            "required": ["fairness_cmap", "time_cmap", "never_color", "missing_color"],
            "additionalProperties": False,
        },
        **{k: {"type": "object", "additionalProperties": _entry} for k in KINDS},
    },
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Entry:
    label: str
    color: str
    short: str
    marker: str = "o"
    linestyle: str = "-"


@dataclass(frozen=True)
class FigureStyle:
    column_width_in: float
    full_width_in: float
    font_size: float
    font_family: str
    line_width: float
    marker_size: float
    dpi: int


@dataclass(frozen=True)
class Style:
    figure: FigureStyle
    events: Mapping[str, str]
    heatmap: Mapping[str, str]
    entries: Mapping[str, Mapping[str, Entry]]
    source: str = ""

    def entry(self, kind: Kind, key: object) -> Entry:
        """The look of ``key``; an unknown key is drawn in grey under its own name."""
        name = "" if key is None else str(key)
        found = self.entries.get(kind, {}).get(name)
        return found if found is not None else Entry(name, "#777777", name)

    def label(self, kind: Kind, key: object, *, short: bool = False) -> str:
        e = self.entry(kind, key)
        return e.short if short else e.label

    def color(self, kind: Kind, key: object) -> str:
        return self.entry(kind, key).color

    def order(self, kind: Kind, keys: Iterable[object]) -> list[str]:
        """``keys`` in the order the style file lists them, unknown ones last (sorted)."""
        known = list(self.entries.get(kind, {}))
        names = {str(k) for k in keys if k is not None}
        return [k for k in known if k in names] + sorted(names - set(known))

    def rc(self) -> dict[RcKeyType, Any]:
        """Matplotlib rcParams for ``matplotlib.rc_context``: sizes for print at 100 %."""
        f = self.figure
        return {
            "font.size": f.font_size,
            "font.family": f.font_family,
            "axes.titlesize": f.font_size,
            "axes.labelsize": f.font_size,
            "xtick.labelsize": f.font_size - 1,
            "ytick.labelsize": f.font_size - 1,
            "legend.fontsize": f.font_size - 1,
            "lines.linewidth": f.line_width,
            "lines.markersize": f.marker_size,
            "axes.linewidth": 0.6,
            "xtick.major.width": 0.6,
            "ytick.major.width": 0.6,
            "grid.linewidth": 0.4,
            "grid.alpha": 0.5,
            "savefig.dpi": f.dpi,
            "figure.dpi": 100,
            "pdf.fonttype": 42,  # embed TrueType: editable text, accepted by publishers
            "ps.fonttype": 42,
            "mathtext.default": "regular",
        }


def find_style_file(start: Path | None = None) -> Path:
    """``$CGANALYSIS_PLOTTING``, else ``configs/plotting.yaml`` in ``start`` (default: the
    working directory) or a parent of it: the project being worked on, never the package's
    own location (an installed package has no configs folder)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / RELATIVE_PATH
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"no {RELATIVE_PATH} found in {here} or above: run from the project's folder, pass "
        f"the style file's path (--style) or set {ENV_VAR}"
    )


def style_from_mapping(raw: Mapping[str, Any], source: str = "") -> Style:
    check_document(raw, SCHEMA, f"plotting style {source}")
    entries: dict[str, dict[str, Entry]] = {
        kind: {
            str(name): Entry(
                label=e["label"],
                color=e["color"],
                short=e.get("short", e["label"]),
                marker=e.get("marker", "o"),
                linestyle=e.get("linestyle", "-"),
            )
            for name, e in raw[kind].items()
        }
        for kind in KINDS
    }
    return Style(
        figure=FigureStyle(**raw["figure"]),
        events=dict(raw["events"]),
        heatmap=dict(raw["heatmap"]),
        entries=entries,
        source=source,
    )


def load_style(path: Path | None = None) -> Style:
    """The style from ``path`` (default: :func:`find_style_file`)."""
    path = path if path is not None else find_style_file()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"plotting style {path}: cannot read ({err.strerror})") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"plotting style {path}: not valid YAML ({err})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"plotting style {path}: expected a mapping at the top level")
    return style_from_mapping(raw, str(path))
