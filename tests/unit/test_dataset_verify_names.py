"""`cganalysis dataset verify` on a crafted dataset: a SHA256SUMS name must be a plain
relative path inside the dataset (no absolute path, no `..`, no symlink leading out);
anything else is refused in one line naming the SHA256SUMS line and the name, before
the file is read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.cli import main
from cganalysis.dataset.reader import open_dataset
from cganalysis.errors import ConfigError


def _dataset(tmp: Path, names: list[str]) -> Path:
    """tmp/ds with a datasheet and a SHA256SUMS listing it, then ``names`` (each digest of
    what that name reaches from the dataset, so only the name can be wrong)."""
    ds = tmp / "ds"
    ds.mkdir(exist_ok=True)
    (ds / "datasheet.json").write_text(json.dumps({"campaign": "c", "runs": []}))
    lines = []
    for name in ["datasheet.json", *names]:
        target = Path(name) if name.startswith("/") else ds / name
        lines.append(f"{hashlib.sha256(target.read_bytes()).hexdigest()}  {name}\n")
    (ds / "SHA256SUMS").write_text("".join(lines))
    return ds


def _verify(ds: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["dataset", "verify", str(ds)])
    return rc, capsys.readouterr().err


def test_a_plain_dataset_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / "ds"
    (ds / "metrics").mkdir(parents=True)
    (ds / "metrics" / "r1.json").write_text("{}")
    assert _verify(_dataset(tmp_path, ["metrics/r1.json"]), capsys)[0] == 0


def test_dotdot_outside_the_dataset_is_refused_naming_line_and_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "secret.txt").write_text("not the dataset's")
    ds = _dataset(tmp_path, ["../secret.txt"])
    rc, err = _verify(ds, capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "SHA256SUMS line 2: '../secret.txt'" in err, err


def test_an_absolute_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "abs.txt").write_text("elsewhere")
    name = str(tmp_path / "abs.txt")
    rc, err = _verify(_dataset(tmp_path, [name]), capsys)
    assert rc == 2 and f"SHA256SUMS line 2: {name!r}" in err, err


def test_a_symlink_leading_out_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.json").write_text("{}")
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "metrics").symlink_to(tmp_path / "outside")
    rc, err = _verify(_dataset(tmp_path, ["metrics/f.json"]), capsys)
    assert rc == 2 and "SHA256SUMS line 2: 'metrics/f.json'" in err, err


def test_an_unlisted_symlink_leading_out_is_refused(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [])
    (ds / "etc").symlink_to("/etc")
    with pytest.raises(ConfigError, match="etc is a symlink leading out"):
        open_dataset(ds)


def test_a_run_id_that_is_a_path_is_refused(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [])
    (ds / "datasheet.json").write_text(json.dumps({"campaign": "c", "runs": ["../../x"]}))
    with pytest.raises(ConfigError, match=r"runs: '\.\./\.\./x' is not a run id"):
        open_dataset(ds, verify=False).runs  # noqa: B018 (the property checks)


_PART = st.text(alphabet="ab.", min_size=1, max_size=3)


@given(before=st.lists(_PART, max_size=2), after=st.lists(_PART, max_size=2))
def test_any_name_with_a_dotdot_part_is_refused(
    tmp_path_factory: pytest.TempPathFactory, before: list[str], after: list[str]
) -> None:
    tmp = tmp_path_factory.mktemp("ds")
    ds = _dataset(tmp, [])
    name = "/".join([*before, "..", *after])
    with (ds / "SHA256SUMS").open("a") as fh:
        fh.write(f"{'0' * 64}  {name}\n")
    with pytest.raises(ConfigError, match=r"SHA256SUMS line 2: .*refused, nothing read"):
        open_dataset(ds)
