"""Which runs may share a table cell: the conditions a set of metrics documents holds.

A table files runs into cells by a few labels (TMA Table II: ``qdisc`` and ``cca``) and
averages the runs of a cell. Runs that also differ in another label (the extensions
campaign's ``link`` and ``cg``) are different experiments: their average is a condition
nobody ran. :func:`split_conditions` finds such labels and splits the runs into conditions
(one table each); :func:`require_one_condition` refuses instead, for tables that do not
split; :func:`select_runs` keeps the runs with given label values (``--where``).

A run's labels are its metrics document's ``run`` section (LABEL_KEYS and every label of
its meta.json) and ``capacity_mbps`` (the capacity it is filed under), which only serves as
a cell key: a measured or trace capacity differs a little from run to run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.metrics.rows import capacity_label
from cganalysis.metrics.runfacts import LABEL_KEYS

LabelValue = str | int | float | None
Labels = Mapping[str, LabelValue]

#: Labels that name a run, not its condition: repetitions of a condition differ in them.
IDENTITY: tuple[str, ...] = ("run_id", "campaign", "repetition")
#: Derived from the document's inputs; a cell key, never a splitting label.
CAPACITY_KEY = "capacity_mbps"


@dataclass(frozen=True)
class Condition:
    """``labels`` (label -> value, in naming order; empty when the runs hold one condition)
    and the runs it holds: ``run_ids`` and their ``indices`` in the documents given."""

    labels: Mapping[str, LabelValue]
    run_ids: tuple[str | None, ...]
    indices: tuple[int, ...]

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """(label, value as text) pairs, e.g. for a table's leading CSV columns."""
        return tuple((k, _text(v)) for k, v in self.labels.items())

    def describe(self) -> str:
        """``link: cellular, cg: gtfrc`` (empty for the only condition)."""
        return ", ".join(f"{k}: {v}" for k, v in self.pairs())


def run_labels(doc: Mapping[str, Any]) -> dict[str, LabelValue]:
    """A metrics document's labels: its ``run`` section and ``capacity_mbps``."""
    labels: dict[str, LabelValue] = dict(doc.get("run") or {})
    labels[CAPACITY_KEY] = capacity_label(doc)
    return labels


def _text(value: LabelValue) -> str:
    return "(unset)" if value is None else str(value)


def _sort_key(value: LabelValue) -> tuple[int, float, str]:
    """Numbers by value, then strings, unset last: conditions in the same order whatever
    the order of the files given."""
    if value is None:
        return (2, 0.0, "")
    if isinstance(value, int | float):
        return (0, float(value), "")
    return (1, 0.0, value)


def _candidates(labels: Sequence[Labels], skip: set[str]) -> list[str]:
    """Labels that could split, in the order their names are preferred: a campaign's own
    factors (``link``, ``cg``) before the standard labels that often follow from them (the
    extensions campaign's ``system`` is set by its ``cg`` level)."""
    seen: dict[str, None] = {}
    for lab in labels:
        for key in lab:
            if key not in skip and key != CAPACITY_KEY:
                seen.setdefault(key, None)
    extra = [k for k in seen if k not in LABEL_KEYS]
    return extra + [k for k in LABEL_KEYS if k in seen]


def _groups(
    labels: Sequence[Labels], indices: Sequence[int], keys: Sequence[str]
) -> dict[tuple[LabelValue, ...], list[int]]:
    out: dict[tuple[LabelValue, ...], list[int]] = {}
    for i in indices:
        out.setdefault(tuple(labels[i].get(k) for k in keys), []).append(i)
    return out


def _in_cells(labels: Sequence[Labels], cell_keys: Sequence[str]) -> list[int]:
    """Runs a table can show: those with a value for every cell key."""
    return [i for i, lab in enumerate(labels) if all(lab.get(k) is not None for k in cell_keys)]


def _determined(
    labels: Sequence[Labels], indices: Sequence[int], key: str, by: Sequence[str]
) -> bool:
    """Whether ``key`` has one value for each combination of the ``by`` labels."""
    return all(
        len({labels[i].get(key) for i in group}) <= 1
        for group in _groups(labels, indices, by).values()
    )


def varying_labels(
    labels: Sequence[Labels], cell_keys: Sequence[str], *, pooled: Sequence[str] = ()
) -> list[str]:
    """Labels with more than one value inside some cell, run identity and ``pooled``
    labels (pooled on purpose, as Xu's Tables 2 and 4 pool the CCAs) aside. A label tied
    to the cell keys (``queue`` follows ``qdisc``) has one value per cell: it does not
    vary."""
    skip = {*IDENTITY, *cell_keys, *pooled}
    shown = _in_cells(labels, cell_keys)
    return [
        k for k in _candidates(labels, skip) if not _determined(labels, shown, k, list(cell_keys))
    ]


def naming_labels(
    labels: Sequence[Labels], cell_keys: Sequence[str], *, pooled: Sequence[str] = ()
) -> list[str]:
    """The varying labels that name the conditions: each one not already determined by the
    cell keys and the labels kept before it (``system`` when it follows from ``cg``)."""
    shown = _in_cells(labels, cell_keys)
    kept: list[str] = []
    for key in varying_labels(labels, cell_keys, pooled=pooled):
        if not _determined(labels, shown, key, [*cell_keys, *kept]):
            kept.append(key)
    return kept


def split_conditions(
    docs: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    *,
    pooled: Sequence[str] = (),
) -> list[Condition]:
    """The conditions of ``docs`` for a table whose cells are keyed by ``cell_keys``.

    No label varies inside a cell: one condition holding every run (the table as it always
    was). Otherwise one condition per combination of the naming labels, ordered by their
    values; inside a condition every cell holds runs of one condition only, since every
    other varying label follows from the cell keys and the naming labels there.
    """
    labels = [run_labels(d) for d in docs]
    ids = tuple(_run_id(lab) for lab in labels)
    names = naming_labels(labels, cell_keys, pooled=pooled)
    if not names:
        return [Condition({}, ids, tuple(range(len(docs))))]
    groups = _groups(labels, range(len(docs)), names)
    return [
        Condition(dict(zip(names, key, strict=True)), tuple(ids[i] for i in idx), tuple(idx))
        for key, idx in sorted(groups.items(), key=lambda kv: [_sort_key(v) for v in kv[0]])
    ]


def _run_id(labels: Labels) -> str | None:
    run_id = labels.get("run_id")
    return None if run_id is None else str(run_id)


def mixing_message(
    docs: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    *,
    table: str,
    pooled: Sequence[str] = (),
) -> str | None:
    """Why ``table`` would mix conditions in its cells (None if it would not)."""
    labels = [run_labels(d) for d in docs]
    names = naming_labels(labels, cell_keys, pooled=pooled)
    if not names:
        return None
    parts = []
    for key in names:
        values = sorted({lab.get(key) for lab in labels}, key=_sort_key)
        parts.append(f"{key} ({', '.join(_text(v) for v in values)})")
    first = names[0]
    example = min((lab.get(first) for lab in labels), key=_sort_key)
    return (
        f"{table}: runs that would share a cell ({', '.join(cell_keys)}) differ in "
        f"{' and '.join(parts)}; a cell would average different conditions. Keep one "
        f"condition, e.g. `cganalysis tables ... --where {first}={_text(example)}`"
    )


def require_one_condition(
    docs: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    *,
    table: str,
    pooled: Sequence[str] = (),
) -> None:
    """Raises ConfigError if some cell of ``table`` would hold runs of different conditions."""
    message = mixing_message(docs, cell_keys, table=table, pooled=pooled)
    if message is not None:
        raise ConfigError(message)


def parse_where(items: Sequence[str], flag: str = "--where") -> dict[str, list[str]]:
    """``KEY=VALUE`` items -> KEY -> values (a key given twice accepts either value)."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"{flag} {item!r}: expected KEY=VALUE, e.g. {flag} link=fixed")
        out.setdefault(key, []).append(value)
    return out


def _matches(value: LabelValue, text: str) -> bool:
    if value is None:
        return False
    if str(value) == text:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(text) == float(value)  # 50 matches a capacity of 50.0
        except ValueError:
            return False
    return False


def select_runs(
    docs: Sequence[Mapping[str, Any]],
    where: Mapping[str, Sequence[str]],
    flag: str = "--where",
) -> list[Mapping[str, Any]]:
    """The documents whose labels have, for every key of ``where``, one of its values.

    A key no run has, or a value no run has for it, is an error naming it (a typo would
    otherwise give an empty table or, worse, one that looks complete).
    """
    labels = [run_labels(d) for d in docs]
    for key, values in where.items():
        present = sorted({lab[key] for lab in labels if lab.get(key) is not None}, key=_sort_key)
        if not present:
            known = sorted({k for lab in labels for k, v in lab.items() if v is not None})
            raise ConfigError(
                f"{flag} {key}=...: no run has the label {key!r}; the runs' labels are "
                f"{', '.join(known)}"
            )
        for value in values:
            if not any(_matches(v, value) for v in present):
                raise ConfigError(
                    f"{flag} {key}={value}: no run has {key} = {value!r}; its values are "
                    f"{', '.join(_text(v) for v in present)}"
                )
    kept = [
        doc
        for doc, lab in zip(docs, labels, strict=True)
        if all(any(_matches(lab.get(k), v) for v in vs) for k, vs in where.items())
    ]
    if not kept:
        asked = " ".join(f"{flag} {k}={v}" for k, vs in where.items() for v in vs)
        raise ConfigError(f"{asked}: no run has all of these label values together")
    return kept
