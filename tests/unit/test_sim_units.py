"""The ``sim`` testbed's parts that need no kernel: its testbed file, the seeded bytes
behind the guest's /dev/random, the seeding library (loaded for real, in fresh
processes), and what the host hands the guest."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run
from cganalysis.testbed.bedfile import load_testbed_file
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.sim import config as simconf
from cganalysis.testbed.sim.kernel import seeded_bytes
from tests.conftest import REPO

SIM_YAML = REPO / "configs" / "testbeds" / "sim.yaml"


def test_the_shipped_testbed_file_reads_with_its_defaults() -> None:
    bed = load_testbed_file(SIM_YAML)
    assert bed.backend == "sim"
    opts = simconf.load_options(SIM_YAML)
    assert opts == simconf.SimOptions()
    assert opts.start_ns == 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z


def test_bad_keys_name_the_key(tmp_path: Path) -> None:
    doc = yaml.safe_load(SIM_YAML.read_text())
    doc["sim"]["start_utc"] = "new year"
    bad = tmp_path / "bed.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"sim\.start_utc.*not a time"):
        simconf.load_options(bad)
    doc = yaml.safe_load(SIM_YAML.read_text())
    doc["sim"]["speed"] = 2
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="speed"):
        simconf.load_options(bad)


def test_a_run_file_names_the_sim_testbed() -> None:
    doc = yaml.safe_load((REPO / "configs" / "runs" / "quick-sim-dualpi2.yaml").read_text())
    cfg = parse_run(doc, "quick-sim-dualpi2.yaml", REPO / "configs" / "runs")
    assert cfg.testbed.kind == "sim" and cfg.bottleneck.backend == "kernel"


def test_seeded_bytes_depend_on_the_seed_alone() -> None:
    a, b = seeded_bytes(1, 4096), seeded_bytes(1, 4096)
    assert a == b and len(a) == 4096
    assert seeded_bytes(2, 4096) != a
    assert len(set(a)) > 200  # not a constant fill


def _library() -> Path:
    try:
        return simconf.find_simrng()
    except hosts.TestbedError as e:
        pytest.skip(str(e))


def _draw(lib: Path, seed: str | None) -> str:
    """Two getrandom calls through the library, in a fresh process."""
    code = (
        "import ctypes, sys\n"
        "lib = ctypes.CDLL(sys.argv[1])\n"
        "out = []\n"
        "for n in (13, 32):\n"
        "    buf = ctypes.create_string_buffer(n)\n"
        "    assert lib.getrandom(buf, n, 0) == n\n"
        "    out.append(buf.raw.hex())\n"
        "print(' '.join(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CGA_SIM_SEED"}
    if seed is not None:
        env["CGA_SIM_SEED"] = seed
    res = subprocess.run(
        [sys.executable, "-c", code, str(lib)], capture_output=True, text=True, env=env, check=True
    )
    return res.stdout.strip()


def test_the_library_answers_from_the_seed() -> None:
    lib = _library()
    first = _draw(lib, "7")
    assert first == _draw(lib, "7"), "same seed, same bytes, in another process"
    assert first != _draw(lib, "8")
    assert _draw(lib, None) == _draw(lib, "0"), "no seed is seed 0"
    a, b = first.split()
    assert len(a) == 26 and len(b) == 64 and a != b[:26], "the stream moves on"


def test_a_missing_library_says_what_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(simconf.SIMRNG_ENV, str(tmp_path / "none.so"))
    with pytest.raises(hosts.TestbedError, match=r"CGA_SIMRNG_LIB.*install\.sh"):
        simconf.find_simrng()


def test_a_kernel_without_time_travel_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A folder only root or this user may write ($CGA_SIM_KERNEL's check; /tmp is not).
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        Path(folder).chmod(0o755)
        fake = Path(folder) / "linux"
        fake.write_text("#!/bin/sh\necho 'usage: no such options'\n")
        fake.chmod(0o755)
        monkeypatch.setenv(simconf.KERNEL_ENV, str(fake))
        with pytest.raises(hosts.TestbedError, match=r"no time-travel mode.*build-uml\.sh"):
            simconf.find_sim_kernel(simconf.SimOptions())
        # Time travel but no seccomp userspace (UML before 6.17): the key to change is named.
        fake.write_text("#!/bin/sh\necho 'time-travel=inf-cpu'\n")
        with pytest.raises(hosts.TestbedError, match=r"no seccomp userspace.*sim\.userspace"):
            simconf.find_sim_kernel(simconf.SimOptions())


def test_a_sender_that_spins_on_the_clock_is_refused() -> None:
    """Refused when the run file is read, on a testbed whose clock is simulated; kept where
    the clock is real."""
    doc = yaml.safe_load((REPO / "configs" / "runs" / "quick-sim-dualpi2.yaml").read_text())
    doc["cg"]["sender_args"] = ["--spin-us", "50"]
    with pytest.raises(
        ConfigError,
        match=r"spin\.yaml: key cg\.sender_args: cannot run on the sim testbed's simulated "
        r"clock: --spin-us 50 busy-waits",
    ):
        parse_run(doc, "spin.yaml", REPO / "configs" / "runs")
    doc["testbed"] = "netns"
    assert parse_run(doc, "spin.yaml", REPO / "configs" / "runs").cg.sender_args
    doc["cg"]["sender_args"] = ["--spin-us", "0"]
    doc["testbed"] = "sim"
    assert parse_run(doc, "spin.yaml", REPO / "configs" / "runs").testbed.kind == "sim"


def test_a_sim_campaigns_dataset_is_named_by_the_hosts_day() -> None:
    """A sim run's own times start at sim.start_utc (simulated): the dataset takes the day
    the host ran it."""
    from cganalysis.dataset.published import dated_name

    sim_meta = {
        "start_ns": 1_767_225_600 * 10**9,  # 2026-01-01, simulated
        "testbed": {"sim": {"host_start_utc": "2026-11-26T19:46:13+00:00"}},
    }
    assert dated_name("tma2024-sim", [sim_meta]) == "tma2024-sim-2026-11-26"
    assert dated_name("tma2024", [{"start_ns": 1_767_225_600 * 10**9}]) == "tma2024-2026-01-01"
