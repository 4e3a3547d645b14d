"""``cganalysis dataset reproduce DATASET [--run RUN]``: a published sim run made again here,
and compared with what the dataset records.

A run on the ``sim`` testbed is a function of its run file, its seed and the inputs its
meta.json records under ``testbed.sim.identity`` (:mod:`cganalysis.testbed.sim.identity`).
Before running, each recorded input that differs from this host's is printed in one line,
with the code's commit; then the run is made into a new folder (never over a raw run) and
compared: the files' SHA-256 (the captures first), then, where the captures differ, the
first differing packet (against the raw run in data/raw, where it is) and the metrics,
number by number, against the dataset's. Bit for bit is the verdict to expect when no
input differs.

Everything read from the dataset is checked as hostile: the run id against the raw-name
grammar, the campaign file's path against the repository's ``configs/`` folder.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import BINARY_NAME
from cganalysis.dataset import reprocode
from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.insim import guest_builds, guest_env
from cganalysis.io import read_json_object, sha256_file, write_json
from cganalysis.metrics.io import RunFiles, metrics_of_runs
from cganalysis.rawnames import check_name
from cganalysis.testbed.sim.config import (
    SIMRNG,
    SIMRNG_ENV,
    find_sim_kernel,
    find_simrng,
    load_options,
)
from cganalysis.testbed.sim.identity import differences, identity

#: meta.json's ``config.source`` for a campaign's run: ``FILE (run RUN_ID)``.
SOURCE = re.compile(r"(?P<file>configs/[A-Za-z0-9_./-]+\.ya?ml) \(run (?P<run>[^()]+)\)")
#: The captures, compared first: they are what every table derives from.
CAPTURES = ("ingress.pcap", "egress.pcap")


@dataclass
class Outcome:
    """What one reproduction found."""

    run_id: str
    inputs_differ: list[str] = field(default_factory=list)
    files_same: list[str] = field(default_factory=list)
    files_differ: list[str] = field(default_factory=list)
    first_packet: str | None = None
    metrics_same: int = 0
    metrics_differ: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.files_differ and bool(self.files_same)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "identical": self.identical,
            "inputs_differ": self.inputs_differ,
            "files_same": self.files_same,
            "files_differ": self.files_differ,
            "first_differing_packet": self.first_packet,
            "metrics_same": self.metrics_same,
            "metrics_differ": self.metrics_differ,
        }


def sim_meta(dataset: Path, run_id: str) -> dict[str, Any]:
    """The run's meta.json from the dataset; refused in one line unless it ran on sim."""
    check_name(run_id, dataset, "run")
    path = dataset / "meta" / f"{run_id}.json"
    if not path.is_file():
        raise ConfigError(f"{dataset}: no run {run_id} (meta/{run_id}.json is not there)")
    meta = read_json_object(path, "meta.json")
    backend = (meta.get("testbed") or {}).get("backend")
    if backend != "sim":
        raise ConfigError(
            f"{path}: run {run_id} ran on the {backend} testbed, in real time: only sim runs "
            "are a function of their inputs (run its run file again and compare the metrics "
            "with `cganalysis compare`)"
        )
    return meta


def campaign_file(root: Path, meta: dict[str, Any], where: str) -> tuple[Path, str]:
    """The campaign file and run id meta.json's ``config.source`` names, inside ``root``."""
    source = str((meta.get("config") or {}).get("source") or "")
    m = SOURCE.fullmatch(source)
    if m is None or ".." in Path(m["file"]).parts:
        raise ConfigError(
            f"{where}: key config.source: {source[:80]!r} is not 'configs/....yaml (run ID)': "
            "only runs of a campaign file in this repository can be made again"
        )
    path = root / m["file"]
    if not path.is_file():
        raise ConfigError(f"{where}: key config.source: {m['file']} is not in {root}")
    check_name(m["run"], where, "run")
    return path, m["run"]


def code_difference(meta: dict[str, Any]) -> list[str]:
    """The code: it is the recorded commit's (:mod:`.reprocode`), unless the run was made
    from a tree with changes that commit lacks."""
    git = (meta.get("controller") or {}).get("git") or {}
    if git.get("dirty"):
        return ["the code: the run was made from a tree with uncommitted changes"]
    return []


def compare_files(recorded: dict[str, Any], made: dict[str, Any], out: Outcome) -> None:
    """meta.json's ``files`` (name -> bytes, sha256) of the two runs, captures first."""
    names = sorted(set(recorded) | set(made), key=lambda n: (n not in CAPTURES, n))
    for name in names:
        a, b = recorded.get(name) or {}, made.get(name) or {}
        (out.files_same if a.get("sha256") == b.get("sha256") else out.files_differ).append(name)


def first_differing_packet(a: Path, b: Path) -> str | None:
    """The first record at which two pcap files differ (its index, time and length in
    each), or None when they are the same packets."""
    for i, (ra, rb) in enumerate(zip(_records(a), _records(b), strict=False)):
        if ra != rb:
            return f"packet {i}: {_describe(ra)} recorded, {_describe(rb)} here"
    na, nb = sum(1 for _ in _records(a)), sum(1 for _ in _records(b))
    return None if na == nb else f"{na} packets recorded, {nb} here (the first {min(na, nb)} agree)"


def _records(path: Path) -> Iterator[tuple[int, int, int, bytes]]:
    """(seconds, fraction, original length, bytes) per pcap record."""
    with path.open("rb") as fh:
        head = fh.read(24)
        order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        while len(rec := fh.read(16)) == 16:
            sec, frac, incl, orig = (
                int.from_bytes(rec[i : i + 4], "little" if order == "<" else "big")
                for i in (0, 4, 8, 12)
            )
            yield sec, frac, orig, fh.read(incl)


def _describe(rec: tuple[int, int, int, bytes]) -> str:
    return f"t={rec[0]}.{rec[1]:09d} {rec[2]} B"


def compare_metrics(recorded: dict[str, Any], made: dict[str, Any], out: Outcome) -> None:
    """Every number of the two metrics documents: how many agree, and those that do not
    (path, recorded, here), the largest relative differences first."""
    a, b = dict(_numbers(recorded)), dict(_numbers(made))
    differ = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x == y or (x is not None and y is not None and math.isnan(x) and math.isnan(y)):
            out.metrics_same += 1
        else:
            rel = abs((y or 0) - (x or 0)) / max(abs(x or 0), 1e-12)
            differ.append((rel, f"{key}: {x} recorded, {y} here"))
    out.metrics_differ = [line for _, line in sorted(differ, reverse=True)]


def _numbers(doc: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numbers(v, f"{prefix}[{i}]")
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield prefix, float(doc)


def analyse(run_dir: Path, work: Path) -> dict[str, Any]:
    """The new run's metrics document (packets, then metrics, as the workflow makes them)."""

    work.mkdir(parents=True, exist_ok=True)
    packets = work / "packets.parquet"
    subprocess.run(
        [
            sys.executable, "-m", "cganalysis.cli", "packets",
            str(run_dir / "ingress.pcap"), str(run_dir / "egress.pcap"),
            "-o", str(packets), "--flows", str(work / "flows.parquet"),
        ],
        check=True, capture_output=True,
    )  # fmt: skip
    files = RunFiles(packets, run_dir / "meta.json", work / "metrics.json", work / "ts.parquet")
    with (work / "metrics.log").open("w", encoding="utf-8") as log:
        metrics_of_runs([files], log)
    return read_json_object(work / "metrics.json", "metrics")


def report(out: Outcome) -> list[str]:
    lines = [f"{out.run_id}:"]
    lines += [f"  differs: {line}" for line in out.inputs_differ] or ["  inputs: as recorded"]
    if out.identical:
        lines.append(f"  bit for bit: {len(out.files_same)} files identical (captures included)")
        return lines
    lines.append(f"  files: {len(out.files_same)} identical, differ: {', '.join(out.files_differ)}")
    if out.first_packet:
        lines.append(f"  first difference: {out.first_packet}")
    lines.append(
        f"  metrics: {out.metrics_same} of {out.metrics_same + len(out.metrics_differ)} numbers "
        "identical" + (", largest differences:" if out.metrics_differ else "")
    )
    lines += [f"    {line}" for line in out.metrics_differ[:5]]
    return lines


def write_report(outcomes: list[Outcome], path: Path) -> None:
    write_json({"runs": [o.to_dict() for o in outcomes]}, path)


def calibration_given(meta: dict[str, Any]) -> bool:
    """Whether the run was given a calibration (its command line's ``--calibration``): the
    dataset keeps what it used under ``calibration/``. A run that calibrated itself, or
    skipped calibration (a trace-driven link, whose record is the reason), was given none."""
    argv = (meta.get("controller") or {}).get("argv") or []
    return "--calibration" in argv


@dataclass(frozen=True)
class Placement:
    """Where the run made again finds the dataset commit's own builds: bound over the
    installed files (``binds``: build, path; the guest sees what the recorded run's saw),
    or named by environment variables (``env``), with a note of why."""

    binds: list[tuple[Path, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    note: str | None = None


def place_builds(code: reprocode.CheckedOut, guest_path: str) -> Placement:
    """As root, each build is bound over the file this host's guest would run (``cga-cg``
    on its PATH, the installed random source); otherwise, or where there is no such file,
    the variables name the builds, which puts ``$CGA_CG_BIN`` in the guest's environment:
    its processes then differ from the recorded run's, so its packets may."""
    if not code.builds:
        return Placement()
    targets = {
        BINARY_NAME: shutil.which(BINARY_NAME, path=guest_path),
        reprocode.SIMRNG: str(SIMRNG) if SIMRNG.is_file() else None,
    }
    if os.geteuid() == 0 and all(targets.values()):
        return Placement(binds=[(code.builds[n], str(targets[n])) for n in code.builds])
    why = "not root" if os.geteuid() != 0 else f"no installed {BINARY_NAME} or random source"
    return Placement(
        env=code.env(),
        note=f"{why}: the commit's own builds run through {', '.join(sorted(code.env()))}, "
        "which the recorded run's guest did not have in its environment: expect other "
        "packets (as root they are shown where the installed ones are)",
    )


def current_sim(
    cfg: Any, repetition: int | None, meta: dict[str, Any], placed: Placement
) -> dict[str, Any]:
    """This host's side of ``testbed.sim`` for ``cfg``: the options and the identity a run
    would record, without running it (the dataset commit's own builds where they are
    ``placed``; the old code's host paths for a run made before the fixed ones)."""
    from cganalysis.testbed.sim.code import guest_code

    sim = load_options(cfg.testbed.path)
    kernel = find_sim_kernel(sim)
    env = {**guest_env(cfg), **placed.env}
    shown = {target: build for build, target in placed.binds}
    simrng = Path(placed.env.get(SIMRNG_ENV) or find_simrng())
    ident = identity(
        kernel.path, shown.get(str(simrng), simrng), guest_code(), env["PATH"], guest_builds(env)
    )
    cg = ident["programs"].get(BINARY_NAME)
    if cg is not None and cg["path"] in shown:
        cg["sha256"] = sha256_file(shown[cg["path"]])
    if not reprocode.canonical(meta):
        ident["interpreter"]["path"] = sys.executable
        ident["package_path"] = reprocode.venv_package()
    return {
        "seed": sim.seed + (repetition or 0),
        "start_utc": sim.start_utc,
        "memory_mb": sim.memory_mb,
        "userspace": sim.userspace,
        "identity": ident,
    }


def reproduce_run(
    root: Path,
    dataset: Path,
    run_id: str,
    out_dir: Path,
    progress: Callable[[str], None],
    cache: Path | None = None,
) -> Outcome:
    """Makes ``run_id`` of ``dataset`` again into ``out_dir/run_id`` with the code of the
    commit that made it (the repository at ``root``, extracted into ``cache``, default
    ``out_dir/.code``), and compares."""

    meta = sim_meta(dataset, run_id)
    where = str(dataset / "meta" / f"{run_id}.json")
    commit = reprocode.recorded_commit(meta, where)
    checked_out = reprocode.check_out(root, commit, cache or out_dir / ".code")
    code = checked_out.path
    path, rid = campaign_file(code, meta, where)
    planned = load_campaign(path, published=True).run(rid)
    cfg = planned.config
    placed = place_builds(checked_out, guest_env(cfg)["PATH"])
    outcome = Outcome(run_id)
    recorded_sim = (meta.get("testbed") or {}).get("sim") or {}
    outcome.inputs_differ = code_difference(meta) + differences(
        recorded_sim, current_sim(cfg, planned.repetition, meta, placed)
    )
    progress(f"{run_id}: the code of commit {commit[:12]} ({code})")
    for line in outcome.inputs_differ:
        progress(f"{run_id}: differs: {line}")
    if placed.note:
        progress(f"{run_id}: {placed.note}")
    campaign = str(meta.get("campaign") or "")
    check_name(campaign, where, "campaign")
    recorded_scale = float((meta.get("schedule_detail") or {}).get("time_scale") or 1.0)
    run_dir = (out_dir / run_id).absolute()
    argv = [
        "experiment", str(path.relative_to(code)), "--run", rid, "--campaign", campaign,
        "-o", str(run_dir), "--time-scale", repr(recorded_scale / cfg.schedule.time_scale),
    ]  # fmt: skip
    if calibration_given(meta):
        calibration = dataset / "calibration" / f"{run_id}.json"
        if not calibration.is_file():
            raise ConfigError(
                f"{where}: the run was given a calibration (controller.argv), and the dataset "
                f"has none for it ({calibration} is missing): it cannot be made again as it was"
            )
        argv += ["--calibration", str(calibration.absolute())]
    made_by = subprocess.run(
        reprocode.experiment_argv(code, argv, meta, placed.binds),
        cwd=code,
        env={**os.environ, **placed.env},
        check=False,
    )
    if made_by.returncode != 0:
        raise ConfigError(
            f"{run_id}: the dataset's code (commit {commit[:12]}) did not make the run "
            f"(status {made_by.returncode}; its output above)"
        )
    made = read_json_object(run_dir / "meta.json", "meta.json")
    compare_files(meta.get("files") or {}, made.get("files") or {}, outcome)
    if outcome.identical:
        return outcome
    raw = root / "data" / "raw" / campaign / run_id
    if set(CAPTURES) & set(outcome.files_differ) and (raw / "ingress.pcap").is_file():
        outcome.first_packet = first_differing_packet(
            raw / "ingress.pcap", run_dir / "ingress.pcap"
        )
    recorded_metrics = dataset / "metrics" / f"{run_id}.json"
    if recorded_metrics.is_file():
        new = analyse(run_dir, out_dir / f".{run_id}.analysis")
        compare_metrics(read_json_object(recorded_metrics, "metrics"), new, outcome)
    return outcome
