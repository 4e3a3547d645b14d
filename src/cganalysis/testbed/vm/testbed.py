"""The ``vm`` testbed: the whole namespace testbed inside a VM booted from a Debian kernel.

The host's kernel may lack the queue disciplines a run asks for (this machine kind: no
netem, sfq, fq_codel, cake). ``scripts/install-vm.sh`` fetches Debian's backports kernel
(which has them as modules) and virtme-ng; a run with ``testbed: vm`` then boots that
kernel with QEMU on this machine's own file system (read-only, writable overlays on /tmp,
/etc, /var; a control folder and a fresh, empty staging folder for the run shared
writable, vm/share.py: the guest writes nowhere else here) and runs the
ordinary ``netns`` testbed inside it (``vm/guest.py``): server, router and client
namespaces, the captures, iperf3 and the CG source all run on the guest's kernel, so the
qdiscs are the kernel's own and the captures keep one clock.

The control channel is the shared control folder: the host writes a job and a heartbeat,
the guest writes ``ready``, its output, and a result (or, in ``serve`` mode, answers
command requests, which the tests and ``testbed check`` use). The guest may have put
anything there, so the host writes into it without following symlinks (vm/share.py).
The guest stops its job when the heartbeat stops (the host process was killed), so the
VM never outlives the run; QEMU runs in its own process group, which teardown and
``cganalysis testbed clean`` kill.

KVM is used when the host offers a working one (tried first; on this machine kind it
faults at once), else QEMU's TCG; which one is in meta.json (``testbed.vm.accel``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.hosts import Result, TestbedError
from cganalysis.testbed.shared.procmark import (
    MARKER_ENV,
    is_ours,
    new_marker,
    valid_marker,
    valid_pid,
)
from cganalysis.testbed.vm.config import (
    GUEST_ENV,
    HEARTBEAT_TIMEOUT_S,
    MARKER,
    VmOptions,
    find_kernel,
    find_tools,
    in_guest,
    load_options,
)
from cganalysis.testbed.vm.share import open_for_write, write_shared

__all__ = [
    "Guest",
    "VmOptions",
    "clean_vm",
    "find_kernel",
    "find_tools",
    "in_guest",
    "load_options",
]


def _kvm_offered() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def _first_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[0].strip() if lines else ""


#: Programs for the guest only (scripts/build-dualpi2.sh: a tc that knows dualpi2).
GUEST_BIN = Path("/usr/local/lib/cganalysis-vm/bin")
#: Environment the guest's job inherits (the rest of the host's is not wanted there).
_PASS_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV")


def _guest_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _PASS_ENV or k.startswith("CGA_")}
    # The host's state and lock folders are not the guest's concern (its /run is its own).
    for k in ("CGA_STATE_DIR", "CGA_LOCK_DIR", GUEST_ENV):
        env.pop(k, None)
    if GUEST_BIN.is_dir():
        # scripts/build-dualpi2.sh's tc (iproute2 >= 6.18): the guest's only, first.
        env["PATH"] = f"{GUEST_BIN}:{env.get('PATH', os.defpath)}"
    return env


class Guest:
    """One booted guest running ``vm/guest.py`` on a job (``experiment``, ``serve``, ...).

    Use as a context manager: the guest is stopped (and killed if need be) on exit.
    """

    def __init__(
        self,
        job: dict[str, Any],
        opts: VmOptions | None = None,
        rwdirs: list[Path] | None = None,
        progress: Any = None,
        qemu_opts: list[str] | None = None,
    ) -> None:
        self.opts = opts or VmOptions()
        self.job = job
        #: Extra QEMU words (the VM router's NICs, ssh/vmrouter.py): validated by the caller.
        self.qemu_opts = list(qemu_opts or [])
        self.rwdirs = [p.resolve() for p in rwdirs or []]
        self.say = progress or (lambda _m: None)
        self.version, self.vmlinuz = find_kernel(self.opts)
        self.vng, self.qemu = find_tools()
        self.ctl = Path(tempfile.mkdtemp(prefix="cga-vm-", dir=os.environ.get("CGA_VM_DIR")))
        self.tag = state.new_tag()
        self.state = state.StateFile(self.tag, {"backend": "vm"})
        self.popen: Any = None
        self.info: dict[str, Any] = {}
        self._beat_stop = threading.Event()
        self._seq = 0
        self._log_pos = 0

    # --- boot --------------------------------------------------------------------------
    def __enter__(self) -> Guest:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        (self.ctl / "req").mkdir()
        (self.ctl / "resp").mkdir()
        write_shared(self.ctl / "heartbeat", "0")
        threading.Thread(target=self._heartbeat, daemon=True).start()
        kvm = _kvm_offered()
        accels = {"auto": ["kvm", "tcg"] if kvm else ["tcg"], "kvm": ["kvm"]}.get(
            self.opts.accel, ["tcg"]
        )
        kvm_note = "no usable /dev/kvm" if self.opts.accel == "auto" and not kvm else None
        base = {
            "kernel_version": self.version,
            "vmlinuz": str(self.vmlinuz),
            "kernel_package": _read(self.vmlinuz.parent / MARKER).strip() or None,
            "qemu": _first_line(_output([self.qemu, "--version"])),
            "virtme_ng": _first_line(_output([self.vng, "--version"])),
            "memory_mb": self.opts.memory_mb,
            "cpus": self.opts.cpus,
        }
        for i, accel in enumerate(accels):
            t0 = time.monotonic()
            self.info = {**base, "accel": accel, "kvm_note": kvm_note}
            err = self._boot(accel)
            if err is None:
                self.info["boot_s"] = round(time.monotonic() - t0, 2)
                self.info["guest"] = json.loads(_read(self.ctl / "ready") or "{}")
                return
            if accel == "kvm" and i + 1 < len(accels):
                kvm_note = f"KVM refused: {err}"
                self.say(f"vm: {kvm_note}; booting with TCG (slower)")
                continue
            raise TestbedError(err)

    def _boot(self, accel: str) -> str | None:
        """Boots; None once the guest's job said ready, else why not (one line)."""
        job = {
            **self.job,
            "env": _guest_env(),
            "heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S,
            "vm": self.info,
        }
        write_shared(self.ctl / "job.json", json.dumps(job))
        for name in ("ready", "rc", "result.json", "guest.out", "guest.err"):
            (self.ctl / name).unlink(missing_ok=True)
        ctl = str(self.ctl)
        script = (
            f"{_q(sys.executable)} -m cganalysis.testbed.vm.guest {_q(ctl)} "
            f"> {_q(ctl + '/guest.out')} 2> {_q(ctl + '/guest.err')}; "
            f"echo $? > {_q(ctl + '/rc')}"
        )
        argv = [
            self.vng, "--run", str(self.vmlinuz), "--force-9p", "--verbose",
            "--cpus", str(self.opts.cpus), "--memory", f"{self.opts.memory_mb}M",
            "--name", "cga-vm", "--rwdir", ctl,
            *[w for d in self.rwdirs for w in ("--rwdir", str(d))],
            *(["--disable-kvm"] if accel == "tcg" else []),
            "--exec", script,
            # vng runs virtme-run through a shell with these words last, space-joined.
            *([f"--qemu-opts={' '.join(self.qemu_opts)}"] if self.qemu_opts else []),
        ]  # fmt: skip
        console = os.fdopen(open_for_write(self.ctl / f"console-{accel}.log"), "wb")
        marker = new_marker()  # tells `clean` the group's leader is still ours (procmark.py)
        try:
            # Own process group (vng, virtme-run and QEMU): teardown and clean kill it whole.
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=ctl,
                # vng starts virtme-run from the PATH: the one beside it, venv not activated.
                env={
                    **os.environ,
                    "PATH": f"{Path(self.vng).parent}:{os.environ.get('PATH', '')}",
                    MARKER_ENV: marker,
                },
            )
        finally:
            console.close()
        self.state.update(vm_pgid=self.popen.pid, vm_marker=marker, ctl=ctl, argv=argv)
        deadline = time.monotonic() + self.opts.boot_timeout_s
        while not (self.ctl / "ready").exists():
            if self.popen.poll() is not None:
                log = _read(self.ctl / f"console-{accel}.log")
                why = _boot_failure(log) or _read(self.ctl / "guest.err").strip()[-300:]
                self.popen = None
                return (
                    f"vm testbed: the guest ({self.version}, {accel}) stopped while booting: "
                    + (why or f"no reason in {self.ctl}/console-{accel}.log")
                )
            if time.monotonic() > deadline:
                self._kill()
                return (
                    f"vm testbed: the guest ({self.version}, {accel}) did not boot within "
                    f"{self.opts.boot_timeout_s:g} s; give it longer (vm.boot_timeout_s in a "
                    f"testbed file) or see {self.ctl}/console-{accel}.log"
                )
            time.sleep(0.1)
        return None

    def _heartbeat(self) -> None:
        n = 0
        while not self._beat_stop.wait(1.0):
            n += 1
            try:
                write_shared(self.ctl / "heartbeat", str(n))
            except OSError:
                return

    # --- serve mode ----------------------------------------------------------------------
    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 60.0) -> Result:
        """Runs ``argv`` in the guest (serve mode) and returns its result."""
        self._seq += 1
        name = f"{self._seq:06d}.json"
        write_shared(self.ctl / "req" / name, json.dumps({"argv": argv, "timeout_s": timeout_s}))
        resp = self.ctl / "resp" / name
        deadline = time.monotonic() + timeout_s + 30.0
        while not resp.exists():
            if self.popen is None or self.popen.poll() is not None:
                raise TestbedError(
                    f"vm testbed: the guest ended while running `{' '.join(argv)}`: "
                    f"{_read(self.ctl / 'guest.err').strip()[-300:]}"
                )
            if time.monotonic() > deadline:
                raise TestbedError(f"vm testbed: no answer from the guest to `{' '.join(argv)}`")
            time.sleep(0.01)
        data = json.loads(resp.read_text(encoding="utf-8"))
        resp.unlink()
        res = Result(argv, data["returncode"], data["stdout"], data["stderr"])
        return res.check("the vm guest") if check else res

    # --- job mode ------------------------------------------------------------------------
    def wait_job(self) -> dict[str, Any]:
        """Relays the guest job's output lines until it ends; returns result.json."""
        while True:
            self._relay()
            if (self.ctl / "rc").exists() or self.popen is None or self.popen.poll() is not None:
                break
            time.sleep(0.2)
        self._relay()
        result = _read(self.ctl / "result.json")
        if not result:
            err = _read(self.ctl / "guest.err").strip()
            raise TestbedError(
                "vm testbed: the guest's job ended without a result: "
                + (err[-400:] or _boot_failure(_read_console(self.ctl)) or "no output")
            )
        out: dict[str, Any] = json.loads(result)
        return out

    def _relay(self) -> None:
        text = _read(self.ctl / "guest.out")
        if len(text) > self._log_pos:
            chunk = text[self._log_pos :]
            end = chunk.rfind("\n") + 1
            for line in chunk[:end].splitlines():
                self.say(line)
            self._log_pos += end

    # --- teardown ------------------------------------------------------------------------
    def stop(self) -> None:
        """Asks the guest's job to stop, waits for the guest to power off, else kills it."""
        if self.popen is not None and self.popen.poll() is None:
            write_shared(self.ctl / "stop", "")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(30.0)
        self._kill()
        self._beat_stop.set()
        self.state.remove()
        if not os.environ.get("CGA_VM_KEEP_CTL"):
            shutil.rmtree(self.ctl, ignore_errors=True)

    def _kill(self) -> None:
        if self.popen is not None:
            kill_group(self.popen.pid)
            self.popen.wait()
            self.popen = None


def kill_group(pgid: int) -> bool:
    """SIGTERM then SIGKILL to process group ``pgid`` (vng, virtme-run, QEMU)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return True


def clean_vm(st: dict[str, Any], dry_run: bool) -> list[str]:
    """For ``cganalysis testbed clean``: the VM of a run whose process is gone."""
    out = []
    pgid, marker = valid_pid(st.get("vm_pgid")), valid_marker(st.get("vm_marker"))
    if pgid is not None and marker is not None and is_ours(pgid, marker) and _is_vm_group(pgid):
        out.append(f"{'would kill' if dry_run else 'killing'} VM process group {pgid}")
        if not dry_run:
            kill_group(pgid)
    elif st.get("vm_pgid") is not None:
        out.append(
            f"{st.get('_path')}: vm_pgid {st.get('vm_pgid')!r} not killed: not a VM this "
            "machine started that still carries its token (gone, reused or edited)"
        )
    ctl = st.get("ctl")
    if isinstance(ctl, str) and Path(ctl).name.startswith("cga-vm-") and Path(ctl).is_dir():
        out.append(f"{'would remove' if dry_run else 'removing'} {ctl}")
        if not dry_run:
            shutil.rmtree(ctl, ignore_errors=True)
    return out


def _is_vm_group(pgid: int) -> bool:
    """Only a group whose leader is still vng (pids are reused)."""
    try:
        cmd = Path(f"/proc/{pgid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"vng" in w or b"virtme" in w for w in cmd[:2])


def _boot_failure(console: str) -> str:
    """The line of a console log that says why a boot failed, if one does."""
    keys = ("qemu", "Kernel panic", "error:", "Error", "not found", "failed", "invalid")
    for raw in console.splitlines():
        # Terminal control sequences and padding from QEMU's console handling out.
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1bc", " ", raw)
        line = " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", text).split())
        if any(k in line for k in keys):
            return line[-300:]
    return ""


def _read_console(ctl: Path) -> str:
    return "\n".join(_read(p) for p in sorted(ctl.glob("console-*.log")))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)
