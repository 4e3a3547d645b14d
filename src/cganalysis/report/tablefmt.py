"""A small table model with multi-level column headers, rendered as CSV, Markdown, LaTeX and
HTML.

Paper tables group their columns (queue discipline over CCA, queue size over system over
CCA) and their rows (CG block, TCP block): the model keeps both, and each format shows them
as well as it can. CSV repeats group labels in every cell they span (so each column is
self-describing); Markdown joins header levels with " / "; LaTeX uses booktabs with
``\\multicolumn`` and ``\\cmidrule``; HTML (a page of its own, for a browser and the
Snakemake report) spans its header cells and rules off row groups. A missing value is None:
an en dash in CSV, Markdown and HTML, "--" in LaTeX.

A table may hold one condition of several (:mod:`cganalysis.report.conditions`): its
``condition`` labels. :func:`write_tables` writes such tables into one file per format:
Markdown, LaTeX and HTML one after another (each with its caption), CSV one after another
with the condition's labels as leading columns, so that every CSV row still stands alone.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cganalysis.io import atomic_path

MISSING_TEXT = "\u2013"  # en dash


@dataclass(frozen=True)
class Row:
    stub: tuple[str, ...]  # row labels, e.g. ("CG Traffic", "Avg Latency"); "" = as above
    cells: tuple[str | None, ...]


@dataclass(frozen=True)
class Table:
    """``header`` levels from the top; each level is (label, span) pairs over the value
    columns; ``stub_header`` names the row-label columns (bottom header row)."""

    header: tuple[tuple[tuple[str, int], ...], ...]
    stub_header: tuple[str, ...]
    rows: tuple[Row, ...]
    caption: str = ""
    notes: tuple[str, ...] = field(default=())
    #: (label, value) of the condition the table holds, when the runs held several.
    condition: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        width = self.n_columns
        for level in self.header:
            if sum(span for _, span in level) != width:
                raise ValueError(f"header level {level} does not span {width} columns")
        for row in self.rows:
            if len(row.cells) != width or len(row.stub) != len(self.stub_header):
                raise ValueError(f"row {row} does not fit the table's columns")

    @property
    def n_columns(self) -> int:
        return sum(span for _, span in self.header[-1]) if self.header else 0

    def leaf_labels(self) -> list[list[str]]:
        """For each value column, its labels from the top level down."""
        out: list[list[str]] = [[] for _ in range(self.n_columns)]
        for level in self.header:
            col = 0
            for label, span in level:
                for _ in range(span):
                    out[col].append(label)
                    col += 1
        return out


def _write_csv(buf: io.StringIO, table: Table, lead: Sequence[tuple[str, str]] = ()) -> None:
    """``lead``: (name, value) columns before the table's own: the names on the bottom
    header row, the values on every data row."""
    w = csv.writer(buf, lineterminator="\n")
    leaves = table.leaf_labels()
    names = [name for name, _ in lead]
    values = [value for _, value in lead]
    for depth in range(len(table.header)):
        last = depth == len(table.header) - 1
        stub = list(table.stub_header) if last else [""] * len(table.stub_header)
        front = names if last else [""] * len(lead)
        w.writerow(front + stub + [labels[depth] for labels in leaves])
    block = [""] * len(table.stub_header)
    for row in table.rows:
        # Repeat the row-group label on every row: a CSV row must stand on its own.
        stub = [s if s else block[i] for i, s in enumerate(row.stub)]
        block = stub
        w.writerow(values + stub + [MISSING_TEXT if c is None else c for c in row.cells])


def to_csv(table: Table) -> str:
    buf = io.StringIO()
    _write_csv(buf, table)
    return buf.getvalue()


def tables_to_csv(tables: Sequence[Table]) -> str:
    """One table: :func:`to_csv`. Several: each with its condition as leading columns."""
    if len(tables) == 1:
        return to_csv(tables[0])
    buf = io.StringIO()
    for table in tables:
        _write_csv(buf, table, table.condition)
    return buf.getvalue()


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: Table) -> str:
    heads = [" / ".join(x for x in labels if x) for labels in table.leaf_labels()]
    lines = []
    if table.caption:
        lines += [f"**{_md_escape(table.caption)}**", ""]
    cols = [*table.stub_header, *heads]
    lines.append("| " + " | ".join(_md_escape(c) for c in cols) + " |")
    aligns = [":--"] * len(table.stub_header) + ["--:"] * len(heads)
    lines.append("| " + " | ".join(aligns) + " |")
    for row in table.rows:
        cells = [MISSING_TEXT if c is None else c for c in row.cells]
        lines.append("| " + " | ".join(_md_escape(c) for c in [*row.stub, *cells]) + " |")
    for note in table.notes:
        lines += ["", _md_escape(note)]
    return "\n".join(lines) + "\n"


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # In text mode with the default encoding, < and > print as other glyphs.
    ">": r"$>$",
    "<": r"$<$",
    "±": r"$\pm$",
    "\u2013": "--",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def to_latex(table: Table) -> str:
    n_stub = len(table.stub_header)
    lines = [r"\begin{tabular}{" + "l" * n_stub + "r" * table.n_columns + "}", r"\toprule"]
    for depth, level in enumerate(table.header):
        last = depth == len(table.header) - 1
        stub = [latex_escape(s) for s in table.stub_header] if last else [""] * n_stub
        cells = [
            latex_escape(label)
            if span == 1
            else rf"\multicolumn{{{span}}}{{c}}{{{latex_escape(label)}}}"
            for label, span in level
        ]
        lines.append(" & ".join(stub + cells) + r" \\")
        if not last:
            col, rules = n_stub + 1, []
            for label, span in level:
                if label:
                    rules.append(rf"\cmidrule(lr){{{col}-{col + span - 1}}}")
                col += span
            if rules:
                lines.append("".join(rules))
    lines.append(r"\midrule")
    for i, row in enumerate(table.rows):
        if i > 0 and n_stub > 1 and row.stub[0]:
            lines.append(r"\midrule")  # a new row group (CG block, TCP block, ...)
        cells = ["--" if c is None else latex_escape(c) for c in row.cells]
        lines.append(" & ".join([latex_escape(s) for s in row.stub] + cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines)
    if not table.caption:
        return body + "\n"
    return (
        "\\begin{table}[t]\n\\centering\n"
        + rf"\caption{{{latex_escape(table.caption)}}}"
        + "\n"
        + body
        + "\n\\end{table}\n"
    )


_HTML_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1em;color:#222}"
    "table{border-collapse:collapse;margin:0 0 1.5em;font-size:0.9em}"
    "caption{caption-side:top;text-align:left;font-weight:bold;padding:0 0 0.4em}"
    "th,td{padding:0.15em 0.6em;white-space:nowrap}"
    "thead th{text-align:center;border-bottom:1px solid #999}"
    "thead tr:last-child th{border-bottom:2px solid #444}"
    "tbody th{text-align:left;font-weight:normal}"
    "td{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.group>*{border-top:1px solid #999}"
    "p.note{font-size:0.85em;color:#444;max-width:60em}"
)


def _html_table(table: Table) -> str:
    esc = html.escape
    n_stub = len(table.stub_header)
    lines = ["<table>"]
    if table.caption:
        lines.append(f"<caption>{esc(table.caption)}</caption>")
    lines.append("<thead>")
    for depth, level in enumerate(table.header):
        last = depth == len(table.header) - 1
        stub = (
            "".join(f'<th scope="col">{esc(s)}</th>' for s in table.stub_header)
            if last
            else (f'<th colspan="{n_stub}"></th>' if n_stub else "")
        )
        cells = "".join(
            f'<th scope="col">{esc(label)}</th>'
            if span == 1
            else f'<th scope="colgroup" colspan="{span}">{esc(label)}</th>'
            for label, span in level
        )
        lines.append(f"<tr>{stub}{cells}</tr>")
    lines += ["</thead>", "<tbody>"]
    for i, row in enumerate(table.rows):
        # a new row group (CG block, TCP block, ...) is ruled off, as in LaTeX
        group = ' class="group"' if i > 0 and n_stub > 1 and row.stub[0] else ""
        stub = "".join(f'<th scope="row">{esc(s)}</th>' for s in row.stub)
        cells = "".join(f"<td>{esc(MISSING_TEXT if c is None else c)}</td>" for c in row.cells)
        lines.append(f"<tr{group}>{stub}{cells}</tr>")
    lines += ["</tbody>", "</table>"]
    lines += [f'<p class="note">{esc(note)}</p>' for note in table.notes]
    return "\n".join(lines)


def tables_to_html(tables: Sequence[Table]) -> str:
    """One HTML page holding every table of ``tables`` in order (styled, no script, nothing
    loaded from elsewhere)."""
    title = next((t.caption for t in tables if t.caption), "Table")
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_HTML_STYLE}</style>\n</head>\n<body>\n"
    )
    return head + "\n".join(_html_table(t) for t in tables) + "\n</body>\n</html>\n"


def to_html(table: Table) -> str:
    return tables_to_html([table])


FORMATS = {"csv": to_csv, "md": to_markdown, "tex": to_latex, "html": to_html}


def tables_to_markdown(tables: Sequence[Table]) -> str:
    return "\n".join(to_markdown(t) for t in tables)


def tables_to_latex(tables: Sequence[Table]) -> str:
    return "\n".join(to_latex(t) for t in tables)


#: Several tables in one file per format (one table: exactly as :data:`FORMATS`).
MANY_FORMATS = {
    "csv": tables_to_csv,
    "md": tables_to_markdown,
    "tex": tables_to_latex,
    "html": tables_to_html,
}


def write_tables(tables: Sequence[Table], stem: Path) -> list[Path]:
    """Writes ``stem.csv``, ``stem.md``, ``stem.tex`` and ``stem.html`` (each atomically),
    each holding every table of ``tables`` in order."""
    if not tables:
        raise ValueError(f"{stem}: no table to write")
    written = []
    for ext, render in MANY_FORMATS.items():
        path = stem.with_name(f"{stem.name}.{ext}")
        with atomic_path(path) as tmp:
            tmp.write_text(render(tables), encoding="utf-8")
        written.append(path)
    return written


def write_table(table: Table, stem: Path) -> list[Path]:
    """Writes ``stem.csv``, ``stem.md``, ``stem.tex`` and ``stem.html`` (each atomically)."""
    return write_tables([table], stem)
