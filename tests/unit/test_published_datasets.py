"""The datasets committed under datasets/: intact, small, read back; the numbers README.md
and docs/results.md print from them equal the rendered tables; and a run compared with
them cell by cell."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from cganalysis.cli import main
from cganalysis.dataset.compare import compare, condition_keys
from cganalysis.dataset.export import ABSOLUTE_PATH, SHARED_PREFIXES, local_path_free
from cganalysis.dataset.printed import NOTE, PRINTING_FILES, fix, mismatches, printed_cells
from cganalysis.dataset.reader import open_dataset, published_datasets
from cganalysis.errors import ConfigError
from tests.conftest import REPO

DATASETS = published_datasets(REPO)
#: What a committed dataset may weigh in all (issue 30: tens of MB at most).
MAX_TOTAL_BYTES = 40_000_000


def test_there_is_a_published_dataset() -> None:
    assert DATASETS, "no datasets/<campaign>-<date>/ with a datasheet"


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.name)
def test_a_published_dataset_is_intact_and_complete(path: Path) -> None:
    ds = open_dataset(path)  # every file against SHA256SUMS
    assert path.name.startswith(f"{ds.campaign}-")
    assert ds.datasheet["published"] is True
    assert not (path / "packets").exists() and not (path / "captures").exists()
    for run in ds.runs:
        assert ds.meta(run)["run_id"] == run
        assert ds.calibration(run) == ds.meta(run).get("calibration")
        series = ds.timeseries(run)
        assert {"cg", "competitor"} <= set(series.get_column("role"))
        assert ds.flows(run).height > 0
    assert len(ds.metrics) == len(ds.runs) and ds.run_rows().height == len(ds.runs)


def test_published_datasets_stay_small() -> None:
    total = sum(p.stat().st_size for d in DATASETS for p in d.rglob("*") if p.is_file())
    assert total < MAX_TOTAL_BYTES, f"datasets/ holds {total / 1e6:.1f} MB"


def test_a_changed_file_is_refused(tmp_path: Path) -> None:
    copy_dir = tmp_path / DATASETS[0].name
    shutil.copytree(DATASETS[0], copy_dir)
    victim = next((copy_dir / "metrics").glob("*.json"))
    victim.write_text(victim.read_text().replace('"bin_s": 0.5', '"bin_s": 1.0'))
    (copy_dir / "notes.txt").write_text("added by hand")
    with pytest.raises(ConfigError, match=rf"changed: metrics/{victim.name}.*notes.txt"):
        open_dataset(copy_dir)


def test_printed_numbers_equal_the_rendered_tables() -> None:
    cells = printed_cells(REPO)
    # Every committed dataset the docs print from is checked, cell by cell.
    assert cells and {c.file for c in cells} <= set(PRINTING_FILES)
    assert not mismatches(REPO), "\n".join(map(str, mismatches(REPO)))


def test_a_changed_printed_number_is_caught_and_fixed(tmp_path: Path) -> None:
    for name in PRINTING_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    cell = printed_cells(tmp_path)[0]
    path = tmp_path / cell.file
    lines = path.read_text().split("\n")
    lines[cell.line - 1] = lines[cell.line - 1].replace(f"| {cell.printed} |", "| 99.99 |", 1)
    path.write_text("\n".join(lines))
    (bad,) = mismatches(tmp_path)
    assert (bad.file, bad.line, bad.printed, bad.rendered) == (
        cell.file,
        cell.line,
        "99.99",
        cell.printed,
    )
    assert main(["dataset", "check-docs", "--root", str(tmp_path)]) == 1
    fix(tmp_path)
    assert path.read_text() == (REPO / cell.file).read_text()


def test_a_table_printed_whole_is_checked_cell_by_cell_text_and_all(tmp_path: Path) -> None:
    """A marker without rows (the factor table): every printed cell, range included, is
    the rendered one; a changed range or a row the table lacks is caught, and fixed."""
    for name in PRINTING_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    whole = [c for c in printed_cells(tmp_path) if " (" in c.printed]
    assert whole, "no table printed whole with ranges (docs/results.md, factor table)"
    cell = whole[0]
    path = tmp_path / cell.file
    lines = path.read_text().split("\n")
    changed = cell.printed.replace("(", "(0.01 ", 1)
    lines[cell.line - 1] = lines[cell.line - 1].replace(f"| {cell.printed} |", f"| {changed} |", 1)
    path.write_text("\n".join(lines))
    (bad,) = mismatches(tmp_path)
    assert (bad.line, bad.printed, bad.rendered) == (cell.line, changed, cell.printed)
    fix(tmp_path)
    assert path.read_text() == (REPO / cell.file).read_text()
    stub = lines[cell.line - 1].split("|")[1]
    lines[cell.line - 1] = lines[cell.line - 1].replace(stub, " no-such-queue ", 1)
    path.write_text("\n".join(lines))
    assert {c.rendered for c in mismatches(tmp_path) if c.line == cell.line} == {None}


def test_a_table_inside_a_list_item_is_checked_and_fixed_in_place(tmp_path: Path) -> None:
    """An indented table (docs/results.md's Table I, inside a list item) is checked like
    any other, and --fix keeps its indentation; a marker with no table is refused."""
    name = "docs/results.md"
    (tmp_path / "docs").mkdir()
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    text = (REPO / name).read_text()
    indented = [
        c for c in printed_cells(REPO, (name,)) if text.split("\n")[c.line - 1].startswith("  |")
    ]
    assert indented, "no indented table printed from a dataset in docs/results.md"
    cell = indented[0]
    lines = text.split("\n")
    lines[cell.line - 1] = lines[cell.line - 1].replace(f"| {cell.printed} |", "| 9.99 |", 1)
    (tmp_path / name).write_text("\n".join(lines))
    (bad,) = mismatches(tmp_path, (name,))
    assert (bad.line, bad.printed, bad.rendered) == (cell.line, "9.99", cell.printed)
    fix(tmp_path, (name,))
    assert (tmp_path / name).read_text() == text
    marker = max(i for i, ln in enumerate(lines[: cell.line]) if "<!-- printed from" in ln)
    (tmp_path / name).write_text("\n".join(lines[: marker + 1]) + "\nno table\n")
    with pytest.raises(ConfigError, match="no table after the marker"):
        printed_cells(tmp_path, (name,))


def test_a_changed_verdict_line_is_caught_and_fixed(tmp_path: Path) -> None:
    """The README's verdict lines (``, note`` markers): Table II's count of cells within the
    target, each paper's count of claims that hold and of what is still out, as the
    datasets render them."""
    shutil.copyfile(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "datasets").symlink_to(REPO / "datasets")
    notes = [c for c in printed_cells(tmp_path, ("README.md",)) if c.column == NOTE]
    assert {c.row for c in notes} == {"Table II:", "Claims:", "Still out:"}
    assert all(c.printed == c.rendered for c in notes)
    cell = next(c for c in notes if c.row == "Claims:")
    path = tmp_path / "README.md"
    lines = path.read_text().split("\n")
    changed = cell.printed.replace("Claims: ", "Claims: 99", 1)
    lines[cell.line - 1] = lines[cell.line - 1].replace(cell.printed, changed, 1)
    path.write_text("\n".join(lines))
    (bad,) = mismatches(tmp_path, ("README.md",))
    assert (bad.line, bad.printed, bad.rendered) == (cell.line, changed, cell.printed)
    fix(tmp_path, ("README.md",))
    assert path.read_text() == (REPO / "README.md").read_text()
    lines[cell.line - 1] = "- emulator: all is well"
    path.write_text("\n".join(lines))
    with pytest.raises(ConfigError, match=f"README.md:{cell.line}: prints none of the table"):
        printed_cells(tmp_path, ("README.md",))


def test_compare_says_within_outside_and_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    # A dataset of one run per condition (the factor tables' have two).
    single = next(d for d in DATASETS if d.name.startswith("tma2024-kernel-"))
    ds = open_dataset(single)
    ref = ds.metrics
    keys = condition_keys(ref)
    assert keys and "repetition" not in keys
    # One baseline run per condition: no spread, and said so.
    alone = compare(ref, ref, campaign=ds.campaign)
    assert set(alone.get_column("verdict")) == {"no spread: one baseline run"}
    # A second repetition, 10 % slower: the spread is [x, 1.1 x].
    second = copy.deepcopy(ref)
    for doc in second:
        doc["run"]["repetition"] = 2
        doc["run"]["run_id"] += "-r2"
        doc["roles"]["cg"]["delay_mean_ms"] *= 1.1
    new_inside, new_outside = copy.deepcopy(ref), copy.deepcopy(ref)
    for doc in new_inside:
        doc["roles"]["cg"]["delay_mean_ms"] *= 1.05
    for doc in new_outside:
        doc["roles"]["cg"]["delay_mean_ms"] *= 1.2
    for new, verdict in ((new_inside, "within"), (new_outside, "outside")):
        table = compare(new, ref + second, campaign=ds.campaign)
        latency = table.filter(table.get_column("metric") == "CG Avg Latency (ms)")
        assert set(latency.get_column("verdict")) == {verdict}
        assert latency.get_column("n_baseline").to_list() == [2] * latency.height
    # The command line on the dataset itself.
    assert main(["compare", str(single), "--baseline", str(single)]) == 0
    out = capsys.readouterr().out
    assert "CG Avg Latency (ms)" in out and "no spread: one baseline run" in out
    # ... and the paper's claims judged on the new runs, as the dataset's own table.
    from cganalysis.report.claims_tma import tma_claims_table
    from cganalysis.report.tablefmt import to_markdown

    assert to_markdown(tma_claims_table(ref)) in out
    assert "Claims: " in out
    # The flag's older name, which the published datasheets print, still works.
    assert main(["compare", str(single), "--reference", str(single)]) == 0
    assert capsys.readouterr().out == out


def test_raw_check_names_the_missing_runs_and_how_to_get_them(tmp_path: Path) -> None:
    from cganalysis.dataset.rawcheck import check_raw

    ds = open_dataset(DATASETS[0])
    shutil.copytree(DATASETS[0], tmp_path / "datasets" / DATASETS[0].name)
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    with pytest.raises(ConfigError, match=rf"data/raw/{ds.campaign}/: missing, .*dvc pull"):
        check_raw(tmp_path, ds.campaign)
    first, *rest = ds.runs
    (tmp_path / "data" / "raw" / ds.campaign / first).mkdir(parents=True)
    (tmp_path / "data" / "raw" / ds.campaign / first / "meta.json").write_text("{}")
    with pytest.raises(ConfigError, match=rf"{len(rest)} runs missing \({rest[0]}, "):
        check_raw(tmp_path, ds.campaign)
    for run in rest:
        (tmp_path / "data" / "raw" / ds.campaign / run).mkdir()
        (tmp_path / "data" / "raw" / ds.campaign / run / "meta.json").write_text("{}")
    assert check_raw(tmp_path, ds.campaign) == ds.runs


def test_committed_datasets_name_no_path_of_the_machine_that_ran_them() -> None:
    """The published export keeps program and file names, not the runner's absolute
    paths: none anywhere in any string of any committed meta.json or metrics document
    (command lines, a reference build's path, a trace named inside a sentence)."""

    def strings(value: object) -> list[str]:
        if isinstance(value, dict):
            return [w for v in value.values() for w in strings(v)]
        if isinstance(value, list):
            return [w for v in value for w in strings(v)]
        return [value] if isinstance(value, str) else []

    files = sorted(REPO.glob("datasets/*/meta/*.json")) + sorted(
        REPO.glob("datasets/*/metrics/*.json")
    )
    assert files
    for path in files:
        found = [p for t in strings(json.loads(path.read_text())) for p in ABSOLUTE_PATH.findall(t)]
        local = [p for p in found if not p.startswith(SHARED_PREFIXES)]
        assert not local, (path, local)


def test_the_export_cuts_local_paths_to_names_and_keeps_shared_ones() -> None:
    meta = {
        "controller": {"argv": ["/home/ann/cga/.venv/bin/cganalysis", "experiment", "r.yaml"]},
        "cg_source": {"tx_path": "/srv/scream/bin/scream_bw_test_tx", "tx_sha256": "ab12"},
        "captures": {"command": "tcpdump -i rtr0 -w /mnt/cga-job/run/in.pcap"},
        "tools": {"tc": "/usr/sbin/tc"},
        "note": "no path here",
        "reason": "a trace-driven rate (/home/ann/lab/traces/lte.down; the kernel cannot)",
        "rate": "50 Mbit/s, gain 1/8, https://example.org/a/b",
    }
    assert local_path_free(meta) == {
        "controller": {"argv": ["cganalysis", "experiment", "r.yaml"]},
        "cg_source": {"tx_path": "scream_bw_test_tx", "tx_sha256": "ab12"},
        "captures": {"command": "tcpdump -i rtr0 -w /mnt/cga-job/run/in.pcap"},
        "tools": {"tc": "/usr/sbin/tc"},
        "note": "no path here",
        "reason": "a trace-driven rate (lte.down; the kernel cannot)",
        "rate": "50 Mbit/s, gain 1/8, https://example.org/a/b",
    }


def test_a_condition_of_a_dataset_that_renders_several_tables_is_picked(tmp_path: Path) -> None:
    """The scaled cellular dataset renders one Table I per trace scale: a marker's `where
    scale=...` picks one; swapping the two conditions' markers is caught; without `where`,
    one line says how to pick."""
    name = "docs/results.md"
    (tmp_path / "docs").mkdir()
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    text = (REPO / name).read_text()
    assert "tma_table1, where scale=mean30 -->" in text and "where scale=mean40 -->" in text
    swapped = (
        text.replace("where scale=mean30", "where scale=X")
        .replace("where scale=mean40", "where scale=mean30")
        .replace("where scale=X", "where scale=mean40")
    )
    (tmp_path / name).write_text(swapped)
    bad = mismatches(tmp_path, (name,))
    assert {(c.printed, c.rendered) for c in bad} >= {
        ("57.55ms", "35.36ms"),
        ("35.36ms", "57.55ms"),
    }
    (tmp_path / name).write_text(text.replace(", where scale=mean30", "", 1))
    with pytest.raises(
        ConfigError, match=r"renders 2 tma_table1 tables; print one .*where KEY=VALUE"
    ):
        printed_cells(tmp_path, (name,))
    (tmp_path / name).write_text(text.replace("where scale=mean30", "where scale=mean99", 1))
    with pytest.raises(ConfigError, match=r"renders 0 tma_table1 tables where scale=mean99"):
        printed_cells(tmp_path, (name,))
