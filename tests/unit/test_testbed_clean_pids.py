"""`cganalysis testbed clean` reads state files back as untrusted: it kills a recorded
process only if its pid is a positive integer that still carries the token it was
started with (procmark.py), and refuses anything else in one line. Real processes: a
`sleep` that looks like a VM's leader must survive; one carrying its token is killed.
(The remote side, over ssh: tests/integration/test_experiment_ssh.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cganalysis.testbed.clean import clean
from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.procmark import MARKER_ENV, new_marker, valid_pid
from cganalysis.testbed.vm.testbed import clean_vm
from tests.conftest import need_root


@pytest.fixture
def vng_lookalike() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A live process group whose leader's argv[0] says vng (as a reused pid could), with
    a token of its own in its environment."""
    marker = new_marker()
    proc = subprocess.Popen(
        ["bash", "-c", "exec -a vng-unrelated sleep 300"],
        start_new_session=True,
        env={**os.environ, MARKER_ENV: marker},
    )
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"vng-unrelated"):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    yield proc, marker
    proc.kill()
    proc.wait()


def test_a_pid_without_its_token_is_not_killed(
    vng_lookalike: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, _ = vng_lookalike
    for st in (
        {"vm_pgid": proc.pid, "_path": "s.json"},  # an older or edited file: no token
        {"vm_pgid": proc.pid, "vm_marker": new_marker(), "_path": "s.json"},  # another run's
    ):
        lines = clean_vm(st, dry_run=False)
        time.sleep(0.2)
        assert proc.poll() is None, "an unrelated process was killed"
        assert any(f"vm_pgid {proc.pid} not killed" in line for line in lines), lines


def test_a_process_carrying_its_token_is_killed(
    vng_lookalike: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, marker = vng_lookalike
    lines = clean_vm({"vm_pgid": proc.pid, "vm_marker": marker}, dry_run=False)
    assert lines == [f"killing VM process group {proc.pid}"]
    assert proc.wait(5) is not None


@pytest.mark.parametrize("pid", [0, -1, True, "1", 1.0, 1 << 23, None])
def test_only_positive_integers_are_pids(pid: object) -> None:
    assert valid_pid(pid) is None
    lines = clean_vm({"vm_pgid": pid, "vm_marker": new_marker(), "_path": "s.json"}, dry_run=True)
    assert all("would kill" not in line for line in lines)


def test_a_state_file_with_a_bad_owner_pid_is_not_acted_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "STATE_DIR", tmp_path)
    for i, pid in enumerate([0, -1, "x"]):
        (tmp_path / f"bad{i}.json").write_text(json.dumps({"pid": pid, "backend": "vm"}))
    (tmp_path / "list.json").write_text("[1, 2]")
    assert state.leftover_states() == []
    assert len(state.refused_states()) == 4
    assert f"{tmp_path / 'bad1.json'}: left alone: not a state file" in state.refused_states()[1]


def test_a_namespace_not_named_by_us_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_root()
    monkeypatch.setattr(state, "STATE_DIR", tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    ns = f"labprod{os.getpid()}"  # someone else's namespace, named in an edited state file
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"pid": dead.pid, "backend": "netns", "namespaces": [ns]}))
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        lines = [line for line in clean(dry_run=True) if ns in line]
        assert lines == [f"{path}: namespace {ns!r} left alone: not a name this package makes"]
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
