"""``cganalysis testbed probe|check|render|calibrate|clean``: the testbed without a run."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import is_campaign, load_campaign
from cganalysis.experiment.config import load_run
from cganalysis.experiment.plan import RunOptions, check
from cganalysis.experiment.pool import on_a_free_testbed, parse_pool
from cganalysis.experiment.runner import run_calibration
from cganalysis.testbed.bedfile import load_testbed_file
from cganalysis.testbed.clean import clean
from cganalysis.testbed.dataplane.planes import MAHIMAHI, chosen
from cganalysis.testbed.dataplane.resolve import emulator_only
from cganalysis.testbed.measure.probe import format_report, probe
from cganalysis.testbed.rendering import emuconf
from cganalysis.testbed.rendering.mahimahi import link_of, render_for_docs
from cganalysis.testbed.rendering.render import as_text, render_direction, render_netem
from cganalysis.testbed.shared.hosts import NetnsHost
from cganalysis.testbed.types import TESTBED_TYPES
from cganalysis.testbed.uml.boot import verdicts


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "testbed",
        help=COMMANDS["testbed"],
        description="The testbed on its own: what the host offers, what a run would install, "
        "calibration of a bottleneck, and removal of anything a killed run left behind.",
    )
    tsub = p.add_subparsers(dest="testbed_command", required=True, metavar="ACTION")

    pr = tsub.add_parser(
        "probe",
        help="qdiscs the kernel accepts, TCP congestion controls, iproute2 and tool versions",
        description="Reports what this host (or an ssh testbed's router) offers. Each qdisc "
        "is tried on a veth in a scratch namespace (an ordinary user's: in a user namespace "
        "of theirs, as their runs are); nothing else is touched.",
    )
    pr.add_argument("--json", action="store_true", help="print JSON")
    pr.add_argument(
        "--testbed",
        type=Path,
        help="uml, vm, or a testbed file: probe its router (an ssh host, a UML kernel or a "
        "vm guest booted for it)",
    )
    pr.set_defaults(run=run_probe)

    ck = tsub.add_parser(
        "check",
        help="validate a run file and decide its data planes, without touching anything",
        description="Validates RUN.yaml and checks that this host can run it (tools, "
        "qdiscs, congestion control, delay); prints the decision. No traffic, no testbed.",
    )
    ck.add_argument("config", type=Path)
    ck.add_argument(
        "--run", dest="run_id", metavar="RUN_ID", help="which run, when CONFIG is a campaign file"
    )
    ck.set_defaults(run=run_check)

    rd = tsub.add_parser(
        "render",
        help="print the exact tc (or cga-emu / mm-*) commands a run's bottleneck would use",
    )
    rd.add_argument("config", type=Path)
    rd.add_argument(
        "--run", dest="run_id", metavar="RUN_ID", help="which run, when CONFIG is a campaign file"
    )
    rd.add_argument("--dev", default="rtr1", help="bottleneck interface name to render")
    rd.add_argument("--reverse-dev", default="rtr0", help="interface of the reverse direction")
    rd.set_defaults(run=run_render)

    cb = tsub.add_parser(
        "calibrate",
        help="measure what a run's bottleneck delivers (and the idle delay floor)",
        description="Brings the run's testbed up with its bottleneck, offers UDP above the "
        "configured rate, measures the delivered rate from the qdisc counter and the egress "
        "capture, and the idle delay floor; writes DIR/calibration.json (never overwrites).",
    )
    cb.add_argument("config", type=Path, help="a run file, or a campaign with --run")
    cb.add_argument("-o", "--output", type=Path, required=True, help="directory to create")
    cb.add_argument(
        "--run", dest="campaign_run", metavar="RUN_ID", help="with a campaign: which run"
    )
    cb.add_argument(
        "--testbed",
        action="append",
        default=[],
        metavar="TESTBED",
        help="calibrate on this testbed instead of the run file's; more than once: the "
        "first free one of a pool",
    )
    cb.set_defaults(run=run_calibrate)

    cl = tsub.add_parser(
        "clean",
        help="remove namespaces, processes and remote state left by killed runs",
        description="Removes what runs whose process is gone left behind: network "
        "namespaces named cgatb-<pid>-*, their processes, and (ssh testbeds) remote "
        "processes, qdiscs and work directories recorded in /run/cganalysis/testbeds; "
        "run by an ordinary user, the processes of their killed runs' user namespaces "
        "(recorded in their runtime folder).",
    )
    cl.add_argument("--all", action="store_true", help="also testbeds of live runs (careful)")
    cl.add_argument("-n", "--dry-run", action="store_true", help="only list")
    cl.set_defaults(run=run_clean)


def _load(path: Path, run_id: str | None) -> Any:
    if is_campaign(path):
        if not run_id:
            raise ConfigError(f"{path} is a campaign: say which run with --run RUN_ID")
        return load_campaign(path).run(run_id).config
    return load_run(path)


def run_probe(args: argparse.Namespace) -> int:
    if args.testbed:
        # A bare type name (`uml`) or a testbed file; its router is what is probed.
        bare = str(args.testbed) in TESTBED_TYPES and TESTBED_TYPES[str(args.testbed)].bare
        kind = str(args.testbed) if bare else load_testbed_file(args.testbed).backend
        t = TESTBED_TYPES[kind]
        with (t.router_probing or t.probing)(None if bare else args.testbed) as host:
            report = probe(host)
    else:
        # An ordinary user's answer is what their runs get: tried in a user namespace of
        # theirs (this command again, in one); the host's refusal of one is the note.
        tries = _is_root() or _in_user_namespace(args.program_argv)
        report = probe(NetnsHost("this host", None, Path("/")), with_qdiscs=tries)
        report.uml_kernels = verdicts()  # booted once per kernel and CPU, then cached
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        sys.stdout.write(format_report(report))
    return 0


def _is_root() -> bool:
    return os.geteuid() == 0


def _in_user_namespace(program_argv: list[str] | None) -> bool:
    """In a user namespace with the testbed's capabilities: there already, or this command
    again in one (does not return); False, with a note saying why, where the host or a
    library caller does not allow it."""
    from cganalysis.testbed.netns import userns
    from cganalysis.testbed.shared.hosts import TestbedError

    try:
        userns.enter(["netns"], program_argv)
    except TestbedError as err:
        print(f"note: qdiscs cannot be tried: {err}", file=sys.stderr)
        return False
    return userns.inside()


def run_check(args: argparse.Namespace) -> int:
    cfg = _load(args.config, args.run_id)
    p = check(cfg, RunOptions(run_id="check"))
    print(
        f"{args.config}: ok: bottleneck {p.resolution.bottleneck.name} "
        f"({p.resolution.reason}), "
        f"delay {p.resolution.delay}, schedule {p.schedule.duration_s:g} s, "
        f"{len(p.schedule.phases())} competitor step(s)"
    )
    return 0


def run_render(args: argparse.Namespace) -> int:
    cfg = _load(args.config, args.run_id)
    b = cfg.bottleneck
    if chosen(b.backend) is MAHIMAHI:
        # On the router, as the unprivileged user (docs/testbed.md, mahimahi).
        link = link_of(b, cfg.propagation)
        print("# mahimahi, on the router")
        print(shlex.join(render_for_docs(link, Path("RUN"))))
        return 0
    emu_only = emulator_only(b)
    if emu_only:
        # SQF, per-flow DRR and trace rates have no tc equivalent (docs/testbed.md).
        print(f"# kernel (tc): none; only cga-emu runs {'; '.join(emu_only)}")
    else:
        cmds = render_direction(args.dev, b.forward)
        if b.reverse is not None:
            cmds += render_direction(args.reverse_dev, b.reverse)
        print("# kernel (tc), on the router", end="\n")
        sys.stdout.write(as_text(cmds))
    if cfg.propagation.needed:
        p = cfg.propagation
        print("# propagation delay with netem (server and client interfaces)")
        sys.stdout.write(
            as_text([render_netem("srv0", p.forward_ms, p), render_netem("cli0", p.reverse_ms, p)])
        )
        print("# propagation delay with cga-emu (delay-only hop)")
        print(json.dumps(emuconf.delay_config("dly0", "dly1", p)))
    print("# emulator (cga-emu --config), on the router")
    print(
        json.dumps(
            emuconf.bottleneck_config(
                "rtr0", args.dev, b.forward, b.reverse, "emu-stats.jsonl", cfg.monitor.interval_ms
            )
        )
    )
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.testbed.netns import userns

    cfg = _load(args.config, args.campaign_run)
    pool = parse_pool(args.testbed)
    # Not root, on a netns testbed: in a user namespace of its own, as an experiment.
    userns.enter([r.kind for r in pool or (cfg.testbed,)], args.program_argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    opts = RunOptions(run_id="calibration", progress=say)
    with on_a_free_testbed(cfg, pool, "calibration", say) as on_testbed:
        calib = run_calibration(on_testbed, args.output, opts)
    keys = ("configured_mbps", "capacity_measured_mbps", "ratio", "shaper", "flags")
    print(json.dumps({k: calib.get(k) for k in keys}))
    return 0


def run_clean(args: argparse.Namespace) -> int:
    for line in clean(include_live=args.all, dry_run=args.dry_run):
        print(line)
    return 0
