"""`snakemake --profile profiles/published` on a copy of the repository's layout without any
raw run: the published datasets' tables, and the check of the numbers the docs print."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from cganalysis.dataset.reader import open_dataset, published_datasets
from cganalysis.report import artefacts
from cganalysis.report.tablefmt import to_markdown
from tests.conftest import REPO, need_tool


def _snakemake(work: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["snakemake", "--profile", "profiles/published", "--cores", "2", "--quiet"],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


def test_the_published_profile_renders_and_checks_without_raw_runs(tmp_path: Path) -> None:
    need_tool("snakemake", "cganalysis")
    for name in ("Snakefile", "workflow", "configs", "profiles", "datasets"):
        (tmp_path / name).symlink_to(REPO / name)
    for name in ("README.md", "docs/results.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    done = _snakemake(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (tmp_path / "data").exists()  # nothing run, nothing processed
    report = (tmp_path / "results/published/printed-numbers.txt").read_text()
    assert report.endswith("all as rendered\n"), report
    # Every dataset's tables, as its campaign's artefacts name them in the profile.
    profile = yaml.safe_load((REPO / "profiles/published/experiments.yaml").read_text())
    for path in published_datasets(REPO):
        ds = open_dataset(path)
        groups = profile["artefacts"][ds.campaign]
        assert groups, path
        out = tmp_path / "results/published" / path.name
        for artefact in (a for g in groups for a in artefacts.in_group(g)):
            if artefact.kind == "figure":  # a figure: both files, not empty
                assert all((out / f"{artefact.name}.{x}").stat().st_size for x in ("pdf", "png"))
                continue
            rendered = (out / f"{artefact.name}.md").read_text()
            for table in ds.tables(artefact.name):
                assert to_markdown(table).strip() in rendered, (path.name, artefact.name)
    # A printed number changed: the workflow fails and names it.
    results = tmp_path / "docs/results.md"
    text = results.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| avg latency (ms), kernel"))
    cells = row.split(" | ")
    results.write_text(text.replace(row, " | ".join([cells[0], "99.99", *cells[2:]])))
    failed = _snakemake(tmp_path)
    assert failed.returncode != 0
    log = (tmp_path / "logs/published_check_docs.log").read_text()
    assert "printed 99.99" in log and "docs/results.md" in log
