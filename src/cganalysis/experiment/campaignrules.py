"""What a shared campaign file may name and ask for: which run files (``base:``,
``variant_of:``), which run ids (``run_id:``) and how many runs.

Campaign files come from other labs and are read as root, so ``base`` and ``variant_of``
name files beside the campaign file (a plain relative path, no ``..``, still beside it
once symlinks are resolved); a base may also be in the configuration tree's ``runs/``
folder, as ``../runs/NAME.yaml``. A ``run_id`` template uses the campaign's own fields
with at most a small zero-padded width: ``{rep:999999999}`` would build a gigabyte.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from pathlib import Path

from cganalysis.testbed.spec.validate import Section

#: One component of a relative path: a plain file or folder name.
PATH_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
#: The run files' folder of a configuration tree, seen from its campaigns folder.
RUNS_FOLDER = ("..", "runs")
#: Runs one campaign may plan (factor levels x repetitions); the largest has ~200.
MAX_RUNS = 10_000
#: A run_id field's format: nothing, or a zero-padded width of one digit (``02d``).
FIELD_FORMAT = re.compile(r"(0?[1-9]d?)?")
#: Text between a run_id's fields: what a run id may hold.
LITERAL = re.compile(r"[A-Za-z0-9_.-]*")


def beside(sec: Section, key: str, folder: Path, what: str, *, runs_folder: bool = False) -> Path:
    """The file ``key`` names relative to ``folder`` (resolved), or one error line: an
    absolute path, ``..`` (but ``../runs/`` with ``runs_folder``), an odd name or a
    symlink leading out of the folder are refused."""
    text = sec.string(key)
    parts = text.split("/")
    allowed = folder.resolve()
    if runs_folder and tuple(parts[:2]) == RUNS_FOLDER and len(parts) > 2:
        parts, allowed = parts[2:], (folder / "..").resolve() / "runs"
    if not all(PATH_PART.fullmatch(p) for p in parts):
        where = "beside the campaign file" + (" or in ../runs/" if runs_folder else "")
        raise sec.error(
            key,
            f"{text[:80]!r}: name a file {where} (a relative path of plain names; "
            "no absolute path, no ..)",
        )
    path = allowed.joinpath(*parts).resolve()
    if not path.is_relative_to(allowed):
        raise sec.error(key, f"{text}: a symlink leading out of {allowed}; copy the file here")
    if not path.is_file():
        raise sec.error(key, f"{text}: no such {what} in {allowed}")
    return path


def check_run_id_template(sec: Section, template: str, fields: Sequence[str]) -> str:
    """``template`` if it is literal text (letters, digits, . _ -) and ``{FIELD}`` or
    ``{FIELD:02d}`` of the campaign's fields (campaign, repetition, the factors)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise sec.error("run_id", f"{template[:80]!r}: {err}") from None
    for literal, name, spec, conversion in parsed:
        bad = None
        if not LITERAL.fullmatch(literal):
            bad = "text between fields may hold letters, digits and . _ - only"
        elif name is not None and name not in fields:
            bad = f"{{{name[:40]}}} is not a field ({', '.join(fields)})"
        elif conversion is not None or not FIELD_FORMAT.fullmatch(spec or ""):
            bad = f"{{{name}}}: a field takes at most a padded width such as :02d"
        if bad is not None:
            raise sec.error("run_id", f"{template[:80]!r}: {bad}")
    return template


def check_run_count(sec: Section, level_counts: Sequence[int], repetitions: int) -> None:
    """Refuses a campaign whose factors and repetitions plan more than MAX_RUNS runs."""
    runs = math.prod(level_counts) * repetitions
    if runs > MAX_RUNS:
        raise sec.error(
            "factors",
            f"{runs} runs (levels x repetitions) is more than {MAX_RUNS}; split the campaign",
        )
