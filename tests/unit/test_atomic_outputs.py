"""Results are written atomically (cganalysis.io): whole or not at all, as ordinary files
(readable as the umask allows), from partial files that no two writers share."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from cganalysis import schemas
from cganalysis.io import atomic_path, new_partial, write_parquet


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_027")
def test_outputs_take_the_umask_like_any_file(tmp_path: Path) -> None:
    with atomic_path(tmp_path / "a.json") as tmp:
        tmp.write_text("{}")
    empty = schemas.empty(schemas.EGRESS_ONLY)
    write_parquet(empty, tmp_path / "b.parquet")
    (tmp_path / "c").write_text("")  # how the umask shows on a file made plainly
    assert _mode(tmp_path / "a.json") == _mode(tmp_path / "b.parquet") == _mode(tmp_path / "c")
    assert _mode(tmp_path / "c") == 0o640
    assert pl.read_parquet(tmp_path / "b.parquet").height == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.parquet", "c"]


def test_partial_files_are_new_each_time(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    # One left by an earlier process with this pid is not reused.
    stale = out.with_name(f".t.parquet.{os.getpid()}-0.partial")
    stale.write_text("earlier")
    names = {new_partial(out) for _ in range(5)}
    assert len(names) == 5 and stale not in names
    assert all(p.stat().st_size == 0 and p.name.endswith(".partial") for p in names)
    assert stale.read_text() == "earlier"


def test_a_failed_write_leaves_the_old_output_and_no_partial(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    out.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["o.json"]
