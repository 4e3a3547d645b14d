"""One run at a time per testbed: a second run waits for the first, saying for whom."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cganalysis.testbed.shared import lock

HOLD = """
import sys, time
from cganalysis.testbed.shared.lock import testbed_lock
with testbed_lock("netns", "run-a", lambda m: None):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def test_a_second_run_waits_for_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, "2.0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "CGA_LOCK_DIR": str(tmp_path)},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    said: list[str] = []
    t0 = time.monotonic()
    with lock.testbed_lock("netns", "run-b", said.append):
        waited = time.monotonic() - t0
    holder.wait(5)
    # The first run held the testbed for 2 s after saying so: the second waited that long.
    assert waited > 1.5, f"got the testbed after {waited:.2f} s, while the first run held it"
    assert said[0] == f"waiting for testbed netns: held by pid {holder.pid} (run-a)"
    assert said[-1].startswith("testbed netns free after")


def test_other_testbeds_do_not_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path)
    said: list[str] = []
    with lock.testbed_lock("netns", "a", said.append):
        other = lock.lock_name("ssh", tmp_path / "lab.yaml")
        assert other.startswith("ssh-") and other != lock.lock_name("ssh", tmp_path / "b.yaml")
        with lock.testbed_lock(other, "b", said.append):
            pass
    assert said == []
    # Released: the same testbed is free again at once.
    with lock.testbed_lock("netns", "c", said.append):
        pass
    assert said == []


def test_a_pool_run_takes_the_first_free_testbed_and_waits_when_all_are_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path)
    said: list[str] = []
    pool = ["netns-a", "netns-b"]
    with lock.hold_one_of(pool, "run-1", said.append) as first:
        with lock.hold_one_of(pool, "run-2", said.append) as second:
            assert (first, second) == (0, 1)
        # run-2 is over: its testbed is the free one now.
        with lock.hold_one_of(pool, "run-3", said.append) as third:
            assert third == 1
    assert said == []
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD.replace('"netns"', '"netns-b"'), "1.5"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "CGA_LOCK_DIR": str(tmp_path)},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with lock.hold_one_of(pool, "run-4", said.append) as fourth:
        # netns-a is free: no waiting although netns-b is held by another process.
        assert fourth == 0 and said == []
        t0 = time.monotonic()
        with lock.hold_one_of(pool, "run-5", said.append) as fifth:
            waited = time.monotonic() - t0
            assert fifth == 1
    holder.wait(5)
    assert waited > 1.0, "run-5 must wait until the other process released netns-b"
    assert said[0].startswith("waiting for testbed netns-a: held by pid ")
    assert f"netns-b: held by pid {holder.pid} (run-a)" in said[0]
    assert said[-1].startswith("testbed netns-b free after")
