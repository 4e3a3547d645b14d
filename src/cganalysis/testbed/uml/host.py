"""A user-mode Linux kernel as a process of this machine, and commands run inside it.

:class:`UmlKernel` boots a UML kernel (``uml.boot.usable_kernel``: one that boots on this
CPU) with this machine's file system as its root (hostfs, read-only; the run's folder
writable: its processes write the run's files where the host reads them), inside a
network namespace of the host whose veths it attaches with raw sockets
(``vecN:transport=raw``), and talks to the agent it runs as init
(``uml/agent.py``) over a serial line wired to a socket pair. :class:`UmlHost` is the
:class:`~cganalysis.testbed.shared.hosts.Host` the experiment code drives: ``tc``, ``ip`` and the
qdisc poller run in the UML kernel; files are the host's.

The kernel never outlives its owner: it is started with ``setpriv --pdeathsig KILL`` (killed
when the process that started it dies, SIGKILL included), its agent powers it off when
the socket pair's other end closes, and it lives in a namespace that teardown and
``cganalysis testbed clean`` delete with every process in it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import NetnsHost, Proc, Result, TestbedError
from cganalysis.testbed.uml.config import Kernel, UmlOptions
from cganalysis.testbed.uml.console import diagnose

AGENT = Path(__file__).with_name("agent.py")
#: The agent's Python: the host's system interpreter (the agent is stdlib only).
PYTHON = "/usr/bin/python3"


class KernelStoppedError(TestbedError):
    """The kernel ended before its agent was up; ``console`` holds what it printed."""

    def __init__(self, message: str, console: str) -> None:
        super().__init__(message)
        self.console = console


class UmlKernel:
    """One booted UML kernel; use as a context manager (powered off and killed on exit)."""

    def __init__(
        self,
        opts: UmlOptions | None = None,
        netns: str | None = None,
        ifaces: list[str] | None = None,
        *,
        kernel: Kernel,
        keep: list[Path] | None = None,
        super_packets: bool = False,
    ) -> None:
        """``kernel``: the one to boot (``uml.boot.usable_kernel`` chooses it: one that boots
        on this host); ``keep``: host folders its processes write to, the only ones they
        may (the kernel's root is read-only); ``super_packets``: its interfaces read and
        write GSO super-packets of up to 64 KB (the run file's ``offloads: kernel``), not
        frames of the veth's MTU."""
        self.opts = opts or UmlOptions()
        self.super_packets = super_packets
        self.writable = [str(p.absolute()) for p in keep or []]
        self.kernel = kernel
        self.netns = netns
        self.ifaces = list(ifaces or [])
        self.ctl = Path(tempfile.mkdtemp(prefix="cga-uml-"))
        self.popen: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.facts: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._closed = False
        #: Lines from the agent that were not answers (kept for the error message).
        self.garbled: list[str] = []

    def __enter__(self) -> UmlKernel:
        try:
            self.boot()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def console(self) -> Path:
        return self.ctl / "console.log"

    def boot(self) -> None:
        if not Path(PYTHON).is_file():
            raise TestbedError(f"uml testbed: {PYTHON} not found (Debian's python3 package)")
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise TestbedError("uml testbed: setpriv not found (Debian's util-linux package)")
        agent = self.ctl / "agent.py"
        shutil.copyfile(AGENT, agent)
        # The Debian kernel's modules are bind-mounted here inside the kernel (uml/agent.py).
        (self.ctl / "modroot" / "lib" / "modules").mkdir(parents=True)
        scheduling, prefix = self._scheduling()
        ours, theirs = socket.socketpair()
        self.sock = ours
        console_fd = os.open(self.console, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        argv = [
            *(["ip", "netns", "exec", self.netns] if self.netns else []),
            *prefix,
            setpriv,
            "--pdeathsig",
            "KILL",
            str(self.kernel.path),
            f"mem={self.opts.memory_mb}M",
            f"umid=cga-{self.ctl.name}",
            f"uml_dir={self.ctl}",
            "rootfstype=hostfs",
            "rootflags=/",
            # This machine's files, read-only: the router writes only the run's folder
            # (its statistics, logs), mounted writable by the agent.
            "ro",
            "quiet",
            "con=null",
            f"con0=null,fd:{console_fd}",
            "ssl=null",
            f"ssl0=fd:{theirs.fileno()}",
            # The raw transport always carries virtio-net headers (TSO, GSO); `gro=1` sizes
            # its receive buffers for 64 KB super-packets instead of one MTU.
            *[
                f"vec{i}:transport=raw,ifname={dev},depth=128,gro={int(self.super_packets)}"
                for i, dev in enumerate(self.ifaces)
            ],
            f"init={PYTHON}",
            "--",
            str(agent),
            str(self.ctl),
            self._folders(),
        ]
        t0 = time.monotonic()
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=console_fd,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(), console_fd),
                start_new_session=True,
            )
        finally:
            theirs.close()
            os.close(console_fd)
        ready = self._read_ready(t0)
        self.facts = {
            "kernel": self.kernel.to_dict(),
            "release": ready.get("release"),
            "version": ready.get("version"),
            "memory_mb": self.opts.memory_mb,
            "scheduling": scheduling,
            "boot_s": round(time.monotonic() - t0, 2),
            "interfaces": {f"vec{i}": dev for i, dev in enumerate(self.ifaces)},
        }
        threading.Thread(target=self._reader, daemon=True).start()

    def _folders(self) -> str:
        """The agent's folders (hex-encoded JSON: the kernel splits its command line at
        spaces): what its private /run must not hide (the poller's code is this package's),
        and what it mounts writable."""
        package = str(Path(__file__).resolve().parents[2])
        folders = {"keep": [package, *self.writable], "write": self.writable}
        return json.dumps(folders).encode().hex()

    def _scheduling(self) -> tuple[str, list[str]]:
        """How the kernel's process is scheduled (for meta.json) and the command prefix that
        does it: SCHED_FIFO at ``uml.realtime_priority`` where the host allows it (root, or
        an ordinary user's RLIMIT_RTPRIO; no real-time group limit), else the ordinary
        scheduler at the highest nice this user may set."""
        prio = self.opts.realtime_priority
        if prio == 0:
            return "normal", []
        chrt = shutil.which("chrt")
        if chrt is not None:
            probe = subprocess.run(
                [chrt, "--fifo", str(prio), "true"], capture_output=True, text=True, check=False
            )
            if probe.returncode == 0:
                return f"fifo {prio}", [chrt, "--fifo", str(prio)]
        # Not allowed here (a container without CAP_SYS_NICE, an ordinary user without
        # RLIMIT_RTPRIO, no real-time budget for this cgroup). `nice` runs its command even
        # where it may not lower the nice value, so its effect is read back (`nice` alone
        # prints it).
        lowered = subprocess.run(
            ["nice", "-n", "-20", "nice"], capture_output=True, text=True, check=False
        )
        if lowered.stdout.strip() == "-20":
            return "normal, nice -20 (SCHED_FIFO refused)", ["nice", "-n", "-20"]
        return "normal (SCHED_FIFO and a negative nice refused)", []

    def _read_ready(self, t0: float) -> dict[str, Any]:
        assert self.sock is not None and self.popen is not None
        self.sock.settimeout(0.2)
        self._buf = b""
        while time.monotonic() - t0 < self.opts.boot_timeout_s:
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                chunk = None
            if chunk == b"" or (chunk is None and self.popen.poll() is not None):
                with suppress(subprocess.TimeoutExpired):
                    self.popen.wait(2.0)  # its last words reach the console first
                raise KernelStoppedError(
                    f"uml router: the kernel stopped while booting: {self._why()}",
                    self._console(),
                )
            if chunk:
                self._buf += chunk
                if b"\n" in self._buf:
                    line, self._buf = self._buf.split(b"\n", 1)
                    self.sock.settimeout(None)
                    return dict(json.loads(line).get("ready") or {})
        raise TestbedError(
            f"uml router: not up after {self.opts.boot_timeout_s:g} s (uml.boot_timeout_s); "
            f"its console: {self.console}"
        )

    def _console(self) -> str:
        if not self.console.exists():
            return ""
        return self.console.read_text(encoding="utf-8", errors="replace")

    def _why(self) -> str:
        text = self._console()
        known = diagnose(text)
        if known is not None:
            return known
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        bad = [
            ln
            for ln in lines
            if "panic" in ln.lower() or "error" in ln.lower() or "failed" in ln.lower()
        ]
        return (bad or lines or ["no console output"])[-1][:300]

    def _reader(self) -> None:
        """Hands each answer line to its waiting request; a line that is not an answer is
        kept (``garbled``) and skipped, never the end of the channel."""
        assert self.sock is not None
        buf = self._buf
        try:
            while True:
                try:
                    chunk = self.sock.recv(1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        msg = json.loads(line)
                        rid = int(msg.get("id", -1))
                    except (ValueError, TypeError, AttributeError):
                        self.garbled.append(line[:200].decode("utf-8", "replace"))
                        continue
                    with self._lock:
                        waiter = self._waiting.pop(rid, None)
                    if waiter is not None:
                        waiter[1].append(msg)
                        waiter[0].set()
        finally:
            with self._lock:
                self._closed = True
                for event, _ in self._waiting.values():
                    event.set()

    def request(self, req: dict[str, Any], timeout_s: float = 30.0) -> dict[str, Any]:
        """One request to the agent; its answer (raises TestbedError if none comes).

        While it waits, a bare newline goes to the agent every second (it skips empty
        lines): twice in some 300 request batches a request under load got no answer at
        all, and new input makes the kernel's serial line read what it holds. How many
        were needed is in ``facts["nudges"]``."""
        if self.sock is None:
            raise TestbedError("uml router: not booted")
        event = threading.Event()
        box: list[dict[str, Any]] = []
        with self._lock:
            if self._closed:
                raise TestbedError(f"uml router: the kernel has stopped ({self._why()})")
            self._next += 1
            rid = self._next
            self._waiting[rid] = (event, box)
            self.sock.sendall((json.dumps({**req, "id": rid}) + "\n").encode())
        deadline = time.monotonic() + timeout_s
        while not event.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            with self._lock, suppress(OSError):
                self.sock.sendall(b"\n")
            self.facts["nudges"] = int(self.facts.get("nudges", 0)) + 1
        if not box:
            with self._lock:
                self._waiting.pop(rid, None)
            state = f"stopped: {self._why()}" if self._closed else "running"
            garbled = f"; lines not understood: {self.garbled[-2:]}" if self.garbled else ""
            raise TestbedError(
                f"uml router: no answer to {req.get('op')} {req.get('argv', '')} within "
                f"{timeout_s:g} s (kernel {state}{garbled}; console: {self.console})"
            )
        if "error" in box[0]:
            raise TestbedError(f"uml router: {req.get('op')} failed: {box[0]['error']}")
        return box[0]

    def stop(self, console_to: Path | None = None) -> None:
        """Powers the kernel off (the agent's halt), then kills what is left; its console
        log is copied to ``console_to`` first, if given."""
        if self.popen is not None and self.popen.poll() is None:
            if self.sock is not None:
                with suppress(OSError):
                    self.sock.sendall(b'{"op": "halt", "id": 0}\n')
            with suppress(subprocess.TimeoutExpired):
                self.popen.wait(5.0)
        if self.popen is not None:
            # The kernel's helper processes are in its process group (its own session).
            with suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5.0)
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if console_to is not None and self.console.is_file():
            with suppress(OSError):
                shutil.copyfile(self.console, console_to)
        shutil.rmtree(self.ctl, ignore_errors=True)


class UmlProc:
    """A process the agent started inside the UML kernel."""

    def __init__(self, label: str, kernel: UmlKernel, pid: int) -> None:
        self.label = label
        self.kernel = kernel
        self.pid = pid
        self._rc: int | None = None

    def returncode(self) -> int | None:
        if self._rc is None:
            try:
                rc = self.kernel.request({"op": "status", "pid": self.pid}).get("rc")
            except TestbedError:
                rc = -9  # the kernel is gone, and every process in it
            self._rc = None if rc is None else int(rc)
        return self._rc

    def send(self, sig: int) -> None:
        if self.returncode() is None:
            with suppress(TestbedError):
                self.kernel.request({"op": "signal", "pid": self.pid, "sig": int(sig)})

    def wait(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.returncode() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True


class UmlHost(NetnsHost):
    """Commands in the UML kernel (in network namespace ``ns`` of it, None: its own);
    files on this machine, which the kernel shares (hostfs), as a namespace's are."""

    def __init__(self, name: str, kernel: UmlKernel, workdir: Path, ns: str | None = None) -> None:
        # Absolute: the kernel's processes start in its root, not in this process's folder.
        super().__init__(name, ns, workdir.absolute())
        self.kernel = kernel
        self.uml_procs: list[UmlProc] = []

    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 30.0) -> Result:
        ans = self.kernel.request(
            {"op": "run", "argv": argv, "ns": self.ns, "timeout_s": timeout_s}, timeout_s + 10.0
        )
        if ans.get("rc") is None:
            raise TestbedError(f"on {self.name}: `{' '.join(argv)}` hung ({timeout_s} s)")
        result = Result(argv, int(ans["rc"]), str(ans["stdout"]), str(ans["stderr"]))
        return result.check(self.name) if check else result

    def spawn(self, label: str, argv: list[str], stdout: str | None, stderr: str | None) -> Proc:
        ans = self.kernel.request(
            {"op": "spawn", "argv": argv, "ns": self.ns, "stdout": stdout, "stderr": stderr}
        )
        proc = UmlProc(label, self.kernel, int(ans["pid"]))
        self.uml_procs.append(proc)
        return proc

    def stage(self, local: Path) -> str:
        return str(local.absolute())
