"""Which names a run's labels (``labels:`` and a campaign's factor names) may have.

Labels become columns of the tables next to the package's own columns: a label named
``t_s`` or ``run_id`` would replace a time or the run's name in every table it reaches.
A label key is a short lower-case identifier that no declared column has, except the
label columns themselves (``qdisc``, ``cca``, ``system``, ``queue``), which a run may set.

``system`` says which CG sender made the run's CG flow: the sender's name (``cg.source``),
optionally followed by ``-<variant>`` (``cga-cg-scream``, ``ecgp-proxy-fixed``), so no run
is labelled with a sender it did not run. Datasets published before 2026-11-29 label
cga-cg's runs ``ecgp...`` (:data:`LEGACY_SYSTEMS`; each run's meta.json's ``cg.source``
says ``cga-cg``): readers map them through :func:`canonical_system`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

from cganalysis.testbed.spec.validate import Section

#: A label key: starts with a letter, then letters, digits and underscores.
LABEL_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: Columns that are labels by design (RunConfig.default_labels): a run may set them.
LABEL_COLUMNS = ("qdisc", "cca", "system", "queue")
#: ``system`` labels of the datasets published before 2026-11-29, whose runs' sender was
#: cga-cg: the label each stands for now.
LEGACY_SYSTEMS: dict[str, str] = {
    "ecgp": "cga-cg",
    "ecgp-none": "cga-cg-none",
    "ecgp-scream": "cga-cg-scream",
    "ecgp-scream-g16": "cga-cg-scream-g16",
    "gtfrc": "cga-cg-gtfrc",
}


def canonical_system(system: str) -> str:
    """A recorded ``system`` label in today's spelling (legacy labels mapped)."""
    return LEGACY_SYSTEMS.get(system, system)


def system_label_error(system: str, source: str) -> str | None:
    """Why ``system`` cannot label a run whose CG sender is ``source``; None if it can."""
    if system == source or system.startswith(source + "-"):
        return None
    return (
        f"{system!r} does not name the run's CG sender: give {source!r} or "
        f"'{source}-<variant>' (cg.source is {source!r})"
    )


@cache
def reserved_columns() -> frozenset[str]:
    """Every column name the package declares (cganalysis.schemas and the metrics rows),
    less the label columns."""
    from cganalysis import schemas
    from cganalysis.metrics.registry import METRICS_ROLES, METRICS_RUNS

    names: set[str] = set()
    for value in [*vars(schemas).values(), METRICS_RUNS, METRICS_ROLES]:
        if isinstance(value, Mapping) and value and all(isinstance(k, str) for k in value):
            names.update(value)
    return frozenset(names - set(LABEL_COLUMNS))


def check_label_key(key: object, sec: Section) -> str:
    """``key`` if it may name a label; else one error line naming the file and the key."""
    text = str(key)
    if not isinstance(key, str) or not LABEL_KEY.fullmatch(text):
        raise sec.error(repr(text)[:40], "a label name is a lower-case identifier: a-z, 0-9 and _")
    if text in reserved_columns():
        raise sec.error(text, "is a column of the tables; give the label another name")
    return text
