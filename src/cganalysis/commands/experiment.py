"""``cganalysis experiment RUN.yaml -o DIR``: run one experiment into a new run directory."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import is_campaign, load_campaign
from cganalysis.experiment.config import load_run
from cganalysis.experiment.plan import RunOptions
from cganalysis.experiment.pool import on_a_free_testbed, parse_pool
from cganalysis.experiment.runner import run_experiment


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "experiment",
        help=COMMANDS["experiment"],
        description=(
            "Run one experiment: bring the testbed up (network namespaces by default), install "
            "and verify the bottleneck, calibrate it, capture both sides of it while the CG "
            "stream and iperf3 follow the schedule, then tear everything down. DIR receives "
            "ingress.pcap, egress.pcap (+ .log), iperf3 JSON, CG logs, qdisc-stats.jsonl and "
            "meta.json; it is built beside DIR and renamed into place only when the run "
            "succeeded, and an existing DIR is never overwritten. Not root, a netns run runs in a "
            "user namespace of its own (docs/testbed.md)."
        ),
    )
    p.add_argument("config", type=Path, help="a run file (configs/runs/*.yaml) or a campaign")
    p.add_argument("-o", "--output", type=Path, required=True, help="the run directory to create")
    # dest must not be "run": the CLI dispatches on args.run.
    p.add_argument(
        "--run", dest="campaign_run", metavar="RUN_ID", help="with a campaign file: which run"
    )
    p.add_argument("--run-id", help="run id for a run file (default: DIR's name)")
    p.add_argument("--campaign", help="campaign name written in meta.json")
    p.add_argument("--repetition", type=int, help="repetition number written in meta.json")
    p.add_argument("--time-scale", type=float, default=1.0, help="multiply schedule times by this")
    p.add_argument(
        "--max-duration-s",
        type=float,
        help="scale the schedule down (never up) to last at most this long (quick runs)",
    )
    p.add_argument(
        "--calibration", type=Path, help="use this calibration (cganalysis testbed calibrate)"
    )
    p.add_argument(
        "--testbed",
        action="append",
        default=[],
        metavar="TESTBED",
        help="run on this testbed (netns, vm or a testbed file) instead of the run file's; "
        "given more than once, a pool: the run takes the first free one",
    )
    p.add_argument("--keep-failed", action="store_true", help="keep a failed run's files")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=run)


def _say(quiet: bool) -> Any:
    def say(text: str) -> None:
        if not quiet:
            print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    return say


def run(args: argparse.Namespace) -> int:
    out: Path = args.output
    opts = RunOptions(
        run_id=args.run_id or out.name,
        campaign=args.campaign,
        repetition=args.repetition,
        time_scale=args.time_scale,
        max_duration_s=args.max_duration_s,
        calibration_file=args.calibration,
        keep_failed=args.keep_failed,
        progress=_say(args.quiet),
    )
    if is_campaign(args.config):
        if not args.campaign_run:
            raise ConfigError(f"{args.config} is a campaign: say which run with --run RUN_ID")
        planned = load_campaign(args.config).run(args.campaign_run)
        cfg = planned.config
        opts.run_id = planned.run_id
        opts.campaign = args.campaign or planned.campaign
        opts.repetition = planned.repetition
    else:
        cfg = load_run(args.config)
    if not 0 < args.time_scale <= 10:
        raise ConfigError(f"--time-scale {args.time_scale}: expected a factor in (0, 10]")
    pool = parse_pool(args.testbed)
    from cganalysis.testbed.netns import userns

    userns.enter([r.kind for r in pool or (cfg.testbed,)], args.program_argv)
    with on_a_free_testbed(cfg, pool, opts.run_id, opts.progress) as on_testbed:
        run_experiment(on_testbed, out, opts)
    return 0
