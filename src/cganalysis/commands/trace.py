"""``cganalysis trace generate|stats|find``: the project's cellular traces (mahimahi format).

``generate`` writes a trace of the project's capacity model (:mod:`cganalysis.traces.model`)
and prints its statistics next to what the model says; ``stats`` prints the statistics of
any mahimahi trace; ``find`` says where a trace name resolves (the search path of
:mod:`cganalysis.traces.find`). Details: docs/testbed.md, Trace-driven links.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.errors import ConfigError
from cganalysis.metrics.io import read_trace
from cganalysis.traces.find import find_trace, search_path
from cganalysis.traces.generate import TraceRecipe, generate_to
from cganalysis.traces.mahimahi import trace_stats
from cganalysis.traces.model import DIRECTIONS, MODELS, stationary

HELP = COMMANDS["trace"]


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("trace", help=HELP, description=HELP + ".")
    t_sub = p.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")
    g = t_sub.add_parser(
        "generate",
        help="write a trace of the project's capacity model (seeded, deterministic)",
        description=(
            "Write a mahimahi trace of the project's Markov-modulated capacity model and "
            "print its statistics against the model's. OUT may be a folder: the trace is "
            "then named cga-MODEL-sSEED-DURATIONs.DIRECTION, the name run files use."
        ),
    )

    g.add_argument("out", type=Path, metavar="OUT", help="file or folder to write")
    g.add_argument("--model", choices=sorted(MODELS), default="lte")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--duration-s", type=int, default=300, help="length (default 300 s)")
    g.add_argument("--direction", choices=DIRECTIONS, default="down")
    s = t_sub.add_parser("stats", help="mean rate, per-second percentiles and outages")
    s.add_argument("trace", type=Path)
    f = t_sub.add_parser("find", help="where a trace name resolves (the search path)")
    f.add_argument("name")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.trace_command == "generate":
        return _generate(args)
    if args.trace_command == "stats":
        for line in trace_stats(read_trace(args.trace)).lines():
            print(line)
        return 0

    for d in search_path(Path.cwd()):
        print(f"search path: {d}")
    print(find_trace(args.name, Path.cwd(), where="trace"))
    return 0


def _generate(args: argparse.Namespace) -> int:
    try:
        recipe = TraceRecipe(args.model, args.seed, args.duration_s, args.direction)
    except ValueError as err:
        raise ConfigError(f"trace generate: {err}") from None
    out: Path = args.out / recipe.name if args.out.is_dir() else args.out
    generate_to(recipe, out)
    model = MODELS[recipe.model]
    st = stationary(model, recipe.direction)
    print(f"wrote {out}: {model.description}, {recipe.direction}link, seed {recipe.seed}")
    for line in trace_stats(read_trace(out)).lines():
        print(line)
    frac = ", ".join(f"{k} {100 * v:.1f} %" for k, v in st.time_fraction.items())
    print(
        f"model (long run): mean rate {st.mean_rate_mbps:.3f} Mbit/s, outage "
        f"{100 * st.outage_fraction:.2f} % of the time; time in states: {frac}"
    )
    return 0
