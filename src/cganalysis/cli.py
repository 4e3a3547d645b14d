"""The ``cganalysis`` command line: one subcommand per module in :mod:`cganalysis.commands`.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``; this file
only wires them together and turns :class:`~cganalysis.errors.CganalysisError` into a
one-line message and exit status 2, so that every bad input ends the same way.

Only the module of the command that runs is imported: the others bring polars, numpy or
matplotlib, which take longer to import than most commands take to parse their arguments
(``cganalysis --help`` imports none of them). The one-line help of each command is
therefore listed here; a test checks it against the command's own parser.
"""

from __future__ import annotations

import importlib
import os
import sys

from cganalysis import __version__

# Not `typing.TYPE_CHECKING`; argparse and the errors (pathlib) are imported when used:
# `cganalysis packets` starts reading its captures before them (see `main`).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

#: Subcommands, in the order ``--help`` lists them, with their one-line help.
COMMANDS: dict[str, str] = {
    "packets": "match ingress and egress captures into a per-packet delay/loss/ECN table",
    "inspect": "describe one capture: link type, packets, duration, flows and rates",
    "metrics": "queuing delay, bitrate, loss, utilisation, fairness and response of one run",
    "tables": "TMA 2024 Tables I-II and Xu & Claypool Tables 2-6 from metrics files",
    "figures": "TMA 2024 Figs. 4, 6-11, a run's time series, Xu & Claypool Figs. 3-5 (PDF, PNG)",
    "testbed": "probe the host, check or render a run's bottleneck, calibrate, clean up",
    "experiment": (
        "run one experiment (testbed, bottleneck, captures, traffic) into a run directory"
    ),
    "cg": "CG traffic generator: RTP video with SCReAM v2, constant rate, TFRC or gTFRC",
    "dataset": "export a campaign as a publication dataset (parquet, metrics, datasheet)",
    "compare": "a new run or campaign against a reference dataset, cell by cell, with its spread",
    "trace": "cellular link traces (mahimahi format): generate from the model, statistics, find",
}


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top-level
    options, ``-h`` and ``--version``, take no value)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None, *, all_commands: bool = True) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's module is imported and the others are
    listed by name and help (enough for ``--help`` and for an unknown command's error)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="cganalysis",
        description="Cloud-gaming traffic experiments and analysis: captures to paper figures.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name == only or (only is None and all_commands):
            importlib.import_module(f"cganalysis.commands.{name}").add_parser(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    as_program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["packets"]:
        return _main(argv, as_program)
    # The captures start to be read before the rest of the command line is imported and
    # parsed (cganalysis.matching.early): 10 ms sooner, of a few tenths of a second.
    from cganalysis.matching import early

    early.start_early(argv[1:])
    try:
        return _main(argv, as_program)
    finally:
        early.discard_early()


#: Commands that only read and write files: none needs root (docs/security.md).
ANALYSIS_COMMANDS = ("packets", "inspect", "metrics", "tables", "figures", "dataset", "compare",
                     "trace")  # fmt: skip
#: Set once the root note was given (the workflow gives it once for all its jobs).
ROOT_NOTED = "CGA_ROOT_NOTED"


def note_root(what: str) -> None:
    """Says, once, that ``what`` needs no root: parsing shared captures, YAML and plots as
    root gives whoever wrote them a way in (docs/security.md)."""
    if os.geteuid() == 0 and not os.environ.get(ROOT_NOTED):
        print(
            f"{what}: note: running as root, which the analysis does not need; run it as an "
            "ordinary user (docs/security.md)",
            file=sys.stderr,
        )
        os.environ[ROOT_NOTED] = "1"


def _main(argv: list[str], as_program: bool) -> int:
    from cganalysis.errors import CganalysisError

    parser = build_parser(_command_in(argv), all_commands=False)
    args = parser.parse_args(argv)
    if args.command in ANALYSIS_COMMANDS:
        note_root(f"cganalysis {args.command}")
    # A command may re-execute itself with these words (experiment: in a user namespace).
    args.program_argv = list(argv) if as_program else None
    try:
        status: int = args.run(args)
    except CganalysisError as err:
        print(f"cganalysis {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"cganalysis {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`| head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115, PTH123
        return 141
    if as_program and getattr(args, "exit_at_once", False):
        _exit_at_once(status)
    return status


def _exit_at_once(status: int) -> None:
    """Ends the process without the interpreter's teardown, for a command whose outputs are
    all written and closed: the teardown frees, object by object and module by module,
    what the kernel frees at once at exit (a few milliseconds of a command that takes a
    few tenths of a second). Only as a program: a caller of :func:`main` keeps running."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
