"""``sim.cpu``: which host CPU a sim run's kernel is pinned to (testbed/sim/cpu.py).

The processes here are real: ``taskset`` pins them, and the "kernels" ``auto`` counts are
sleeping processes carrying a sim kernel's command-line words.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.sim import config as simconf
from cganalysis.testbed.sim.cpu import KERNEL_WORDS, chosen_cpu, pin_argv, pinned_kernels

ALLOWED = sorted(os.sched_getaffinity(0))


def _bed(tmp_path: Path, cpu: object) -> Path:
    bed = tmp_path / "bed.yaml"
    bed.write_text(yaml.safe_dump({"backend": "sim", "sim": {"cpu": cpu}}))
    return bed


@pytest.mark.parametrize(("given", "read"), [("auto", "auto"), ("none", "none"), (1, 1)])
def test_the_key_reads_auto_none_or_a_number(tmp_path: Path, given: object, read: object) -> None:
    assert simconf.load_options(_bed(tmp_path, given)).cpu == read


@pytest.mark.parametrize("given", ["fast", -1, True, 1.5])
def test_anything_else_is_refused_naming_the_key(tmp_path: Path, given: object) -> None:
    with pytest.raises(ConfigError, match=r"sim\.cpu.*not auto, none or a CPU"):
        simconf.load_options(_bed(tmp_path, given))


def test_none_pins_nothing_and_a_number_pins_that_cpu() -> None:
    assert chosen_cpu("none") is None and pin_argv(None) == []
    cpu = ALLOWED[-1]
    assert chosen_cpu(cpu) == cpu
    status = subprocess.run(
        [*pin_argv(cpu), "cat", "/proc/self/status"], capture_output=True, text=True, check=True
    ).stdout
    assert f"Cpus_allowed_list:\t{cpu}\n" in status


def test_a_cpu_this_process_may_not_use_is_refused() -> None:
    with pytest.raises(hosts.TestbedError, match=r"sim\.cpu 4096 is not a CPU"):
        chosen_cpu(4096)


@pytest.fixture
def decoys() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _decoy(cpu: int) -> subprocess.Popen[bytes]:
    """A sleeping process that looks like a sim kernel pinned to ``cpu``."""
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    return subprocess.Popen([*pin_argv(cpu), *sleep, *(w.decode() for w in KERNEL_WORDS)])


def _wait_counted(cpu: int, at_least: int) -> None:
    for _ in range(100):
        if pinned_kernels()[cpu] >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError(f"the decoys on CPU {cpu} were never counted")


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs")
def test_auto_takes_the_cpu_with_the_fewest_pinned_kernels(
    decoys: list[subprocess.Popen[bytes]],
) -> None:
    # Every CPU but the last gets more pinned "kernels" than any CPU has now (other sim
    # runs on this machine count too): auto must take the last, never the first.
    target = ALLOWED[-1]
    more = max(pinned_kernels().values(), default=0) + 1
    for cpu in ALLOWED[:-1]:
        decoys.extend(_decoy(cpu) for _ in range(more))
    for cpu in ALLOWED[:-1]:
        _wait_counted(cpu, more)
    assert chosen_cpu("auto") == target
