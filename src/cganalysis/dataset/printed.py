"""The numbers the documentation prints from a published dataset, checked against it.

A Markdown table whose rows come from a dataset is preceded by a marker naming the
dataset, the table it renders and the suffix of its rows' labels::

    <!-- printed from datasets/tma2024-kernel-2026-11-26: tma_table2, rows ", kernel" -->
    | | Drop-tail Cubic | Drop-tail BBR | ... |
    | CG avg latency (ms), kernel | 16.64 | 14.67 | ... |

A marker without ``rows`` prints the rendered table itself (``tma_factors``): each printed
row is the rendered row with the same row labels, every cell as rendered, text and all.
Where the dataset renders one table per condition (runs of two trace scales, say),
``, where KEY=VALUE`` after the table's name picks the one whose condition holds it::

    <!-- printed from datasets/CAMPAIGN-DATE: tma_table1, where scale=mean30 -->

A marker ending in ``, note`` prints a verdict line of the rendered table (a note such as
``Table II: 9 of 24 cells within 25 % of the paper`` or ``Claims: 8 of 19 hold, ...``): the
next line that is not blank must hold that note, words and numbers, from the note's words
before its first number up to the next full stop (or the line's end)::

    <!-- printed from datasets/tma2024-be10-2026-11-27: tma_claims, note -->
    - emulator: Claims: 8 of 19 hold, 5 in order only, 6 fail (2 not measured).

Otherwise each row whose label ends with the suffix is a row of the rendered table: its name
(``avg latency (ms)``, ``std. dev. (ms)``, ``% > 20 ms``, ``avg bitrate (Mbit/s)``,
``loss (%)``, ``utilisation, total (%)``) after the flow, ``CG`` or ``TCP``, which the
label starts with or the marker gives (``, flow CG``); its columns are the header's,
matched to the table's by name ("Drop-tail Cubic" is "Droptail / Cubic"). Every printed
number must be the rendered cell's, digit for digit. ``cganalysis dataset check-docs``
(and the workflow's ``published`` profile) reports the differences; with ``--fix`` it
writes the rendered numbers into the files. Adding a dataset and a marker extends the
check; nothing here is specific to one campaign.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cganalysis.dataset.reader import open_dataset
from cganalysis.errors import ConfigError
from cganalysis.report.tablefmt import MISSING_TEXT, Table
from cganalysis.report.tables import STD_LABEL

#: The files whose tables may print a dataset's numbers.
PRINTING_FILES = ("README.md", "docs/results.md")

MARKER = re.compile(
    r"<!-- printed from (?P<dataset>\S+): (?P<table>\w+)"
    r"(?:, where (?P<key>\w+)=(?P<value>[\w.-]+))?"
    r'(?:, rows "(?P<suffix>[^"]+)")?(?:, flow (?P<flow>CG|TCP))?(?P<note>, note)? -->'
)
#: A printed note's column, in a :class:`Cell` (a verdict line, not a table's cell).
NOTE = "note"

#: A printed row's name -> Table II's row label (the flow's block, or the link's).
ROW_NAMES: dict[str, str] = {
    "avg latency (ms)": "Avg Latency",
    "std. dev. (ms)": STD_LABEL,
    "% > 10 ms": "% > 10 ms",
    "% > 20 ms": "% > 20 ms",
    "% > 50 ms": "% > 50 ms",
    "% > 100 ms": "% > 100 ms",
    "avg bitrate (Mbit/s)": "Avg Bitrate",
    "loss (%)": "Loss Rate",
    "utilisation, total (%)": "Total",
}
BLOCKS = {"CG": "CG Traffic", "TCP": "TCP Traffic"}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Cell:
    """One printed number and the rendered one."""

    file: str
    line: int  # 1-based
    column: str
    row: str
    printed: str
    rendered: str | None  # None: the table has no such cell

    def __str__(self) -> str:
        want = "no such cell in the rendered table" if self.rendered is None else self.rendered
        where = f"{self.file}:{self.line}: {self.row} / {self.column}"
        return f"{where}: printed {self.printed}, rendered {want}"


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _cells(table: Table) -> dict[tuple[str, str, str], str]:
    """(block, row label, column key) -> the cell's leading number, as printed."""
    out: dict[tuple[str, str, str], str] = {}
    columns = [_key(" ".join(labels)) for labels in table.leaf_labels()]
    block = ""
    for row in table.rows:
        block = row.stub[0] or block
        for column, text in zip(columns, row.cells, strict=True):
            m = NUMBER.search(text or "")
            if m:
                out[(block, row.stub[-1], column)] = m.group()
    return out


def _split(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_row(line: str) -> bool:
    """A table line, also inside a list item (indented)."""
    return line.lstrip().startswith("|")


def _table(
    repo: Path, dataset: str, table: str, where: str, condition: tuple[str, str] | None = None
) -> Table:
    """The one table ``dataset`` renders as ``table``; of several (one per condition), the
    one whose condition holds ``condition`` (the marker's ``where KEY=VALUE``)."""
    path = repo / dataset
    if not path.is_relative_to(repo) or not (path / "datasheet.json").is_file():
        raise ConfigError(f"{where}: no dataset {dataset} (a folder of datasets/ with a datasheet)")
    tables = open_dataset(path).tables(table)
    if condition is not None:
        tables = [t for t in tables if condition in t.condition]
    if len(tables) != 1:
        hint = "; print one (`, where KEY=VALUE` picks a condition)" if condition is None else ""
        raise ConfigError(
            f"{where}: {dataset} renders {len(tables)} {table} tables"
            + (f" where {condition[0]}={condition[1]}" if condition else "")
            + (hint or "")
        )
    return tables[0]


def _verbatim(name: str, table: Table, lines: list[str], start: int, where: str) -> list[Cell]:
    """The table printed from line ``start`` (its header) against the rendered one."""
    width = len(table.stub_header)
    columns = [_key(" / ".join(x for x in labels if x)) for labels in table.leaf_labels()]
    rendered = {
        (row.stub, column): MISSING_TEXT if text is None else text
        for row in table.rows
        for column, text in zip(columns, row.cells, strict=True)
    }
    header = [_key(c) for c in _split(lines[start])]
    out: list[Cell] = []
    for k in range(start + 2, len(lines)):
        if not _is_row(lines[k]):
            break
        cells = _split(lines[k])
        stub = tuple(cells[:width])
        for column, text in zip(header[width:], cells[width:], strict=False):
            label = " / ".join(x for x in stub if x)
            out.append(Cell(name, k + 1, column, label, text, rendered.get((stub, column))))
    if not out:
        raise ConfigError(f"{where}: no table rows after the marker")
    return out


def _note(name: str, table: Table, lines: list[str], start: int, where: str) -> Cell:
    """The verdict line printed after the marker (line ``start``) against the table's note
    that begins with the same words."""
    k = next((j for j in range(start + 1, len(lines)) if lines[j].strip()), None)
    if k is None:
        raise ConfigError(f"{where}: no line after the marker")
    for note in table.notes:
        lead = NUMBER.split(note, maxsplit=1)[0]
        found = re.search(re.escape(lead) + r"[^.]*", lines[k]) if lead else None
        if found:
            printed = found.group().rstrip()
            return Cell(name, k + 1, NOTE, lead.strip(), printed, note)
    leads = "; ".join(repr(NUMBER.split(n, maxsplit=1)[0]) for n in table.notes)
    raise ConfigError(f"{name}:{k + 1}: prints none of the table's notes (they begin {leads})")


def printed_cells(repo: Path, files: tuple[str, ...] = PRINTING_FILES) -> list[Cell]:
    """Every number ``files`` print from a dataset, with the rendered one."""
    out: list[Cell] = []
    for name in files:
        lines = (repo / name).read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = MARKER.search(line)
            if not m:
                continue
            where = f"{name}:{i + 1}"
            condition = (m["key"], m["value"]) if m["key"] else None
            table = _table(repo, m["dataset"], m["table"], where, condition)
            if m["note"]:
                out.append(_note(name, table, lines, i, where))
                continue
            j = i + 1
            while j < len(lines) and not _is_row(lines[j]):
                j += 1
            if j == len(lines):
                raise ConfigError(f"{where}: no table after the marker")
            if m["suffix"] is None:
                out += _verbatim(name, table, lines, j, where)
                continue
            rendered = _cells(table)
            header = [_key(c) for c in _split(lines[j])] if j < len(lines) else []
            found = 0
            for k in range(j + 2, len(lines)):
                if not _is_row(lines[k]):
                    break
                cells = _split(lines[k])
                label = cells[0]
                if not label.endswith(m["suffix"]):
                    continue
                name_part = label.removesuffix(m["suffix"]).strip()
                flow = m["flow"] or ""
                first, _, rest = name_part.partition(" ")
                if first in BLOCKS:
                    flow, name_part = first, rest
                if name_part not in ROW_NAMES:
                    raise ConfigError(
                        f"{name}:{k + 1}: row {label!r}: not a row this check knows "
                        f"({', '.join(ROW_NAMES)})"
                    )
                row = ROW_NAMES[name_part]
                block = "Link utilization" if row == "Total" else BLOCKS.get(flow, "")
                for column, text in zip(header[1:], cells[1:], strict=False):
                    out.append(
                        Cell(name, k + 1, column, label, text, rendered.get((block, row, column)))
                    )
                found += 1
            if not found:
                raise ConfigError(f"{where}: no row ending in {m['suffix']!r} in the next table")
    return out


def mismatches(repo: Path, files: tuple[str, ...] = PRINTING_FILES) -> list[Cell]:
    return [c for c in printed_cells(repo, files) if c.printed != c.rendered]


def fix(repo: Path, files: tuple[str, ...] = PRINTING_FILES) -> list[Cell]:
    """Writes the rendered numbers over the printed ones; the cells changed (a cell the
    rendered table lacks is left, and reported by :func:`mismatches`)."""
    changed = [c for c in mismatches(repo, files) if c.rendered is not None]
    for name in {c.file for c in changed}:
        path = repo / name
        lines = path.read_text(encoding="utf-8").split("\n")
        for c in (c for c in changed if c.file == name):
            if c.column == NOTE:
                lines[c.line - 1] = lines[c.line - 1].replace(c.printed, str(c.rendered), 1)
                continue
            header_line = next(
                j
                for j in range(c.line - 1, -1, -1)
                if _is_row(lines[j]) and (j == 0 or not _is_row(lines[j - 1]))
            )
            index = [_key(h) for h in _split(lines[header_line])].index(c.column)
            line = lines[c.line - 1]
            cells = _split(line)
            cells[index] = str(c.rendered)
            indent = line[: len(line) - len(line.lstrip())]
            lines[c.line - 1] = indent + "| " + " | ".join(cells) + " |"
        path.write_text("\n".join(lines), encoding="utf-8")
    return changed
