"""The ``sim`` testbed: a whole run inside one user-mode Linux kernel on simulated time.

``configs/runs/quick-sim-dualpi2.yaml`` (SCReAM in the L queue against Cubic in the C
queue of the kernel's own DualPI2, netem 15 ms each way) runs twice, the first time pinned
to one host CPU (``sim.cpu: auto``), the second unpinned (``none``) with both of this
machine's cores kept busy: the two packet tables must be identical, column for column
(every time, delay, loss, ECN mark, port and sequence number). DualPI2 marks and drops at
random, so this also shows the guest's randomness follows the seed. Where the real-time
testbeds need a quiet machine and loose bounds (a competitor that starts
"about" on time, a link "mostly" used), the simulated clock gives exact values: the twin
assertions below are tight. A third run with another repetition number (another seed)
must differ.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.matching import match_files
from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS

RUN = REPO / "configs" / "runs" / "quick-sim-dualpi2.yaml"

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


def _need_sim() -> None:
    need_root()
    need_tool(*TOOLS, "setpriv", "unshare")
    from cganalysis.testbed.shared.hosts import TestbedError
    from cganalysis.testbed.sim.config import SimOptions, find_sim_kernel, find_simrng

    try:
        find_sim_kernel(SimOptions())
        find_simrng()
    except TestbedError as e:
        pytest.skip(str(e))


def _cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", *map(str, args)],
        capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _burn(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


#: A run's meta.json and its packet table.
Run = tuple[dict[str, Any], pl.DataFrame]


def _run(out: Path, *extra: str) -> Run:
    res = _cli("experiment", RUN, "-o", out, *extra)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    packets = match_files(out / "ingress.pcap", out / "egress.pcap").packets
    return meta, packets


def _bed(folder: Path, cpu: str) -> Path:
    """A sim testbed file with this ``sim.cpu``; the guest gets a copy, so the twins' files
    have the same name and length."""
    folder.mkdir()
    path = folder / "sim.yaml"
    path.write_text(f"backend: sim\nsim:\n  cpu: {cpu}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def twin_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    _need_sim()
    base = tmp_path_factory.mktemp("sim")
    runs = {"quiet": _run(base / "a", "--testbed", _bed(base / "a-bed", "auto"))}
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2)]
    for b in burners:
        b.start()
    try:
        runs["loaded"] = _run(base / "b", "--testbed", _bed(base / "b-bed", "none"))
    finally:
        stop.set()
        for b in burners:
            b.join(10)
    return runs


def test_a_run_twice_gives_the_same_packets_even_on_a_loaded_host(
    twin_runs: dict[str, Run],
) -> None:
    (pinned, quiet), (unpinned, loaded) = twin_runs["quiet"], twin_runs["loaded"]
    assert pinned["testbed"]["sim"]["pinned_cpu"] in os.sched_getaffinity(0)
    assert unpinned["testbed"]["sim"]["pinned_cpu"] is None
    assert quiet.height > 5000
    assert quiet.columns == loaded.columns
    for col in quiet.columns:
        assert quiet[col].equals(loaded[col], null_equal=True), f"column {col} differs"
    # DualPI2 did draw: it marked the L queue's packets (CE), at random.
    assert quiet.filter(pl.col("ce_marked"))["flow_id"].len() > 0


def test_meta_says_sim_with_its_clock_seed_and_kernel(
    twin_runs: dict[str, Run],
) -> None:
    meta, _ = twin_runs["quiet"]
    tb = meta["testbed"]
    assert tb["backend"] == "sim" and tb["inner_backend"] == "netns"
    sim = tb["sim"]
    assert sim["clock"] == "time-travel=inf-cpu" and sim["seed"] == 1
    assert sim["kernel"]["origin"] == "built" and sim["sim_s"] > 18
    assert meta["run_id"] == "a" and meta["bottleneck_backend"] == "kernel"
    assert meta["flags"] == []


def test_exact_values_where_real_time_needs_loose_bounds(
    twin_runs: dict[str, Run],
) -> None:
    """The twins of test_experiment_netns / test_cg_netns's bounds, tight."""
    meta, p = twin_runs["quiet"]
    t0 = int(meta["times"]["start_ns"])
    # The competitor starts at 6 s of the schedule: iperf3's first SYN passes the ingress
    # tap 15 ms later (the netem delay on the server's interface) plus the microseconds of
    # the veth hops, never tens of milliseconds late as on a loaded real-time host.
    syn = p.filter((pl.col("proto") == 6) & (pl.col("tcp_flags") == 2))
    syn_s = (int(syn["t_ingress_ns"].min()) - t0) / 1e9  # type: ignore[arg-type]
    assert 6.015 <= syn_s < 6.0155, syn_s
    # While TCP saturates, the link is used: the egress rate within 3 % of the 12 Mbit/s
    # configured (Ethernet headers included, as the capture sees them).
    w = p.filter(~pl.col("lost"))
    w = w.filter(
        (pl.col("t_egress_ns") >= t0 + 8_000_000_000)
        & (pl.col("t_egress_ns") < t0 + 14_000_000_000)
    )
    mbps = int(w["size_bytes"].sum()) * 8 / 6.0 / 1e6
    assert 11.7 < mbps < 12.1, mbps
    # The L queue stays short under DualPI2 (its 1 ms step threshold): CG median < 2 ms.
    cg = w.filter(pl.col("proto") == 17)
    assert float(cg["delay_ms"].median()) < 2.0  # type: ignore[arg-type]
    # SCReAM alone on the link reaches its 10 Mbit/s maximum (RTP and headers on top)
    # within 2 s, and is back at it 2 s after Cubic stops (measured: 10.22 and 10.41).
    for lo_s, hi_s in ((2, 6), (16, 18)):
        assert 9.9 < _cg_mbps(p, t0, lo_s, hi_s) < 10.8, (lo_s, hi_s)
    # Under Cubic it yields in the L queue but keeps a share (measured: 2.27 Mbit/s).
    assert 1.5 < _cg_mbps(p, t0, 10, 14) < 3.5


def test_another_repetition_is_another_draw(tmp_path: Path, twin_runs: dict[str, Run]) -> None:
    _, first = twin_runs["quiet"]
    meta, other = _run(tmp_path / "r1", "--repetition", "1")
    assert meta["testbed"]["sim"]["seed"] == 2
    assert meta["repetition"] == 1
    assert _tcp_ports(first) != _tcp_ports(other)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_leaves_no_kernel(tmp_path: Path, signum: int) -> None:
    """SIGKILL: the kernel dies with its parent (pdeathsig). SIGTERM: the run unwinds and
    leaves nothing at all, not even its job folder."""
    _need_sim()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cganalysis.cli", "experiment", str(RUN), "-o", str(tmp_path / "k")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    kernel: set[int] = set()
    while not kernel and time.monotonic() < deadline:
        time.sleep(0.2)
        kernel = _family(proc.pid) - {proc.pid}
    assert kernel, "the sim kernel never started"
    time.sleep(2)  # booted: its helper processes exist too
    kernel = _family(proc.pid) - {proc.pid}
    os.kill(proc.pid, signum)
    proc.wait(30)
    deadline = time.monotonic() + 20
    while kernel & _alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not kernel & _alive(), "the sim kernel outlived the run"
    assert not (tmp_path / "k").exists()
    if signum == signal.SIGTERM:
        assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def _run_from_copy(top: Path, where: str, short: list[str]) -> dict[str, bytes]:
    """The sim run from a copy of the checkout at ``top/where``: its captures' bytes."""
    checkout = top / where
    for part in ("src", "configs", "requirements"):
        shutil.copytree(REPO / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(REPO / "pyproject.toml", checkout / "pyproject.toml")
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    out = top / f"out-{checkout.name}"
    res = subprocess.run(
        [str(checkout / ".venv" / "bin" / "python"), "-m", "cganalysis.cli", "experiment",
         "configs/runs/quick-sim-dualpi2.yaml", "-o", str(out), *short],
        capture_output=True, text=True, timeout=600, check=False, cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout / "src")},
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    meta = json.loads((out / "meta.json").read_text())
    ident = meta["testbed"]["sim"]["identity"]
    assert ident["host_paths"]["source"] == str(checkout / "src")
    assert ident["package_path"] == "/mnt/cga-code/checkout/src/cganalysis"
    return {name: (out / name).read_bytes() for name in ("ingress.pcap", "egress.pcap")}


def test_missing_seed_library_is_one_clear_line(tmp_path: Path) -> None:
    need_root()
    res = _cli(
        "experiment", RUN, "-o", tmp_path / "x", env={"CGA_SIMRNG_LIB": str(tmp_path / "no.so")}
    )
    assert res.returncode != 0
    line = res.stderr.strip().splitlines()[-1]
    assert "CGA_SIMRNG_LIB" in line and "install.sh" in line, res.stderr


def _cg_mbps(packets: pl.DataFrame, t0: int, lo_s: float, hi_s: float) -> float:
    """The CG flow's delivered rate between two schedule times, Mbit/s (egress bytes)."""
    t = pl.col("t_egress_ns")
    cg = packets.filter((pl.col("proto") == 17) & ~pl.col("lost"))
    cg = cg.filter((t >= t0 + int(lo_s * 1e9)) & (t < t0 + int(hi_s * 1e9)))
    return int(cg["size_bytes"].sum()) * 8 / (hi_s - lo_s) / 1e6


def _tcp_ports(packets: pl.DataFrame) -> set[int]:
    return set(packets.filter(pl.col("proto") == 6)["sport"].to_list())


def _alive() -> set[int]:
    return {int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()}


def _family(root: int) -> set[int]:
    """``root`` and every process below it."""
    parents: dict[int, int] = {}
    for pid in _alive():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("PPid:"):
                parents[pid] = int(line.split()[1])
    family = {root}
    grew = True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in family} - family
        family |= more
        grew = bool(more)
    return family


def test_an_ordinary_user_makes_the_same_packets_as_root() -> None:
    """No privilege at all (issue 58): the kernel runs as an ordinary user in a user
    namespace of its own either way, so a run started by `nobody` gives root's captures,
    byte for byte; so does a copy of the checkout in another folder, one only root may
    enter (the guest sees the code at fixed paths). Under /tmp also because the guest
    mounts a /tmp of its own, which must not hide them; not pytest's tmp_path: root's is
    private, and the kernel runs as an ordinary user, who must read the checkout."""
    _need_sim()
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        top = Path(folder)
        top.chmod(0o755)
        (top / "user").mkdir()
        os.chown(top / "user", 65534, 65534)
        short = ["--max-duration-s", "3"]
        root_run = _cli("experiment", RUN, "-o", top / "root", *short)
        assert root_run.returncode == 0, root_run.stderr[-2000:]
        # The code's commit is the host's (the guest's git refuses a checkout it does not own).
        git = json.loads((top / "root" / "meta.json").read_text())["controller"]["git"]
        assert len(git["commit"] or "") == 40 and isinstance(git["dirty"], bool), git
        env = {**os.environ, "HOME": str(top / "user"), "XDG_CACHE_HOME": str(top / "user")}
        env.pop("XDG_RUNTIME_DIR", None)
        as_user = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-m", "cganalysis.cli", "experiment", str(RUN), "-o", str(top / "user" / "run"),
             *short],
            capture_output=True, text=True, timeout=600, check=False, env=env,
        )  # fmt: skip
        assert as_user.returncode == 0, as_user.stderr[-2000:]
        assert (top / "user" / "run" / "meta.json").stat().st_uid == 65534
        for name in ("ingress.pcap", "egress.pcap"):
            a, b = (top / "root" / name).read_bytes(), (top / "user" / "run" / name).read_bytes()
            assert a == b, name
        # A copy of the checkout in another folder, one only root may enter (a mktemp
        # folder, root's home), its venv through a link of its own: the code is bound at
        # fixed paths in the guest, so the same captures as root's run from the checkout
        # (paths reach the guest's randomness: with host paths, two folders gave others).
        shut = top / "shut"
        shut.mkdir()
        shut.chmod(0o700)
        assert _run_from_copy(shut, "checkout", short) == {
            name: (top / "root" / name).read_bytes() for name in ("ingress.pcap", "egress.pcap")
        }
        # A source the kernel's user may not read: refused before the kernel boots, named.
        src = shut / "checkout" / "src"
        src.chmod(0o700)
        python = str(shut / "checkout" / ".venv" / "bin" / "python")
        refused = subprocess.run(
            [python, "-m", "cganalysis.cli", "experiment", str(RUN), "-o", str(top / "no")],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(src)},
        )  # fmt: skip
        line = refused.stderr.strip().splitlines()[-1]
        assert refused.returncode != 0 and f"cannot read {src}" in line, line
