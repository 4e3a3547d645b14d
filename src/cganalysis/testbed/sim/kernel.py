"""One user-mode Linux kernel on simulated time, running one job to its end.

The ``sim`` testbed's host side (:mod:`cganalysis.experiment.insim`) hands a job folder
here; :func:`run_guest` boots a UML kernel in ``time-travel=inf-cpu`` mode whose first
process is :mod:`cganalysis.testbed.sim.guest`, waits until it powers off, and returns the
facts meta.json records. What makes two boots of one job the same, packet for packet:

- the clock: ``time-travel=inf-cpu`` (the kernel's clock moves only when all its
  processes are idle; computing costs no simulated time) from a fixed
  ``time-travel-start``;
- the kernel's randomness: the kernel's process has ``libcga_simrng.so`` preloaded, which
  answers its ``getrandom`` calls from the seed, and sees a file of seeded bytes as the
  host's ``/dev/random`` (its hardware-RNG driver reads that), both through a private
  mount namespace of its own;
- the names: the job folder is mounted at :data:`GUEST_JOB` in that namespace (on a
  tmpfs over ``/mnt``, with the host's own ``/mnt`` entries bound back) and the
  kernel's command line is the same for every job (the kernel mixes its command line
  into its random pool at boot, and a name the guest reads changes how long its
  processes run, which UML mixes in at each process's exit);
- Python compiles every module it imports, every time: it neither reads nor writes the
  host's bytecode caches, whose presence changes how long its processes run;
- the console writes to a regular file (a pipe's back-pressure moves the clock: 3 of 18
  runs drifted that way in REFERENCE measurements), and Python's hash seed is fixed
  (``PYTHONHASHSEED`` on the kernel command line reaches init's environment).

The kernel never outlives the process that started it (``setpriv --pdeathsig KILL``), and
the mounts vanish with its namespace.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.sim import code as simcode
from cganalysis.testbed.sim import identity as simidentity
from cganalysis.testbed.sim import user as simuser
from cganalysis.testbed.sim.config import SimOptions, find_sim_kernel, find_simrng
from cganalysis.testbed.sim.cpu import chosen_cpu, pin_argv

#: Where the guest finds the job folder (a tmpfs over /mnt in the kernel's mount namespace).
GUEST_JOB = "/mnt/cga-job"
#: Lines the guest prints for the host to show as progress start with this.
PROGRESS_MARK = "cga-sim: "
#: The guest's own last error, should it end without writing a result.
ERROR_MARK = "cga-sim-error: "
#: Console lines that say nothing about a failure: UML looks for a disk the guest does not
#: use (its root is the host's file system).
NOISE = ("Failed to initialize ubd device",)
#: Bytes of seeded randomness behind the guest's view of the host's /dev/random.
RANDOM_BYTES = 1 << 16
#: The host's per-process limit on memory mappings the kernel needs: UML maps a guest
#: process's pages into a host process one by one where they are not contiguous, and a run's
#: end (matching its two captures in memory, 2.3 M packets) took more than Debian 12's
#: default 65,530: the host refused (ENOMEM, "Error flushing stub syscalls: 12") and the
#: guest's process died. Ubuntu and Fedora ship 1,048,576.
MAX_MAP_COUNT = 1_048_576
MAX_MAP_COUNT_FILE = Path("/proc/sys/vm/max_map_count")

#: Runs in the new mount namespace, then becomes the kernel. Its words: the job folder;
#: a count and that many (host path, guest path) pairs to bind (simcode: the code at fixed
#: paths); a count and (guest path, text) pairs of files to write; a count and (folder,
#: entry) pairs (simuser.reveals: a private folder above the kernel, shown as a tmpfs with
#: that one entry bound back); then the command. The host's /mnt is reached through
#: descriptor 3 once the tmpfs hides it: the job folder, the code and each of its own
#: entries (a checkout, a data disk) are bound from there, as given (canonicalised, the
#: path would name the tmpfs's own folder).
NAMESPACE_SCRIPT = f"""set -e
exec 3</mnt
job=$(realpath "$1")
shift
mount -t tmpfs -o size=1m,mode=0755 cga-sim /mnt
host() {{ case "$1" in /mnt/*) echo "/proc/$$/fd/3/${{1#/mnt/}}" ;; *) echo "$1" ;; esac; }}
bind() {{
  if [ -d "$1" ]; then mkdir -p "$2" && mount --no-canonicalize --rbind "$1" "$2"
  else mkdir -p "${{2%/*}}" && : >"$2" && mount --no-canonicalize --bind "$1" "$2"
  fi
}}
job=$(host "$job")
mkdir {GUEST_JOB}
mount --no-canonicalize --bind "$job" {GUEST_JOB}
mount --no-canonicalize --bind "$job/random.bin" /dev/random
for old in /proc/$$/fd/3/* /proc/$$/fd/3/.[!.]*; do
  name=${{old##*/}}
  case "$name" in {GUEST_JOB.rsplit("/", 1)[1]}|{simcode.CODE.rsplit("/", 1)[1]}) continue ;; esac
  if [ -L "$old" ]; then cp -P "$old" "/mnt/$name"
  elif [ -e "$old" ]; then bind "$old" "/mnt/$name"
  fi
done
n=$1
shift
while [ "$n" -gt 0 ]; do bind "$(host "$1")" "$2"; shift 2; n=$((n - 1)); done
n=$1
shift
while [ "$n" -gt 0 ]; do mkdir -p "${{1%/*}}" && printf %s "$2" >"$1"; shift 2; n=$((n - 1)); done
exec 3<&-
n=$1
shift
last=""
while [ "$n" -gt 0 ]; do
  folder=$1 entry=$2
  shift 2
  n=$((n - 1))
  if [ "$folder" != "$last" ]; then
    exec 4<"$folder"
    mount -t tmpfs -o size=1m,mode=0755 cga-shown "$folder"
    last=$folder
  fi
  bind "/proc/$$/fd/4/$entry" "$folder/$entry"
done
exec 4<&-
exec "$@"
"""


def seeded_bytes(seed: int, n: int = RANDOM_BYTES) -> bytes:
    """``n`` bytes that depend on ``seed`` alone (SHA-256 in counter mode)."""
    out = bytearray()
    block = 0
    while len(out) < n:
        out += hashlib.sha256(f"cganalysis-sim/{seed}/{block}".encode()).digest()
        block += 1
    return bytes(out[:n])


def run_guest(
    ctl: Path,
    opts: SimOptions,
    seed: int,
    sim_s: float,
    progress: Callable[[str], None],
    guest_path: str,
    builds: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Boots the kernel on job folder ``ctl`` (job.json written by the caller) and waits for
    it to power off; ``sim_s`` (a bound on the job's simulated length) sets the wall-time
    limit; ``guest_path`` is the guest's PATH, ``builds`` the programs it runs from files
    of their own (:func:`simidentity.programs`). Returns the facts: kernel, clock, seed, wall
    time, and the run's identity (:mod:`simidentity`)."""
    kernel = find_sim_kernel(opts)
    lib = find_simrng()
    for tool in ("unshare", "setpriv", "taskset"):
        if shutil.which(tool) is None:
            raise TestbedError(f"sim testbed: {tool} not found (Debian's util-linux package)")
    user = simuser.host_user()
    simuser.check_namespaces(user)
    (ctl / "random.bin").write_bytes(seeded_bytes(seed))
    map_count = _enough_mappings(progress)
    console = ctl / "console.log"
    console.touch()
    simuser.hand_over(ctl, user)
    # The job folder is the user's (hand_over) and the code is bound at fixed paths
    # (simcode), each reached through a mount of its own; a private folder above the
    # kernel is shown in the kernel's namespace (reveals).
    code = simcode.guest_code()
    own_builds = [Path(p) for p in (builds or {}).values()]
    shown, missing = simuser.reveals(user, [kernel.path, lib, *own_builds])
    missing += simuser.unreadable(user, [Path(host) for host, _ in code.binds()])
    if missing:
        raise TestbedError(
            f"sim testbed: the kernel runs as user {user.name} (no privilege on the host), "
            f"who cannot read {missing[0]}: make it readable by every user (chmod o+rX), or "
            "keep the kernel outside nested private folders"
        )
    ident = simidentity.identity(kernel.path, lib, code, guest_path, builds)
    # Chosen last, so that `auto` sees the kernels started meanwhile.
    cpu = chosen_cpu(opts.cpu)
    argv = [
        *pin_argv(cpu), *simuser.namespace_argv(user), "sh", "-c", NAMESPACE_SCRIPT, "sh", str(ctl),
        *_counted(code.binds()), *_counted(code.files()), *_counted(shown),
        "env", f"LD_PRELOAD={lib}", f"CGA_SIM_SEED={seed}",
        *simuser.drop_argv(user),
        str(kernel.path),
        f"mem={opts.memory_mb}M",
        # Fixed names: the command line is mixed into the kernel's random pool at boot.
        "umid=cga-sim",
        f"uml_dir={GUEST_JOB}",
        # Read-only: the guest writes only the job folder, which it mounts writable
        # (simguest). Without `quiet`: a guest that ends without a result is explained by
        # the kernel's own last lines (its console is a file; printing costs no simulated
        # time).
        "rootfstype=hostfs", "rootflags=/", "ro",
        "con=null", "con0=null,fd:1",
        "time-travel=inf-cpu", f"time-travel-start={opts.start_ns}",
        f"seccomp={'on' if opts.userspace == 'seccomp' else 'off'}",
        f"PYTHONHASHSEED={seed % 4294967296}",
        # Python neither reads nor writes this machine's bytecode caches: whether a .pyc
        # exists changes how long a process runs (compiling or loading), which UML mixes
        # into its random pool at the process's exit, so the first run after an edit or an
        # install would pick other ports than the second.
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONPYCACHEPREFIX=/nonexistent/cga-sim-pycache",
        f"init={simcode.PYTHON}", "--", "-m", "cganalysis.testbed.sim.guest", GUEST_JOB,
    ]  # fmt: skip
    limit_s = 60.0 + opts.wall_s_per_sim_s * sim_s
    # This host's clock at boot: the run's own times are simulated (sim.start_utc).
    host_start = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    cpu0 = _children_cpu_s()
    with console.open("ab") as out:
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        _follow(popen, console, limit_s, progress)
    finally:
        if popen.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait(10.0)
    wall_s = time.monotonic() - t0
    # The kernel's host CPU time (its process and the helpers it reaped): the run's cost
    # whatever else the host does, where the wall time also counts the host's other work.
    cpu_s = _children_cpu_s() - cpu0
    return {
        "clock": "time-travel=inf-cpu",
        "start_utc": opts.start_utc,
        "host_start_utc": host_start,
        "seed": seed,
        "kernel": kernel.to_dict(),
        "memory_mb": opts.memory_mb,
        "userspace": opts.userspace,
        "host_user": user.name,
        "pinned_cpu": cpu,
        "identity": ident,
        "wall_s": round(wall_s, 2),
        "host_cpu_s": round(cpu_s, 2),
        "host_vm_max_map_count": map_count,
    }


def _counted(pairs: list[tuple[str, str]]) -> list[str]:
    """The namespace script's words for a list of pairs: their number, then each pair."""
    return [str(len(pairs)), *(word for pair in pairs for word in pair)]


def _enough_mappings(progress: Callable[[str], None]) -> int:
    """Raises the host's vm.max_map_count to MAX_MAP_COUNT if it is lower (it only limits
    how many mappings one process may hold); returns the value the run had."""
    try:
        current = int(MAX_MAP_COUNT_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return -1
    if current >= MAX_MAP_COUNT:
        return current
    try:
        MAX_MAP_COUNT_FILE.write_text(str(MAX_MAP_COUNT), encoding="utf-8")
    except OSError as e:
        raise TestbedError(
            f"sim testbed: vm.max_map_count is {current}, and a UML guest process mapping its "
            f"pages one by one needs more; could not raise it to {MAX_MAP_COUNT} ({e}): run "
            f"`sysctl -w vm.max_map_count={MAX_MAP_COUNT}` as root"
        ) from None
    progress(f"sim: raised this host's vm.max_map_count from {current} to {MAX_MAP_COUNT}")
    return MAX_MAP_COUNT


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _follow(
    popen: subprocess.Popen[bytes], console: Path, limit_s: float, progress: Callable[[str], None]
) -> None:
    """Waits for the kernel to end, passing the guest's progress lines on; kills it at
    ``limit_s`` of wall time."""
    t0 = time.monotonic()
    offset = 0
    while True:
        done = popen.poll() is not None
        with console.open("rb") as fh:
            fh.seek(offset)
            chunk = fh.read()
        cut = chunk.rfind(b"\n") + 1
        offset += cut
        for line in chunk[:cut].decode("utf-8", "replace").splitlines():
            if line.startswith(PROGRESS_MARK):
                progress(line[len(PROGRESS_MARK) :])
        if done:
            return
        if time.monotonic() - t0 > limit_s:
            raise TestbedError(
                f"sim testbed: no end after {limit_s:.0f} s of wall time (sim.wall_s_per_sim_s): "
                "the guest's clock stopped (a process spinning without system calls?); its "
                f"console: {console}"
            )
        time.sleep(0.5)


def console_tail(console: Path, lines: int = 3) -> str:
    """What the console says went wrong: the guest's own error, the kernel's complaints
    (out of memory, a panic, an oops) first, else its last meaningful lines."""
    if not console.is_file():
        return "no console output"
    text = console.read_text(encoding="utf-8", errors="replace").splitlines()
    words = ("Out of memory", "Killed process", "Kernel panic", "BUG", "Oops", "Traceback")
    own = [ln.strip()[len(ERROR_MARK) :] for ln in text if ln.startswith(ERROR_MARK)]
    alarms = own[-1:] + [ln.strip() for ln in text if any(w in ln for w in words)]
    keep = [
        ln.strip()
        for ln in text
        if ln.strip()
        and not ln.lstrip().startswith("[<")
        and not _hex_words(ln)
        and not any(n in ln for n in NOISE)
    ]
    return " | ".join((alarms[:2] + keep[-lines:]) if alarms else keep[-lines:])[:500] or (
        "no console output"
    )


def _hex_words(line: str) -> bool:
    """A stack dump line (``6059e500 a091fcc8 ...``)."""
    words = line.split()
    hexdigits = set("0123456789abcdef")
    return bool(words) and all(len(w) == 8 and set(w) <= hexdigits for w in words)
