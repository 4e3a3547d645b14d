"""The package works from a wheel: built as a user would publish it, installed outside the
repository, and run from a folder that is not the repository, it finds nothing of the
checkout (no tests/, no configs/, no repository root) and still does its work.

The wheel is built once (maturin, release; the Rust build reuses the workspace's target
folder) and installed with ``--no-deps`` into a folder of its own; its dependencies come
from the project's environment, so nothing is downloaded. ``PYTHONPATH`` puts the wheel's
copy before the editable install, and every test checks that the wheel's copy is the one
that ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, short_run, write

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--release", "--quiet", "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = out.glob("cganalysis-*.whl")
    names = "\n".join(zipfile.ZipFile(wheel).namelist())
    # What a wheel must not carry: the repository's tests, configs or data.
    assert "tests/" not in names and "configs/" not in names and "data/" not in names, names
    assert "cganalysis/cg/rtp_cbr.py" in names  # the rtp-cbr stand-in ships in the package
    site = out / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site)]
    subprocess.run([*pip, str(wheel)], check=True)
    return site


def python(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The project's interpreter with the wheel's copy of cganalysis first on sys.path."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("CGANALYSIS_PLOTTING", None)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def run_wheel(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return python(
        site, cwd, "-c", "import sys; from cganalysis.cli import main; sys.exit(main())", *args
    )


def where_from(site: Path, cwd: Path, module: str) -> Path:
    return Path(python(site, cwd, "-c", f"import {module} as m; print(m.__file__)").stdout.strip())


def test_the_wheel_matches_captures_outside_the_repository(
    wheel_site: Path, tmp_path: Path
) -> None:
    assert where_from(wheel_site, tmp_path, "cganalysis").is_relative_to(wheel_site)
    assert where_from(wheel_site, tmp_path, "cganalysis._native").is_relative_to(wheel_site)
    for name in ("ingress.pcap", "egress.pcap"):
        shutil.copyfile(FIXTURES / "dualpoint" / name, tmp_path / name)
    res = run_wheel(
        wheel_site,
        tmp_path,
        *("packets", "ingress.pcap", "egress.pcap", "-o", "packets.parquet"),
        *("--summary", "match.json"),
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "packets.parquet").stat().st_size > 0
    # The versions that made the tables are recorded; a wheel has no lock beside it.
    software = json.loads((tmp_path / "match.json").read_text())["software"]
    assert software["packages"]["cganalysis"] and software["packages"]["numpy"]
    assert software["lock"] is None


def test_the_wheel_asks_for_a_plotting_style_outside_a_project(
    wheel_site: Path, tmp_path: Path
) -> None:
    # No configs/plotting.yaml above the working folder: the installed package must not go
    # looking in the checkout it was built from, and says what to do in one line.
    code = (
        "from cganalysis.errors import ConfigError\n"
        "from cganalysis.report.style import find_style_file\n"
        "try:\n    print(find_style_file())\nexcept ConfigError as err:\n    print('ERR', err)"
    )
    out = python(wheel_site, tmp_path, "-c", code)
    assert out.stdout.startswith("ERR") and "--style" in out.stdout, out.stdout + out.stderr


def test_the_wheel_runs_an_experiment_with_its_own_rtp_stand_in(
    wheel_site: Path, tmp_path: Path
) -> None:
    need_root()
    need_tool(*TOOLS)
    run = write(short_run("wheel-rtp-cbr"), tmp_path / "run.yaml")
    res = run_wheel(wheel_site, tmp_path, "experiment", str(run), "-o", "out")
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["system"] == "rtp-cbr"
    # The stand-in (staged from the wheel's cganalysis/cg/rtp_cbr.py) sent its frames.
    sent = json.loads((tmp_path / "out" / "cg-sender.json").read_text())
    assert sent["frames"] > 100 and sent["packets"] >= sent["frames"], sent
    # An installed package sits in no git work tree: the commit is unknown, not the
    # checkout's it was built from.
    assert meta["controller"]["git"] == {"commit": None, "dirty": None}
