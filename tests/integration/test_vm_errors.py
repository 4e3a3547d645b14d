"""The vm testbed's refusals: each one line naming what is missing and how to get it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cganalysis.testbed.shared.hosts import TestbedError as VmError
from cganalysis.testbed.vm import config as vmconf
from cganalysis.testbed.vm.config import VmOptions
from tests.conftest import need_root


def _one_line(e: pytest.ExceptionInfo[VmError]) -> str:
    text = str(e.value)
    assert "\n" not in text
    return text


def test_no_kernel_names_the_install_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vmconf, "MODULES", tmp_path)
    with pytest.raises(VmError) as e:
        vmconf.find_kernel(VmOptions())
    assert "scripts/install-vm.sh" in _one_line(e) and "trixie-backports" in str(e.value)
    (tmp_path / "9.9.9-amd64").mkdir()
    (tmp_path / "9.9.9-amd64" / vmconf.MARKER).write_text("x\n")
    with pytest.raises(VmError) as e:  # marker but no image
        vmconf.find_kernel(VmOptions())
    assert "vmlinuz" in _one_line(e) and "install-vm.sh" in str(e.value)


def test_no_qemu_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(VmError) as e:
        vmconf.find_tools()
    text = _one_line(e)
    assert "qemu-system-x86_64 not found" in text and "qemu-system-x86" in text
    assert "install-vm.sh" in text


def test_bad_testbed_file_is_refused_before_anything(tmp_path: Path) -> None:
    from cganalysis.errors import ConfigError

    bad = tmp_path / "vm.yaml"
    bad.write_text("backend: vm\nvm: {cpus: 0, accel: fast}\n")
    with pytest.raises((ConfigError, ValueError)) as e:
        vmconf.load_options(bad)
    assert "cpus" in str(e.value) or "accel" in str(e.value)


def _need_vm() -> None:
    need_root()
    try:
        vmconf.find_kernel(VmOptions())
        vmconf.find_tools()
    except VmError as e:
        pytest.skip(str(e))


@pytest.mark.vm
def test_a_guest_that_cannot_boot_says_why(tmp_path: Path) -> None:
    """Not a kernel image: QEMU stops at once and its error line is the message."""
    _need_vm()
    from cganalysis.testbed.vm.testbed import Guest

    fake = tmp_path / "vmlinuz"
    fake.write_bytes(b"not a kernel" * 100)
    with pytest.raises(VmError) as e, Guest({"mode": "serve"}, VmOptions(kernel=str(fake))):
        pass
    text = _one_line(e)
    assert "stopped while booting" in text and "qemu" in text.lower(), text


@pytest.mark.vm
def test_a_guest_that_boots_too_slowly_is_killed(tmp_path: Path) -> None:
    _need_vm()
    from cganalysis.testbed.vm.testbed import Guest

    before = _qemus()
    opts = VmOptions(boot_timeout_s=5.0, accel="tcg")
    with pytest.raises(VmError) as e, Guest({"mode": "serve"}, opts):
        pass
    text = _one_line(e)
    assert "did not boot within 5 s" in text and "boot_timeout_s" in text
    assert _qemus() <= before, "QEMU left running"


def _qemus() -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if b"qemu-system" in (d / "cmdline").read_bytes().split(b"\0")[0]:
                    out.add(int(d.name))
            except OSError:
                pass
    return out


def test_guest_env_keeps_the_host_state_dirs_out() -> None:
    from cganalysis.testbed.vm.testbed import _guest_env

    os.environ["CGA_STATE_DIR"] = "/somewhere"
    try:
        env = _guest_env()
    finally:
        del os.environ["CGA_STATE_DIR"]
    assert "CGA_STATE_DIR" not in env and "PATH" in env
