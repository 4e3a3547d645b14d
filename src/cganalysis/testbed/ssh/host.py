"""A host over ssh: key-based, batch mode, one multiplexed connection per host.

Every remote command is an argument vector joined with ``shlex.join``, so each word
reaches the remote shell quoted; values were also validated against strict patterns
when the configuration was read (validate.py). A background process is started as
``sh -c 'echo $$; exec CMD >OUT 2>ERR </dev/null'`` inside an ssh session that lives as
long as the process: the first line is the remote pid (signals go through ``kill``), and
the session's exit status is the process's. The process carries a token in its
environment (procmark.py), so that ``testbed clean`` can tell it from a reused pid.
Files come back with ``cat`` and are checked against the remote ``sha256sum``.

Host keys are always checked. Which known-hosts file and whether a first contact may add
its key are this machine's settings (:func:`local_host_keys`: ``CGA_SSH_KNOWN_HOSTS``,
``CGA_SSH_HOST_KEY_POLICY``, else ssh's own configuration), never a testbed file's:
testbed files are shared between labs, and one must not turn the check off.
"""

from __future__ import annotations

import io
import os
import shlex
import signal
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.io import sha256_file
from cganalysis.testbed.shared.hosts import LocalProc, Result, TestbedError
from cganalysis.testbed.shared.procmark import MARKER_ENV, new_marker

#: This machine's known-hosts file for the testbed hosts (unset: ssh's own, ~/.ssh/known_hosts).
KNOWN_HOSTS_ENV = "CGA_SSH_KNOWN_HOSTS"
#: ``yes`` (unset: the default) or ``accept-new`` (a host seen for the first time is added).
HOST_KEY_POLICY_ENV = "CGA_SSH_HOST_KEY_POLICY"
HOST_KEY_POLICIES = ("yes", "accept-new")


def local_host_keys() -> tuple[str | None, str]:
    """The known-hosts file (None: ssh's own) and StrictHostKeyChecking, from this
    machine's environment only."""
    policy = os.environ.get(HOST_KEY_POLICY_ENV) or "yes"
    if policy not in HOST_KEY_POLICIES:
        raise ConfigError(
            f"environment {HOST_KEY_POLICY_ENV}={policy!r}: expected yes or accept-new "
            "(host keys are always checked; unset it for yes)"
        )
    return os.environ.get(KNOWN_HOSTS_ENV) or None, policy


@dataclass(frozen=True)
class SshTarget:
    address: str
    user: str
    port: int
    identity: str | None
    #: Both from local_host_keys() (or the vm router's own per-boot file), never a testbed file.
    known_hosts: str | None
    strict_host_key_checking: str  # "yes" or "accept-new"
    become: str  # "none" or "sudo"
    connect_timeout_s: int = 5


class SshHost:
    remote = True

    def __init__(self, name: str, target: SshTarget, control_dir: Path) -> None:
        self.name = name
        self.target = target
        self.control_dir = control_dir
        self.workdir = "/tmp"
        self.procs: list[SshProc] = []
        self._staged: dict[Path, str] = {}

    def base(self) -> list[str]:
        t = self.target
        if t.strict_host_key_checking not in HOST_KEY_POLICIES:  # e.g. "no" in a state file
            raise TestbedError(
                f"on {self.name}: StrictHostKeyChecking={t.strict_host_key_checking!r} "
                f"refused: host keys are always checked ({', '.join(HOST_KEY_POLICIES)})"
            )
        argv = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={t.connect_timeout_s}",
            "-o",
            f"StrictHostKeyChecking={t.strict_host_key_checking}",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={self.control_dir}/%C",
            "-o",
            "ControlPersist=300",
            "-o",
            "ServerAliveInterval=5",
            "-p",
            str(t.port),
            "-l",
            t.user,
        ]
        if t.identity:
            argv += ["-i", str(Path(t.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
        if t.known_hosts:
            argv += ["-o", f"UserKnownHostsFile={Path(t.known_hosts).expanduser()}"]
        return [*argv, t.address]

    def become(self) -> list[str]:
        return ["sudo", "-n"] if self.target.become == "sudo" else []

    def remote_cmd(self, argv: list[str]) -> str:
        return shlex.join(self.become() + argv)

    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 30.0) -> Result:
        full = [*self.base(), "--", self.remote_cmd(argv)]
        try:
            res = subprocess.run(
                full,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise TestbedError(
                f"on {self.name}: `{shlex.join(argv)}` hung ({timeout_s} s)"
            ) from None
        if res.returncode == 255:  # ssh's own failure (connection, authentication)
            raise TestbedError(
                f"on {self.name}: ssh to {self.target.user}@{self.target.address}:"
                f"{self.target.port} failed: {res.stderr.strip()[-300:]}"
            )
        result = Result(argv, res.returncode, res.stdout, res.stderr)
        return result.check(self.name) if check else result

    def spawn(self, label: str, argv: list[str], stdout: str | None, stderr: str | None) -> SshProc:
        out = shlex.quote(stdout or "/dev/null")
        err = shlex.quote(stderr or "/dev/null")
        marker = new_marker()
        script = (
            f"{MARKER_ENV}={marker}; export {MARKER_ENV}; "
            f"echo $$; exec {shlex.join(argv)} > {out} 2> {err} < /dev/null"
        )
        popen = subprocess.Popen(
            [*self.base(), "--", self.remote_cmd(["sh", "-c", script])],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert popen.stdout is not None
        line = popen.stdout.readline().decode(errors="replace").strip()
        if not line.isdigit():
            popen.wait(10)
            err_text = popen.stderr.read().decode(errors="replace") if popen.stderr else ""
            raise TestbedError(f"on {self.name}: could not start {label}: {err_text.strip()}")
        proc = SshProc(label, self, int(line), popen, marker)
        self.procs.append(proc)
        return proc

    def path(self, name: str) -> str:
        return f"{self.workdir}/{name}"

    def read_text(self, path: str) -> str:
        return self.run(["cat", "--", path], check=False).stdout

    def upload(self, data: bytes, path: str) -> None:
        full = [*self.base(), "--", self.remote_cmd(["sh", "-c", 'cat > "$1"', "sh", path])]
        res = subprocess.run(full, input=data, capture_output=True, timeout=60, check=False)
        if res.returncode != 0:
            raise TestbedError(f"on {self.name}: upload to {path} failed: {res.stderr!r}")

    def stage(self, local: Path) -> str:
        if local not in self._staged:
            path = self.path(f"stage-{local.name}")
            self.upload(local.read_bytes(), path)
            self._staged[local] = path
        return self._staged[local]

    def fetch(self, path: str, local: Path) -> None:
        self.fetch_all([(path, local)])

    def fetch_all(self, pairs: list[tuple[str, Path]]) -> None:
        """Files by ``cat``, checked against one remote ``sha256sum``; directories by tar."""
        script = (
            'for p in "$@"; do if [ -d "$p" ]; then echo "d $p"; elif [ -f "$p" ]; then '
            'sha256sum -- "$p" | sed "s/^/f /"; else echo "- $p"; fi; done'
        )
        out = self.run(["sh", "-c", script, "sh", *[p for p, _ in pairs]]).stdout.splitlines()
        for (path, local), line in zip(pairs, out, strict=True):
            kind, _, rest = line.partition(" ")
            if kind == "-":
                raise TestbedError(f"on {self.name}: {path} does not exist (nothing to fetch)")
            if kind == "d":
                self._fetch_dir(path, local)
                continue
            full = [*self.base(), "--", self.remote_cmd(["cat", "--", path])]
            with local.open("wb") as fh:
                res = subprocess.run(
                    full, stdout=fh, stderr=subprocess.PIPE, timeout=600, check=False
                )
            if res.returncode != 0:
                raise TestbedError(f"on {self.name}: fetching {path} failed: {res.stderr!r}")
            if rest.split()[0] != sha256_file(local):
                raise TestbedError(f"on {self.name}: {path} arrived damaged (checksum mismatch)")

    def _fetch_dir(self, path: str, local: Path) -> None:
        parent, name = path.rsplit("/", 1)
        full = [*self.base(), "--", self.remote_cmd(["tar", "-C", parent, "-cf", "-", name])]
        res = subprocess.run(full, capture_output=True, timeout=600, check=False)
        if res.returncode != 0:
            raise TestbedError(f"on {self.name}: fetching {path} failed: {res.stderr!r}")
        with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
            tar.extractall(local.parent, filter="data")
        if name != local.name:
            (local.parent / name).rename(local)

    def close(self) -> None:
        subprocess.run(
            [*self.base()[:-1], "-O", "exit", self.target.address],
            capture_output=True,
            check=False,
            timeout=10,
        )


class SshProc(LocalProc):
    """A remote process: ``popen`` is the local ssh session that runs it (its exit is the
    remote process's), ``pid`` the remote process, which signals go to; ``marker`` the
    token in its environment (procmark.py)."""

    def __init__(
        self, label: str, host: SshHost, pid: int, popen: subprocess.Popen[bytes], marker: str
    ):
        super().__init__(label, popen)
        self.host = host
        self.remote_pid = pid
        self.marker = marker

    @property
    def pid(self) -> int:
        return self.remote_pid

    def send(self, sig: int) -> None:
        if self.popen.poll() is None:
            name = signal.Signals(sig).name.removeprefix("SIG")
            self.host.run(["kill", "-s", name, str(self.pid)], check=False)


def control_dir() -> Path:
    # Unix socket paths are short (108 bytes): a short directory under /tmp.
    return Path(tempfile.mkdtemp(prefix="cgassh-", dir="/tmp"))


def wait_gone(host: SshHost, pid: int, timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if host.run(["kill", "-0", str(pid)], check=False).returncode != 0:
            return True
        time.sleep(0.1)
    return False
