"""Timing `cganalysis packets` as a user runs it: each run a fresh process, its wall time,
CPU time and peak memory, after one untimed run.

Why the untimed run, and why a pause before it on some machines: a virtual machine whose
balloon device reports free pages (virtio's free page reporting) hands memory freed for
about two seconds back to its host, and the first process to touch it again waits for the
host to supply it, page by page. Touching 400 MB measured 19 ms when freed just before and
0.37-0.59 s when freed two seconds or more before (on the machine of 2026-11-28). A run
right after another reuses what that one freed, as a user's second command does; but the
kernel reports free memory two seconds after it was told of some, so an untimed run that
starts just before that moment (after a reference timed in between) has its memory handed
back under the timed run that follows, which then measured anywhere between the two. On
such a machine :func:`whole_command` therefore waits out the report before the untimed
run, so that the timed run follows a run whose memory is still there, and reports the
untimed run too: the time of a first run after a pause.

The package is byte-compiled before the runs, as installing it does (`scripts/install.sh`,
or a wheel): where bytecode is not written (`PYTHONDONTWRITEBYTECODE`, as on the machines
of 2026-11-28, or a read-only checkout), each run would otherwise compile its modules
again, 6 ms of a command that takes a few tenths of a second.
"""

from __future__ import annotations

import compileall
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: Runs the command line, then writes the process's peak memory (VmHWM, kB) to the file
#: named by argv[1]. Measured inside the child: a forked child's ru_maxrss also counts
#: the parent's pages it shared before exec (the benchmark holds a gigabyte of tables).
_PEAK_PROBE = """
import runpy, sys
peak_file = sys.argv.pop(1)
sys.argv[0] = "cganalysis"
def write_peak():
    with open("/proc/self/status") as status, open(peak_file, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM")))
try:
    runpy.run_module("cganalysis.cli", run_name="__main__")
finally:
    write_peak()
"""

#: Seconds the kernel waits between being told of free memory and reporting it
#: (`PAGE_REPORTING_DELAY` in mm/page_reporting.c), with a margin.
REPORT_WAIT_S = 2.5
#: The balloon's feature bit for free page reporting (`VIRTIO_BALLOON_F_REPORTING`).
_F_REPORTING = 5
_BALLOONS = Path("/sys/bus/virtio/drivers/virtio_balloon")


def reports_free_memory(balloons: Path = _BALLOONS) -> bool:
    """Whether a balloon device of this machine hands free memory back to the host (its
    `features` file, one character a feature bit, has the reporting bit set)."""
    for features in sorted(balloons.glob("virtio*/features")):
        bits = features.read_text().strip()
        if len(bits) > _F_REPORTING and bits[_F_REPORTING] == "1":
            return True
    return False


@dataclass(frozen=True)
class Runs:
    """The timed runs of one command line: medians (CPU time: user and system, all
    threads; system time alone, where the host's taking back freed memory shows), the
    largest peak, and the untimed run before them (NaN when there was none)."""

    wall_s: float
    cpu_s: float
    sys_s: float
    peak_bytes: int
    first_wall_s: float = float("nan")


def children_cpu_s() -> tuple[float, float]:
    """CPU time of the children waited for so far: (user + system, system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_stime


def byte_compile_package() -> None:
    """Writes the bytecode of the `cganalysis` package where it is missing or stale."""
    import cganalysis

    if not compileall.compile_dir(Path(cganalysis.__file__).parent, quiet=1):
        raise SystemExit("byte-compiling the cganalysis package failed (see above)")


def run_process(argv: list[str]) -> float:
    """Wall time of one child process."""
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr.decode()}")
    return seconds


def whole_command(
    ingress: Path,
    egress: Path,
    out: Path,
    repeat: int,
    extra: tuple[str, ...] = (),
    *,
    over_existing: bool = False,
    warm: bool = True,
) -> Runs:
    """`cganalysis packets` as a user runs it, each run in a fresh process, after one
    untimed run (see the module's docstring; where free memory goes back to the host,
    after waiting for that first). On a machine shared with other jobs the CPU time says
    what the wall time would be on a quiet one.

    Each timed run writes new tables, as in the workflow (Snakemake removes a job's
    outputs before it runs it): the previous run's are removed first, untimed. With
    `over_existing` they are left, and each run replaces them; on ext4 that rename frees
    the old files and starts writing the new ones back, which the command then waits
    for (~40 ms here). Without `warm`, no untimed run first."""
    byte_compile_package()
    peak_file = out.with_name("peak-kb.txt")
    argv = [sys.executable, "-c", _PEAK_PROBE, str(peak_file), "packets"]
    argv += [str(ingress), str(egress), "-o", str(out), *extra]
    outputs = [out, out.with_name(out.name.removesuffix(".parquet") + ".egress-only.parquet")]

    def clear() -> None:
        if not over_existing:
            for path in outputs:
                path.unlink(missing_ok=True)

    first = float("nan")
    if warm:
        clear()
        if reports_free_memory():
            time.sleep(REPORT_WAIT_S)
        first = run_process(argv)
    times, cpus, syss, peaks = [], [], [], []
    for _ in range(repeat):
        clear()
        cpu, sys_ = children_cpu_s()
        times.append(run_process(argv))
        cpu_after, sys_after = children_cpu_s()
        cpus.append(cpu_after - cpu)
        syss.append(sys_after - sys_)
        peaks.append(int(peak_file.read_text()) * 1024)
    median = statistics.median
    return Runs(median(times), median(cpus), median(syss), max(peaks), first)


def medians(runs: list[Runs]) -> Runs:
    """Median wall, CPU and first-run times and the largest peak of several
    :func:`whole_command` results."""
    return Runs(
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.cpu_s for r in runs),
        statistics.median(r.sys_s for r in runs),
        max(r.peak_bytes for r in runs),
        statistics.median(r.first_wall_s for r in runs),
    )
