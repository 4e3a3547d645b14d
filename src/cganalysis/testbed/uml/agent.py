"""The user-mode Linux router's init and command agent; standalone (stdlib only).

The UML kernel starts it as its first process (``init=/usr/bin/python3 -- uml/agent.py
CTL FOLDERS``, the host's file system as its read-only root through hostfs; FOLDERS is
hex-encoded JSON: ``keep``, ``write``). It mounts what the kernel's own tools need
(``/proc``, ``/sys``, a private ``/run`` so that ``ip netns`` never writes into the host's,
with CTL and the ``keep`` paths under it bound back, and each ``write`` folder of the host
writable: the run's), makes the Debian UML kernel's modules loadable, and then serves the host's
requests on the serial line ``/dev/ttyS0``, which the host wired to one end of a socket
pair (``ssl0=fd:N``): one JSON object per line each way.

Requests (``id`` echoed in the answer):

- ``{"op": "run", "argv": [...], "ns": null, "timeout_s": 30}``: ``rc``, ``stdout``,
  ``stderr``; ``ns`` runs it in a network namespace of the UML kernel.
- ``{"op": "spawn", "argv": [...], "ns": null, "stdout": PATH, "stderr": PATH}``: ``pid``;
  the paths are the host's (hostfs), None discards.
- ``{"op": "signal", "pid": N, "sig": 15}``, ``{"op": "status", "pid": N}``: ``rc`` (None
  while it runs).
- ``{"op": "halt"}``: powers the kernel off.

Why a serial line and not files on hostfs or a management network: it needs no address
and no interface in the router, reads are event-driven (no polling of hostfs, whose
caches do not see the host's changes at once), and when the host process dies its end of
the socket pair closes: the agent then sees end of file and powers the kernel off, so a
killed run cannot leave a UML router running.

Each request runs in its own thread; starting a process costs tens of milliseconds in a
UML kernel (every system call of its processes traps into it), so the host batches its
set-up into few requests.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: scripts/install-tc.sh's tc (iproute2 >= 6.18, DualPI2's options): first on the PATH.
KERNEL_TOOLS = "/usr/local/lib/cganalysis-vm/bin"


def _sh(*argv: str) -> None:
    subprocess.run(list(argv), check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


#: mount(2)'s flag for a bind mount.
MS_BIND = 4096


def mount(
    source: str, target: str, fstype: str = "", data: str = "", *, bind: bool = False
) -> bool:
    """``mount -t FSTYPE -o DATA SOURCE TARGET`` (or ``--bind``) by the system call; True
    when it worked. Not mount(8): in the sim kernel's user namespace the host's root-owned
    files belong to the overflow user, so the set-user-ID-root ``mount`` is set-user-ID
    ``nobody`` as the guest sees it and refuses. Failures are ignored, as before: the tools
    that need a mount say what is missing more precisely."""
    libc = ctypes.CDLL(None, use_errno=True)
    ok = libc.mount(
        os.fsencode(source),
        os.fsencode(target),
        fstype.encode() if fstype else None,
        MS_BIND if bind else 0,
        data.encode() if data else None,
    )
    return bool(ok == 0)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def private_tmpfs(point: str, keep: list[str]) -> None:
    """A tmpfs of the kernel's own over ``point`` (what its processes make there never
    lands in the host's), with the host paths of ``keep`` under it bound back: a checkout,
    a virtual environment or a run's folder in /tmp or /run stays where the guest's
    processes look for it. Needs /proc (the host's folder is reached through a descriptor
    opened before the tmpfs hides it)."""
    # Absolute without resolving links: the guest looks for a path by the name it was given.
    wanted = sorted({os.path.normpath(k) for k in keep if k.startswith("/")})
    inside = [k for k in wanted if _within(k, point) and k != point and os.path.lexists(k)]
    outermost = [k for i, k in enumerate(inside) if not any(_within(k, o) for o in inside[:i])]
    # Links resolved while the host's folder is in view (one may point into it).
    real = {k: os.path.realpath(k) for k in outermost}
    old = os.open(point, os.O_PATH | os.O_DIRECTORY) if outermost else -1
    mount(Path(point).name, point, "tmpfs")
    for path in outermost:
        hidden = _within(real[path], point)
        rel = os.path.relpath(real[path], point)
        source = Path(f"/proc/self/fd/{old}") / rel if hidden else Path(real[path])
        if source.is_dir():
            Path(path).mkdir(parents=True, exist_ok=True)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).touch()
        # As given: canonicalised, the path would name the tmpfs's own folder.
        mount(str(source), path, bind=True)
    if old >= 0:
        os.close(old)


def prepare(ctl: str, keep: list[str], write: list[str]) -> dict[str, object]:
    """Mounts and module loading; returns the facts the host records. ``keep``: host
    paths the private /run must not hide; ``write``: host folders mounted writable (the
    root, this machine's file system, is read-only)."""
    mount("proc", "/proc", "proc")
    mount("sys", "/sys", "sysfs")
    private_tmpfs("/run", [ctl, *keep])
    for folder in write:
        if Path(folder).is_dir() and folder != "/":
            mount("hostfs", folder, "hostfs", folder)
    mount("dev", "/dev", "devtmpfs")
    release = os.uname().release
    modules = f"/usr/lib/uml/modules/{release}"
    if Path(modules).is_dir():
        # Debian's UML keeps its modules outside /lib/modules (the host's): a private tree
        # for modprobe, and the kernel's own module requests (tc qdisc add) go through it.
        root = f"{ctl}/modroot"
        mount("/usr/lib/uml/modules", f"{root}/lib/modules", bind=True)
        wrapper = "/run/modprobe"
        Path(wrapper).write_text(f'#!/bin/sh\nexec /sbin/modprobe -d {root} "$@"\n')
        Path(wrapper).chmod(0o755)
        Path("/proc/sys/kernel/modprobe").write_text(wrapper)
    Path("/run/netns").mkdir(parents=True, exist_ok=True)
    _sh("ip", "link", "set", "lo", "up")
    return {"release": release, "version": os.uname().version, "modules": Path(modules).is_dir()}


class Agent:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def send(self, obj: dict[str, object]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        with self.lock:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]

    def handle(self, req: dict[str, object]) -> None:
        rid = req.get("id")
        try:
            self.send({"id": rid, **self.answer(req)})
        except Exception as err:  # every failure goes back to the host
            self.send({"id": rid, "error": f"{type(err).__name__}: {err}"})

    def answer(self, req: dict[str, object]) -> dict[str, object]:
        op = req.get("op")
        ns = req.get("ns")
        argv = [str(a) for a in req.get("argv") or []]  # type: ignore[attr-defined]
        if ns:
            argv = ["ip", "netns", "exec", str(ns), *argv]
        if op == "run":
            try:
                res = subprocess.run(
                    argv,
                    capture_output=True,
                    text=True,
                    timeout=float(req.get("timeout_s") or 30.0),  # type: ignore[arg-type]
                    check=False,
                )
            except FileNotFoundError:
                return {"rc": 127, "stdout": "", "stderr": f"{argv[0]}: not found"}
            except subprocess.TimeoutExpired:
                return {"rc": None, "stdout": "", "stderr": "timed out"}
            return {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr}
        if op == "spawn":
            out = _open(req.get("stdout"))
            err = _open(req.get("stderr"))
            try:
                popen = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
                )
            finally:
                for fh in (out, err):
                    if isinstance(fh, int) and fh >= 0:
                        os.close(fh)
            self.procs[popen.pid] = popen
            return {"pid": popen.pid}
        if op == "signal":
            p = self.procs.get(int(req["pid"]))  # type: ignore[call-overload]
            if p is not None and p.poll() is None:
                p.send_signal(int(req["sig"]))  # type: ignore[call-overload]
            return {}
        if op == "status":
            p = self.procs.get(int(req["pid"]))  # type: ignore[call-overload]
            return {"rc": None if p is None else p.poll()}
        if op == "halt":
            halt()
        raise ValueError(f"unknown op {op!r}")

    def serve(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                return  # the host's end closed: its process is gone
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    req = json.loads(line)
                    threading.Thread(target=self.handle, args=(req,), daemon=True).start()


def _open(path: object) -> int:
    if not path:
        return subprocess.DEVNULL
    return os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)


def halt() -> None:
    """Powers the kernel off at once (its processes do not matter any more)."""
    os.sync()
    Path("/proc/sysrq-trigger").write_text("o")
    time.sleep(10)
    os._exit(1)


def main() -> None:
    ctl = sys.argv[1]
    folders = json.loads(bytes.fromhex(sys.argv[2])) if len(sys.argv) > 2 else {}
    os.environ["PATH"] = f"{KERNEL_TOOLS}:{PATH}" if Path(KERNEL_TOOLS).is_dir() else PATH
    facts = prepare(ctl, list(folders.get("keep", [])), list(folders.get("write", [])))
    fd = os.open("/dev/ttyS0", os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    agent = Agent(fd)
    agent.send({"ready": facts})
    try:
        agent.serve()
    finally:
        halt()


if __name__ == "__main__":
    main()
