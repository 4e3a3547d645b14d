"""Which kernel a testbed boots: what a shared testbed file may name, what only local
configuration may give (and its ownership check before anything runs), and the boot
probe that refuses a kernel this CPU cannot run (fed the real console of Debian 12's UML
on an AMX host, and real processes standing in for kernels)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cganalysis.errors import ConfigError
from cganalysis.testbed.shared.hosts import TestbedError as Refused
from cganalysis.testbed.sim import config as simconf
from cganalysis.testbed.sim.kernel import ERROR_MARK, console_tail
from cganalysis.testbed.uml import boot as umlboot
from cganalysis.testbed.uml import config as umlconf
from cganalysis.testbed.vm import config as vmconf

#: The console of Debian 12's user-mode-linux (6.1) booting on an Intel Xeon with AMX.
AMX_CONSOLE = """\
Core dump limits :
	soft - 0
	hard - NONE
Checking that ptrace can change system call numbers...OK
Checking syscall emulation for ptrace...OK
Checking environment variables for a tempdir...none found
Checking if /dev/shm is on tmpfs...OK
Checking PROT_EXEC mmap in /dev/shm...OK
userspace - ptrace set fp regs failed, errno = 14
Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b
CPU: 0 PID: 1 Comm: python3 Not tainted 6.1.0-0.deb12.1-um #1 Debian 6.1.52-1
Stack:
 6056ad70 60038b45 00000001 00000001
Call Trace:
 [<6003a8a2>] ? _printk+0x0/0x98
"""


@pytest.fixture
def safe_dir() -> Iterator[Path]:
    """A folder root or this user owns, as every folder above it, writable by no one else
    (pytest's tmp_path is under /tmp, which everyone may write)."""
    path = Path(tempfile.mkdtemp(prefix=".cga-kernel-test-", dir=Path.home()))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def boot_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "uml-boot.json"
    monkeypatch.setattr(umlboot, "CACHE", cache)
    return cache


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _ran(marker: Path) -> str:
    """A kernel that records each run in ``marker`` before anything else."""
    return f"#!/bin/sh\necho ran >> {marker}\n"


# -- what a shared testbed file may say --------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "section", "env"),
    [
        (umlconf.parse_options, "uml", "CGA_UML_KERNEL"),
        (simconf.parse_options, "sim", "CGA_SIM_KERNEL"),
        (vmconf.parse_options, "vm", "CGA_VM_KERNEL"),
    ],
)
@pytest.mark.parametrize("path", ["/home/lab/linux", "./linux", "../x/vmlinuz", "linux-1/../../x"])
def test_a_testbed_file_may_not_give_a_kernel_path(
    parse: object, section: str, env: str, path: str
) -> None:
    doc = {"backend": section, section: {"kernel": path}}
    with pytest.raises(ConfigError) as e:
        parse(doc, "shared.yaml")  # type: ignore[operator]
    message = str(e.value)
    assert "\n" not in message
    assert f"shared.yaml: key {section}.kernel" in message and repr(path) in message
    assert f"${env}" in message


def test_a_testbed_file_names_the_installs_kernels() -> None:
    for name in ("auto", "built", "debian", "linux-7.3.4", "linux-7.3.4+deb13-um"):
        doc = {"backend": "uml", "uml": {"kernel": name}}
        assert umlconf.parse_options(doc, "bed.yaml").kernel == name
        doc = {"backend": "sim", "sim": {"kernel": name}}
        assert simconf.parse_options(doc, "bed.yaml").kernel == name
    doc = {"backend": "vm", "vm": {"kernel": "7.3.4+deb13-amd64"}}
    assert vmconf.parse_options(doc, "bed.yaml").kernel == "7.3.4+deb13-amd64"


def test_a_named_kernel_comes_from_the_install_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = tmp_path / "built"
    built.mkdir()
    (built / "linux-7.3.4").write_text("")
    (built / "linux-7.3.4.info").write_text("release 7.3.4\n")
    monkeypatch.setattr(umlconf, "BUILT", built)
    monkeypatch.delenv("CGA_UML_KERNEL", raising=False)
    kernel = umlconf.find_kernel(umlconf.UmlOptions(kernel="linux-7.3.4"))
    assert kernel.path == built / "linux-7.3.4" and kernel.info["release"] == "7.3.4"
    with pytest.raises(Refused, match=r"uml.kernel linux-7.3.4.info: .*\(installed: linux-7.3.4\)"):
        umlconf.find_kernel(umlconf.UmlOptions(kernel="linux-7.3.4.info"))


# -- a path from local configuration -----------------------------------------------------


def test_a_local_kernel_that_only_root_or_you_could_have_put_there_is_taken(
    safe_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = _executable(safe_dir / "linux", "#!/bin/sh\n")
    link = safe_dir / "current"
    link.symlink_to("linux")
    monkeypatch.setenv("CGA_UML_KERNEL", str(link))
    found = umlconf.find_kernel(umlconf.UmlOptions(kernel="debian"))
    assert (found.path, found.origin) == (kernel, "local")
    monkeypatch.setenv("CGA_VM_KERNEL", str(kernel))
    assert vmconf.find_kernel(vmconf.VmOptions()) == (safe_dir.name, kernel)


@pytest.mark.parametrize("writable", ["folder", "file"])
def test_a_local_kernel_others_could_replace_is_refused_before_it_runs(
    safe_dir: Path, monkeypatch: pytest.MonkeyPatch, writable: str
) -> None:
    marker = safe_dir / "ran"
    folder = safe_dir / "shared"
    folder.mkdir()
    kernel = _executable(folder / "linux", _ran(marker))
    (folder if writable == "folder" else kernel).chmod(0o777)
    monkeypatch.setenv("CGA_SIM_KERNEL", str(kernel))
    with pytest.raises(Refused) as e:
        simconf.find_sim_kernel(simconf.SimOptions())
    message = str(e.value)
    assert "\n" not in message and "$CGA_SIM_KERNEL" in message and str(kernel) in message
    bad = folder if writable == "folder" else kernel
    assert f"{bad} is writable by its group or others (mode 0777)" in message
    assert not marker.exists(), "the refused kernel ran"


def test_a_local_kernel_owned_by_someone_else_is_refused(
    safe_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    kernel = _executable(safe_dir / "linux", "#!/bin/sh\n")
    os.chown(kernel, 65534, 65534)
    monkeypatch.delenv("SUDO_UID", raising=False)
    monkeypatch.setenv("CGA_UML_KERNEL", str(kernel))
    with pytest.raises(Refused, match=r"\$CGA_UML_KERNEL: .* owned by uid 65534"):
        umlconf.find_kernel(umlconf.UmlOptions())


def test_a_local_kernel_that_is_not_there_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CGA_UML_KERNEL", "/nowhere/linux")
    with pytest.raises(Refused, match=r"^\$CGA_UML_KERNEL: /nowhere/linux not found"):
        umlconf.find_kernel(umlconf.UmlOptions())
    monkeypatch.setenv("CGA_UML_KERNEL", "linux")
    with pytest.raises(Refused, match=r"not an absolute path"):
        umlconf.find_kernel(umlconf.UmlOptions())


# -- the boot probe ----------------------------------------------------------------------


def test_the_amx_panic_is_recognised_from_its_console() -> None:
    why = umlboot.diagnose(AMX_CONSOLE, ["fpu", "xsave", "amx_bf16", "amx_tile", "amx_int8"])
    assert why is not None
    assert "floating-point register buffer is smaller than this CPU's extended state" in why
    assert "errno = 14" in why and "amx_tile amx_int8 amx_bf16" in why
    assert "amx" not in (umlboot.diagnose(AMX_CONSOLE, ["fpu", "xsave"]) or "amx")
    other = "Kernel panic - not syncing: No working init found.\n"
    assert umlboot.diagnose(other, []) == "it panicked at boot (No working init found.)"
    assert (
        umlboot.diagnose("Checking that ptrace can change system call numbers...OK\n", []) is None
    )


#: Stands in for a kernel that boots: answers the agent's ready line on its serial line
#: (``ssl0=fd:N``) and powers off when the host's end closes or asks it to halt.
GOOD_KERNEL = """#!PYTHON
import os, sys
open(MARKER, "a").write("booted\\n")
fd = int(next(a for a in sys.argv if a.startswith("ssl0=fd:")).split(":")[1])
os.write(fd, b'{"ready": {"release": "7.3.4"}}\\n')
while (data := os.read(fd, 4096)) and b"halt" not in data:
    pass
"""


def _good_kernel(marker: Path) -> str:
    return GOOD_KERNEL.replace("PYTHON", sys.executable).replace("MARKER", repr(str(marker)))


def _bad_kernel(marker: Path) -> str:
    """Stands in for Debian's 6.1 on an AMX host: its console, then the panic's exit."""
    return f"{_ran(marker)}cat <<'EOF'\n{AMX_CONSOLE}EOF\nexit 1\n"


def test_auto_boots_the_kernel_that_can_and_a_named_one_that_cannot_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, boot_cache: Path
) -> None:
    if shutil.which("setpriv") is None or not Path("/usr/bin/python3").is_file():
        pytest.skip("booting needs setpriv and /usr/bin/python3")
    monkeypatch.delenv("CGA_UML_KERNEL", raising=False)
    bad_runs, good_runs = tmp_path / "bad-runs", tmp_path / "good-runs"
    debian = _executable(tmp_path / "linux.uml", _bad_kernel(bad_runs))
    built = tmp_path / "built"
    built.mkdir()
    _executable(built / "linux-7.3.4", _good_kernel(good_runs))
    (built / "linux").symlink_to("linux-7.3.4")
    monkeypatch.setattr(umlconf, "DEBIAN", debian)
    monkeypatch.setattr(umlconf, "BUILT", tmp_path / "none")

    # Only Debian's: auto has nothing that boots, and says what to do in one line.
    with pytest.raises(Refused) as e:
        umlboot.usable_kernel(umlconf.UmlOptions())
    message = str(e.value)
    assert "\n" not in message and "Kernel panic" not in message
    assert message.startswith(f"uml.kernel auto ({debian}) cannot boot on this host: ")
    assert "floating-point register buffer" in message and "scripts/build-uml.sh" in message

    # With the project's kernel, auto takes it and debian is still refused, from the cache.
    monkeypatch.setattr(umlconf, "BUILT", built)
    assert umlboot.usable_kernel(umlconf.UmlOptions()).path == built / "linux-7.3.4"
    with pytest.raises(Refused, match=r"^uml.kernel debian .* cannot boot on this host"):
        umlboot.usable_kernel(umlconf.UmlOptions(kernel="debian"))
    assert bad_runs.read_text().count("ran") == 1, "the verdict was not cached"
    assert good_runs.read_text().count("booted") == 1
    verdicts = json.loads(boot_cache.read_text())
    assert sorted(v["boots"] for v in verdicts.values()) == [False, True]
    assert umlboot.verdicts() == {
        f"built {built / 'linux-7.3.4'}": "boots",
        f"debian {debian}": f"cannot boot: {umlboot.diagnose(AMX_CONSOLE)}",
    }


# -- a sim guest that ends without a result ----------------------------------------------


def test_a_guest_without_a_result_says_its_own_last_error(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_text(
        "Failed to initialize ubd device 0 :Couldn't determine size of device's file\n"
        f"{ERROR_MARK}the guest's init failed: FileNotFoundError: [Errno 2] No such file "
        "or directory: '/tmp/x/.venv/bin/python'\n"
        "reboot: System halted\n"
        "sysrq: Power Off\n"
    )
    tail = console_tail(console)
    assert tail.startswith("the guest's init failed: FileNotFoundError")
    assert "ubd" not in tail


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")
def test_a_private_tmpfs_keeps_the_host_paths_the_guest_needs(tmp_path: Path) -> None:
    """private_tmpfs in a mount namespace of its own: a kept folder (a venv under /tmp)
    stays, through a symbolic link too; everything else is hidden, and new files land in
    the tmpfs."""
    point = tmp_path / "tmp"
    (point / "co" / ".venv" / "bin").mkdir(parents=True)
    (point / "co" / ".venv" / "bin" / "python").write_text("py")
    (point / "other").write_text("hidden")
    (point / "link").symlink_to(point / "co")
    script = (
        "import os, sys; from cganalysis.testbed.uml.agent import private_tmpfs; "
        f"private_tmpfs({str(point)!r}, [{str(point / 'link' / '.venv')!r}, '/elsewhere']); "
        f"open({str(point / 'new')!r}, 'w').write('x'); "
        f"print(sorted(os.listdir({str(point)!r})), "
        f"open({str(point / 'link' / '.venv' / 'bin' / 'python')!r}).read())"
    )
    res = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["['link',", "'new']", "py"]
    assert not (point / "new").exists(), "the guest's file landed in the host's folder"
