"""Where commands run: a network namespace on this machine, or a host over ssh (ssh/host.py).

The experiment code talks to a :class:`Host` only: run a command and get its output,
start a background process with its output in files, stage a file on the host, fetch a
file back. Argument vectors all the way: no local shell ever parses a command line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cganalysis.errors import CganalysisError


class TestbedError(CganalysisError):
    """The testbed cannot do what the run needs; says what is missing and what provides it."""


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self, host: str) -> Result:
        if self.returncode != 0:
            msg = self.stderr.strip() or self.stdout.strip() or f"exit status {self.returncode}"
            raise TestbedError(f"on {host}: `{' '.join(self.argv)}` failed: {msg}")
        return self


class Proc(Protocol):
    """A background process started by :meth:`Host.spawn`."""

    label: str

    def returncode(self) -> int | None:
        """Exit status once it has ended, else None."""

    def send(self, sig: int) -> None: ...

    def wait(self, timeout_s: float) -> bool:
        """True once the process has ended (within ``timeout_s``)."""


class Host(Protocol):
    name: str
    #: False when the host shares this machine's file system (a namespace).
    remote: bool

    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 30.0) -> Result: ...

    def spawn(self, label: str, argv: list[str], stdout: str | None, stderr: str | None) -> Proc:
        """Starts ``argv``; its stdout/stderr go to those host paths (None: discarded)."""

    def path(self, name: str) -> str:
        """Where file ``name`` of this run lives on the host."""

    def read_text(self, path: str) -> str: ...

    def stage(self, local: Path) -> str:
        """Makes a local file available on the host; returns its path there."""

    def fetch(self, path: str, local: Path) -> None:
        """Copies a host file into ``local`` (checked), unless it is already there."""

    def fetch_all(self, pairs: list[tuple[str, Path]]) -> None:
        """fetch() for several files (one checksum round trip over ssh)."""


def stop(proc: Proc, sig: int = signal.SIGTERM, timeout_s: float = 3.0) -> None:
    """Asks a process to end, then kills it if it does not."""
    if proc.returncode() is not None:
        return
    proc.send(sig)
    if not proc.wait(timeout_s):
        proc.send(signal.SIGKILL)
        proc.wait(2.0)


def stop_all(procs: list[Proc], sig: int = signal.SIGTERM, timeout_s: float = 3.0) -> None:
    """Stops several processes at once: signal all, then wait, then kill the stragglers."""
    running = [p for p in procs if p.returncode() is None]
    for p in running:
        p.send(sig)
    deadline = time.monotonic() + timeout_s
    for p in running:
        if not p.wait(max(0.0, deadline - time.monotonic())):
            p.send(signal.SIGKILL)
            p.wait(2.0)


class LocalProc:
    def __init__(self, label: str, popen: subprocess.Popen[bytes]) -> None:
        self.label = label
        self.popen = popen

    @property
    def pid(self) -> int:
        return self.popen.pid

    def returncode(self) -> int | None:
        return self.popen.poll()

    def send(self, sig: int) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def wait(self, timeout_s: float) -> bool:
        try:
            self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True


class NetnsHost:
    """Runs commands inside network namespace ``ns`` (None: the current one) as root."""

    remote = False

    def __init__(self, name: str, ns: str | None, workdir: Path) -> None:
        self.name = name
        self.ns = ns
        self.workdir = workdir
        self.procs: list[LocalProc] = []

    def argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv] if self.ns else list(argv)

    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 30.0) -> Result:
        full = self.argv(argv)
        try:
            res = subprocess.run(
                full, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except FileNotFoundError:
            raise TestbedError(f"on {self.name}: {full[0]} not found") from None
        except subprocess.TimeoutExpired:
            raise TestbedError(f"on {self.name}: `{' '.join(argv)}` hung ({timeout_s} s)") from None
        result = Result(argv, res.returncode, res.stdout, res.stderr)
        return result.check(self.name) if check else result

    def spawn(self, label: str, argv: list[str], stdout: str | None, stderr: str | None) -> Proc:
        with _Output(stdout) as out, _Output(stderr) as err:
            popen = subprocess.Popen(
                self.argv(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                # Own session: a Ctrl-C on the terminal reaches the runner only, which then
                # stops every process in order (captures last, so they see the drain).
                start_new_session=True,
            )
        proc = LocalProc(label, popen)
        self.procs.append(proc)
        return proc

    def path(self, name: str) -> str:
        return str(self.workdir / name)

    def read_text(self, path: str) -> str:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stage(self, local: Path) -> str:
        return str(local)

    def fetch(self, path: str, local: Path) -> None:
        if Path(path).resolve() != local.resolve():
            if Path(path).is_dir():
                shutil.copytree(path, local)
            else:
                shutil.copyfile(path, local)

    def fetch_all(self, pairs: list[tuple[str, Path]]) -> None:
        for path, local in pairs:
            self.fetch(path, local)


class _Output:
    """Opens a path for a child's output, or DEVNULL."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.fh: int | None = None

    def __enter__(self) -> int:
        if self.path is None:
            return subprocess.DEVNULL
        self.fh = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        return self.fh

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            os.close(self.fh)


#: Multiplies readiness timeouts: 10 in a vm guest under QEMU's TCG, where starting a
#: Python helper takes seconds instead of a fraction of one (vm/guest.py sets it).
TIMEOUT_SCALE_ENV = "CGA_TIMEOUT_SCALE"


def wait_for_text(host: Host, path: str, text: str, proc: Proc, timeout_s: float) -> None:
    """Waits until ``text`` appears in a host file that ``proc`` writes (e.g. "listening")."""
    timeout_s *= float(os.environ.get(TIMEOUT_SCALE_ENV) or 1.0)
    deadline = time.monotonic() + timeout_s
    while text not in host.read_text(path):
        if proc.returncode() is not None:
            raise TestbedError(
                f"on {host.name}: {proc.label} exited before it was ready: "
                f"{host.read_text(path).strip()[-400:]}"
            )
        if time.monotonic() > deadline:
            raise TestbedError(f"on {host.name}: {proc.label} not ready after {timeout_s} s")
        time.sleep(0.05)
