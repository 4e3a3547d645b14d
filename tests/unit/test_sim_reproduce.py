"""What a sim run's packets depend on (``simidentity``), who its kernel runs as
(``simuser``), and ``cganalysis dataset reproduce``'s comparisons, without a kernel."""

from __future__ import annotations

import copy
import json
import os
import struct
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cganalysis.dataset import reprocode, reproduce
from cganalysis.errors import ConfigError
from cganalysis.io import sha256_file
from cganalysis.testbed.sim import code as simcode
from cganalysis.testbed.sim import identity as simidentity
from cganalysis.testbed.sim import user as simuser
from tests.conftest import REPO, need_root, need_tool


def _sim(**over: Any) -> dict[str, Any]:
    ident = {
        "kernel_sha256": "a" * 64,
        "simrng_sha256": "b" * 64,
        "interpreter": {"path": "/usr/bin/python3", "sha256": "c" * 64, "version": "3.11.2"},
        "programs": {"iperf3": {"path": "/usr/bin/iperf3", "sha256": "d" * 64}},
        "cpu": {"model": "AMD EPYC", "flags_sha256": "e" * 64, "flags": ["avx2", "sse4_2"]},
    }
    return {"seed": 1, "start_utc": "x", "memory_mb": 2048, "userspace": "seccomp",
            "identity": ident, **over}  # fmt: skip


def test_same_inputs_no_difference() -> None:
    assert simidentity.differences(_sim(), _sim()) == []


def test_each_input_that_differs_is_one_line() -> None:
    here = _sim(userspace="ptrace")
    here["identity"]["kernel_sha256"] = "f" * 64
    here["identity"]["programs"]["iperf3"]["sha256"] = "0" * 64
    here["identity"]["cpu"] = {"model": "Intel Xeon", "flags_sha256": "1" * 64,
                               "flags": ["amx_tile", "avx2", "sse4_2"]}  # fmt: skip
    here["identity"]["interpreter"]["path"] = "/elsewhere/.venv/bin/python"
    lines = simidentity.differences(_sim(), here)
    assert len(lines) == 5
    assert (
        "the interpreter's path: /usr/bin/python3 recorded, /elsewhere/.venv/bin/python here "
        "(paths reach the guest's randomness)" in lines
    )
    assert any(line.startswith("the kernel binary: aaaaaaaaaaaa recorded") for line in lines)
    assert any("program iperf3" in line for line in lines)
    cpu = next(line for line in lines if line.startswith("CPU features"))
    assert "only here: amx_tile" in cpu and "only there: -" in cpu
    assert "sim.userspace: 'seccomp' recorded, 'ptrace' here" in lines


def test_an_interpreter_recorded_by_name_is_said_to_be_unknown() -> None:
    """Runs before the fixed paths recorded the interpreter as started (``python``)."""
    recorded = _sim()
    recorded["identity"]["interpreter"]["path"] = "python"
    assert simidentity.differences(recorded, _sim()) == [
        "the interpreter's path: recorded as 'python', not a path (the run's venv folder is "
        "unknown); /usr/bin/python3 here: the run is the same only where that is the venv "
        "that made it"
    ]


def test_a_build_named_for_the_guest_is_the_program_recorded(tmp_path: Path) -> None:
    """``$CGA_CG_BIN`` (a build, or the dataset commit's own in reproduce) is what the guest
    runs: its file is recorded, not the cga-cg on the guest's PATH."""
    (tmp_path / "bin").mkdir()
    for folder, text in ((tmp_path / "bin", b"installed"), (tmp_path, b"a build")):
        (folder / "cga-cg").write_bytes(b"#!/bin/sh\n# " + text + b"\n")
        (folder / "cga-cg").chmod(0o755)
    build = str(tmp_path / "cga-cg")
    on_path = simidentity.programs(str(tmp_path / "bin"))["cga-cg"]
    assert on_path["path"] == str(tmp_path / "bin" / "cga-cg")
    built = simidentity.programs(str(tmp_path / "bin"), {"cga-cg": build})["cga-cg"]
    assert built == {"path": build, "sha256": sha256_file(Path(build))}
    assert built["sha256"] != on_path["sha256"]


def test_a_run_without_identity_says_so() -> None:
    old = {"seed": 1, "start_utc": "x", "memory_mb": 2048}  # before sim.userspace existed
    assert simidentity.differences(old, _sim()) == [
        "the run records no identity (made before identities were recorded)",
        "sim.userspace: None recorded, 'seccomp' here",
    ]


def test_the_identity_of_this_host_names_its_programs(tmp_path: Path) -> None:
    prog = tmp_path / "iperf3"
    prog.write_bytes(b"#!/bin/sh\n")
    prog.chmod(0o755)
    found = simidentity.programs(str(tmp_path))
    assert found == {"iperf3": {"path": str(prog), "sha256": sha256_file(prog)}}
    cpu = simidentity.cpu()
    assert len(cpu["flags_sha256"]) == 64 and cpu["flags"] == sorted(cpu["flags"])


def test_root_runs_the_kernel_as_an_unprivileged_user() -> None:
    need_root()
    user = simuser.host_user()
    assert user.dropped and user.uid != 0 and user.name == simuser.UNPRIVILEGED
    assert simuser.namespace_argv(user)[:2] == ["unshare", "--mount"]
    drop = simuser.drop_argv(user)
    assert f"--reuid={user.uid}" in drop and drop[-2:] == ["--pdeathsig", "KILL"]
    assert drop.index("--map-root-user") > drop.index(f"--reuid={user.uid}")


def test_the_job_folder_is_handed_over_and_taken_back() -> None:
    need_root()
    # Not pytest's tmp_path: root's is private (0700); reveals() would have to show it.
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        top = Path(tmp)
        top.chmod(0o755)
        user = simuser.host_user()
        job = top / "job"
        (job / "run").mkdir(parents=True, mode=0o700)
        assert simuser.reveals(user, [job / "run"]) == ([], [str(job / "run")])
        simuser.hand_over(job, user)
        assert (job / "run").stat().st_uid == user.uid
        assert simuser.reveals(user, [job / "run"]) == ([], [])
        simuser.take_back(job, user)
        assert (job / "run").stat().st_uid == os.geteuid()


def test_reproduce_refuses_a_real_time_run_and_hostile_sources(tmp_path: Path) -> None:
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "r1.json").write_text('{"testbed": {"backend": "netns"}}')
    with pytest.raises(ConfigError, match="ran on the netns testbed, in real time"):
        reproduce.sim_meta(tmp_path, "r1")
    with pytest.raises(ConfigError, match="not a usable run name"):
        reproduce.sim_meta(tmp_path, "$(touch x)")
    for source in (
        "/etc/passwd (run r1)",
        "configs/../../etc/x.yaml (run r1)",
        "configs/c.yaml (run $(id))",
        "configs/c.yaml",
    ):
        meta = {"config": {"source": source}}
        with pytest.raises(ConfigError, match=r"config\.source|not a usable run name"):
            reproduce.campaign_file(REPO, meta, "meta.json")
    ok = {"config": {"source": "configs/campaigns/tma2024-sim.yaml (run tma2024-sim-htb-bbr-r01)"}}
    path, run = reproduce.campaign_file(REPO, ok, "meta.json")
    assert path == REPO / "configs/campaigns/tma2024-sim.yaml" and run == "tma2024-sim-htb-bbr-r01"


def _pcap(path: Path, packets: list[tuple[int, int, bytes]]) -> Path:
    head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 128, 1)
    body = b"".join(
        struct.pack("<IIII", s, ns, len(data), len(data)) + data for s, ns, data in packets
    )
    path.write_bytes(head + body)
    return path


def test_the_first_differing_packet_is_named(tmp_path: Path) -> None:
    pkts = [(1, 5, b"a" * 60), (1, 900, b"b" * 70), (2, 7, b"c" * 80)]
    a = _pcap(tmp_path / "a.pcap", pkts)
    assert reproduce.first_differing_packet(a, _pcap(tmp_path / "b.pcap", pkts)) is None
    moved = [*pkts[:1], (1, 901, b"b" * 70), pkts[2]]
    line = reproduce.first_differing_packet(a, _pcap(tmp_path / "c.pcap", moved))
    assert line == "packet 1: t=1.000000900 70 B recorded, t=1.000000901 70 B here"
    short = reproduce.first_differing_packet(a, _pcap(tmp_path / "d.pcap", pkts[:2]))
    assert short == "3 packets recorded, 2 here (the first 2 agree)"


def test_files_and_metrics_are_compared_one_by_one() -> None:
    files = {"ingress.pcap": {"sha256": "1"}, "egress.pcap": {"sha256": "2"}, "x": {"sha256": "3"}}
    out = reproduce.Outcome("r1")
    reproduce.compare_files(files, copy.deepcopy(files), out)
    assert out.identical and out.files_same[:2] == ["egress.pcap", "ingress.pcap"]
    out = reproduce.Outcome("r1")
    reproduce.compare_files(files, {**files, "egress.pcap": {"sha256": "9"}}, out)
    assert not out.identical and out.files_differ == ["egress.pcap"]
    doc = {"flows": {"cg": {"delay_ms": 1.25, "lost": 3}}, "bins": [1.0, 2.0], "name": "x"}
    other = copy.deepcopy(doc)
    other["flows"]["cg"]["delay_ms"] = 1.5
    other["bins"][1] = 2.0001
    reproduce.compare_metrics(doc, other, out)
    assert out.metrics_same == 2
    assert out.metrics_differ == [
        "flows.cg.delay_ms: 1.25 recorded, 1.5 here",
        "bins[1]: 2.0 recorded, 2.0001 here",
    ]


def test_the_command_line_takes_runs_and_refuses_unknown_ones(tmp_path: Path) -> None:
    from cganalysis.cli import build_parser, main

    args = build_parser("dataset").parse_args(
        ["dataset", "reproduce", "datasets/x", "--run", "a-r01", "--run", "b-r01"]
    )
    assert args.runs == ["a-r01", "b-r01"] and callable(args.run)
    published = REPO / "datasets" / "tma2024-sim-be10-2026-11-27"
    assert main(["dataset", "reproduce", str(published), "--run", "nope-r01",
                 "-o", str(tmp_path / "out")]) == 2  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_private_folders_above_the_checkout_are_shown_or_refused() -> None:
    need_root()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        top = Path(tmp)
        top.chmod(0o755)
        user = simuser.host_user()
        (top / "a" / "b").mkdir(parents=True)
        (top / "a" / "b" / "f").write_text("x")
        assert simuser.reveals(user, [top / "a" / "b" / "f"]) == ([], [])
        (top / "a").chmod(0o700)
        assert simuser.reveals(user, [top / "a" / "b" / "f"]) == ([(str(top / "a"), "b")], [])
        (top / "a" / "b").chmod(0o700)
        assert simuser.reveals(user, [top / "a" / "b" / "f"]) == (
            [(str(top / "a"), "b")],
            [str(top / "a" / "b")],
        )
        # Bound into the kernel's namespace, only the path's own mode matters.
        assert simuser.unreadable(user, [top / "a" / "b" / "f"]) == []
        assert simuser.unreadable(user, [top / "a" / "b"]) == [str(top / "a" / "b")]


def test_the_guest_sees_this_process_code_at_fixed_paths() -> None:
    """The layout the kernel's namespace binds: every guest path under simcode.CODE, this
    process's own package as the source, its site-packages behind the .pth (never the
    host's own .pth files, which name host paths), and the recorded paths the guest's."""
    import cganalysis

    code = simcode.guest_code()
    binds = {guest: host for host, guest in code.binds()}
    assert all(g.startswith(simcode.CODE + "/") for g in binds)
    assert binds[simcode.SOURCE] == str(Path(cganalysis.__file__).resolve().parent.parent)
    assert Path(binds[simcode.PYTHON]).samefile(sys.executable)
    files = dict(code.files())
    home = files[f"{simcode.CODE}/pyvenv.cfg"].splitlines()[0].removeprefix("home = ")
    assert home.startswith(f"{simcode.CODE}/base/")
    pth = next(text for path, text in files.items() if path.endswith(".pth"))
    assert pth.splitlines() == [simcode.SOURCE] + [
        g for g in binds if g.startswith(f"{simcode.CODE}/site/")
    ]
    kernel = Path(sys.executable)  # any file: the identity hashes it
    ident = simidentity.identity(kernel, kernel, code, "/nonexistent")
    assert ident["interpreter"]["path"] == simcode.PYTHON
    assert ident["package_path"] == f"{simcode.SOURCE}/cganalysis"
    assert ident["host_paths"]["source"] == binds[simcode.SOURCE]


def _repo(root: Path) -> str:
    """A repository of two commits; the second changes a Rust source. Returns the first."""
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    (root / "native").mkdir(parents=True)
    (root / "native" / "lib.rs").write_text("fn a() {}\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run([*git, *argv], check=True)
    first = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    (root / "native" / "lib.rs").write_text("fn b() {}\n")
    subprocess.run([*git, "commit", "-q", "-am", "two"], check=True)
    return first.strip()


def test_the_dataset_code_missing_or_of_other_rust_is_one_line(tmp_path: Path) -> None:
    first = _repo(tmp_path / "repo")
    with pytest.raises(ConfigError, match=r"not in .*history \(a shallow clone\?\): `git -C"):
        reprocode.check_out(tmp_path / "repo", "f" * 40, tmp_path / "cache")
    # Its Rust sources differ and are no workspace: the build fails, in one line, and
    # nothing is left where a checkout would be.
    with pytest.raises(ConfigError, match=r"commit \w{12}: `cargo build` of its Rust sources"):
        reprocode.check_out(tmp_path / "repo", first, tmp_path / "cache")
    assert not (tmp_path / "cache" / first).exists()
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(f".{first[:12]}")]
    meta: dict[str, Any] = {"controller": {"git": {"commit": None}}}
    with pytest.raises(ConfigError, match=r"controller\.git\.commit"):
        reprocode.recorded_commit(meta, "m.json")


def test_the_dataset_code_is_extracted_with_this_native_extension(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo)
    (repo / "src" / "cganalysis").mkdir(parents=True)
    (repo / "src" / "cganalysis" / "__init__.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "three"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    checked_out = reprocode.check_out(repo, head.strip(), tmp_path / "cache")
    code = checked_out.path
    assert code == tmp_path / "cache" / head.strip()
    assert checked_out.builds == {}  # the same Rust sources: this installation's programs
    from cganalysis import _native

    assert (code / "src" / "cganalysis" / Path(_native.__file__).name).is_file()
    assert (code / "native" / "lib.rs").read_text() == "fn b() {}\n"
    assert (code.stat().st_mode & 0o005) == 0o005  # the sim kernel's user reads it
    assert reprocode.canonical({"testbed": {"sim": {"identity": _sim()["identity"]}}}) is False


#: A workspace of the three packages a sim run uses, each a few lines (no dependency).
_WORKSPACE = {
    "Cargo.toml": '[workspace]\nresolver = "2"\nmembers = ["native/python", "native/cg", '
    '"native/simrng"]\n',
    "native/python/Cargo.toml": '[package]\nname = "cga-native"\nversion = "0.1.0"\n'
    'edition = "2021"\n[lib]\nname = "_native"\ncrate-type = ["cdylib"]\n',
    "native/python/src/lib.rs": '#[no_mangle]\npub extern "C" fn cga_commit() -> u32 { 1 }\n',
    "native/cg/Cargo.toml": '[package]\nname = "cga-cg"\nversion = "0.1.0"\nedition = "2021"\n',
    "native/cg/src/main.rs": 'fn main() { println!("cga-cg of the dataset\'s commit"); }\n',
    "native/simrng/Cargo.toml": '[package]\nname = "cga-simrng"\nversion = "0.1.0"\n'
    'edition = "2021"\n[lib]\nname = "cga_simrng"\ncrate-type = ["cdylib"]\n',
    "native/simrng/src/lib.rs": '#[no_mangle]\npub extern "C" fn cga_seed() -> u32 { 2 }\n',
    "src/cganalysis/__init__.py": "",
}


def test_a_commit_of_other_rust_sources_runs_with_its_own_builds(tmp_path: Path) -> None:
    """Its native extension, cga-cg and random source are built from its sources, and its
    runs are pointed at them (not at this installation's, which another commit built)."""
    need_tool("cargo")
    repo = tmp_path / "repo"
    for name, text in _WORKSPACE.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["cargo", "generate-lockfile", "--offline", "-q"], cwd=repo, check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run([*git, *argv], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (repo / "native/cg/src/main.rs").write_text('fn main() { println!("a later cga-cg"); }\n')
    subprocess.run([*git, "commit", "-q", "-am", "two"], check=True)

    checked_out = reprocode.check_out(repo, commit, tmp_path / "cache")
    code = checked_out.path
    assert code == tmp_path / "cache" / commit
    cg = Path(checked_out.env()["CGA_CG_BIN"])
    assert cg == code / "bin" / "cga-cg"
    said = subprocess.run([str(cg)], capture_output=True, text=True, check=True).stdout
    assert said == "cga-cg of the dataset's commit\n"
    simrng = Path(checked_out.env()["CGA_SIMRNG_LIB"])
    assert simrng == code / "bin" / "libcga_simrng.so" and b"cga_seed" in simrng.read_bytes()
    extension = code / "src" / "cganalysis" / "_native.abi3.so"
    assert b"cga_commit" in extension.read_bytes()  # the commit's, not this installation's
    assert (cg.stat().st_mode & 0o005) == 0o005  # the sim kernel's user runs it
    # Extracted once: a second call reuses it (and its builds).
    assert reprocode.check_out(repo, commit, tmp_path / "cache") == checked_out

    # As root the builds are shown where the installed files are (the guest's environment
    # as the recorded run's); as another user, or without installed files, named by the
    # variables, which is said.
    installed = tmp_path / "installed"
    installed.mkdir()
    (installed / "cga-cg").write_bytes(b"#!/bin/sh\n")
    (installed / "cga-cg").chmod(0o755)
    placed = reproduce.place_builds(checked_out, str(installed))
    if os.geteuid() == 0 and reproduce.SIMRNG.is_file():
        assert placed.env == {} and placed.note is None
        assert (cg, str(installed / "cga-cg")) in placed.binds
        assert (simrng, str(reproduce.SIMRNG)) in placed.binds
    else:
        assert placed.binds == [] and placed.env == checked_out.env()
    nowhere = reproduce.place_builds(checked_out, str(tmp_path / "empty"))
    assert nowhere.binds == [] and nowhere.env == checked_out.env()
    assert nowhere.note is not None and "expect other packets" in nowhere.note


def test_the_builds_are_bound_in_a_namespace_of_the_run_s_own(tmp_path: Path) -> None:
    """The command binds each build over its file, then runs the code; the host's file
    is untouched."""
    need_root()
    target = tmp_path / "installed"
    target.write_text("installed\n")
    build = tmp_path / "build"
    build.write_text("the commit's build\n")
    meta = {"testbed": {"sim": {"identity": {"interpreter": {"path": simcode.PYTHON}}}}}
    argv = reprocode.experiment_argv(tmp_path, ["--version"], meta, [(build, str(target))])
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    cat = [*argv[: argv.index("--") + 1], "cat", str(target)]
    shown = subprocess.run(cat, capture_output=True, text=True, check=True).stdout
    assert shown == "the commit's build\n"
    assert target.read_text() == "installed\n"
    assert reprocode.experiment_argv(tmp_path, ["--version"], meta, [])[0] == "env"


def test_a_calibration_is_passed_only_to_a_run_that_was_given_one() -> None:
    """A trace-driven run skipped calibration: the dataset keeps the reason under
    calibration/, which must not be handed to the run made again (it would be refused as
    the calibration of another bottleneck)."""
    given = REPO / "datasets/tma2024-sim-2026-11-29/meta/tma2024-sim-pfifo-cubic-r01.json"
    trace = (
        REPO / "datasets/tma2024-sim-cellular-scaled-2026-11-29/meta/"
        "tma2024-sim-cellular-scaled-mean30-cga-cg-none-r01.json"
    )
    assert reproduce.calibration_given(json.loads(given.read_text())) is True
    skipped = json.loads(trace.read_text())
    assert "skipped" in skipped["calibration"]
    assert reproduce.calibration_given(skipped) is False


def test_a_sim_job_names_no_host_path(tmp_path: Path) -> None:
    """The testbed file and the traces reach the guest copied into its job folder, under
    fixed names (a host path in the job would reach the guest's random pool: the same run
    file from another folder would make other packets); meta.json keeps the host's."""
    from cganalysis.experiment.campaign import load_campaign
    from cganalysis.experiment.insim import staged
    from cganalysis.testbed.sim.kernel import GUEST_JOB

    campaign = REPO / "configs" / "campaigns" / "tma2024-sim-cellular-scaled.yaml"
    cfg = load_campaign(campaign).runs[0].config
    cfg = replace(cfg, testbed=replace(cfg.testbed, path=REPO / "configs/testbeds/sim.yaml"))
    assert cfg.bottleneck.forward.trace is not None and cfg.bottleneck.reverse is not None
    ctl = tmp_path / "job"
    ctl.mkdir()
    job = staged(cfg, ctl)
    assert job.testbed.path == Path(GUEST_JOB) / "testbed" / "sim.yaml"
    assert job.bottleneck.forward.trace == f"{GUEST_JOB}/traces/forward"
    assert job.bottleneck.reverse is not None
    assert job.bottleneck.reverse.trace == f"{GUEST_JOB}/traces/reverse"
    assert (ctl / "traces" / "forward").read_bytes() == Path(
        cfg.bottleneck.forward.trace
    ).read_bytes()
    assert (ctl / "testbed" / "sim.yaml").read_bytes() == (
        REPO / "configs/testbeds/sim.yaml"
    ).read_bytes()
    assert str(REPO) not in repr(job.testbed) + repr(job.bottleneck)
