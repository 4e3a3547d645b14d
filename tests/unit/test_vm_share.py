"""What a `vm` guest may write on this machine: a fresh staging folder per run (never the
campaign folder), taken by the host only if it holds one run folder of plain files with
plain names; and the control folder, where the host never follows a symlink the guest
made. (The whole vm run needs QEMU and the guest kernel, tests/integration/test_vm_*.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cganalysis.errors import ConfigError
from cganalysis.experiment import rundir
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.vm.share import new_share, take_run, write_shared


def _run(share: Path, name: str = "r1") -> Path:
    run = share / name
    (run / "logs").mkdir(parents=True)
    (run / "meta.json").write_text("{}")
    (run / "logs" / "iperf3-step01.json").write_text("{}")
    return run


def test_the_share_is_fresh_empty_and_beside_the_run(tmp_path: Path) -> None:
    out = tmp_path / "campaign" / "r1"
    (tmp_path / "campaign" / "r0").mkdir(parents=True)  # another run of the campaign
    share = new_share(out)
    assert share.parent == out.parent and list(share.iterdir()) == []
    assert share.name.startswith(".r1.vmshare-")
    assert new_share(out) != share


def test_a_plain_run_is_taken_and_committed(tmp_path: Path) -> None:
    out = tmp_path / "campaign" / "r1"
    share = new_share(out)
    _run(share)
    rundir.commit(take_run(share, "r1"), out)
    assert (out / "logs" / "iperf3-step01.json").read_text() == "{}"
    assert list(share.iterdir()) == []


def _replace_by_link(path: Path, target: str) -> None:
    path.unlink()
    path.symlink_to(target)


@pytest.mark.parametrize(
    ("plant", "words"),
    [
        (lambda run: _replace_by_link(run / "meta.json", "/etc/shadow"), "meta.json: not a plain"),
        (lambda run: (run / "logs" / "etc").symlink_to("/etc"), "logs/etc: not a plain file"),
        (lambda run: os.mkfifo(run / "pipe"), "pipe: not a plain file"),
        (lambda run: os.link(run / "meta.json", run / "meta2.json"), "meta.json: not a plain"),
        (lambda run: (run / ".hidden").write_text(""), ".hidden: a name the guest may not"),
        (lambda run: (run / "a b").write_text(""), "a b: a name the guest may not"),
        (lambda run: (run.parent / "r0").mkdir(), "holds ['r0', 'r1'], not one run folder"),
    ],
)
def test_anything_but_plain_files_is_refused_in_one_line(
    tmp_path: Path, plant: object, words: str
) -> None:
    out = tmp_path / "campaign" / "r1"
    share = new_share(out)
    assert callable(plant)
    plant(_run(share))
    with pytest.raises(hosts.TestbedError) as err:
        take_run(share, "r1")
    assert words in str(err.value) and "\n" not in str(err.value), err.value
    assert not out.exists()


def test_a_run_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    share = new_share(tmp_path / "campaign" / "r1")
    (tmp_path / "elsewhere").mkdir()
    (share / "r1").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(hosts.TestbedError, match="r1: not a plain file or folder"):
        take_run(share, "r1")


def test_an_existing_run_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "campaign" / "r1"
    (out).mkdir(parents=True)
    (out / "meta.json").write_text("the old run")
    share = new_share(out)
    _run(share)
    with pytest.raises(ConfigError, match="exists: run directories are never overwritten"):
        rundir.commit(take_run(share, "r1"), out)
    assert (out / "meta.json").read_text() == "the old run"


def test_the_host_does_not_follow_a_symlink_in_the_control_folder(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    (ctl / "heartbeat").symlink_to(victim)  # what a guest could leave there
    write_shared(ctl / "heartbeat", "7")
    assert victim.read_text() == "precious"
    assert (ctl / "heartbeat").read_text() == "7" and not (ctl / "heartbeat").is_symlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ctl / "req").symlink_to(elsewhere)  # a request folder swapped for a link
    with pytest.raises(OSError):
        write_shared(ctl / "req" / "000001.json", "{}")
    assert list(elsewhere.iterdir()) == []
