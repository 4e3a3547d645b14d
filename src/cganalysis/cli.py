"""The ``cganalysis`` command line: one subcommand per module in :mod:`cganalysis.commands`.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``; this file
only wires them together and turns :class:`~cganalysis.errors.CganalysisError` into a
one-line message and exit status 2, so that every bad input ends the same way.

Only the module of the command that runs is imported: the others bring polars or
matplotlib, which ``cganalysis packets`` (a job a run) and ``cganalysis cg`` (on a testbed
host, before the CG flow starts) do without. The commands' one-line help is declared once,
in :data:`cganalysis.commands.COMMANDS`, for ``--help`` to list them all.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from cganalysis import __version__
from cganalysis.commands import COMMANDS
from cganalysis.errors import CganalysisError


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
    return status


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


if __name__ == "__main__":
    sys.exit(main())
