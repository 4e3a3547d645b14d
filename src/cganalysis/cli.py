"""The ``cganalysis`` command line: one subcommand per module in :mod:`cganalysis.commands`.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``; this file
only wires them together and turns :class:`~cganalysis.errors.CganalysisError` into a
one-line message and exit status 2, so that every bad input ends the same way.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from cganalysis import __version__
from cganalysis.errors import CganalysisError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "packets",
    "inspect",
    "metrics",
    "tables",
    "figures",
    "testbed",
    "experiment",
    "cg",
    "dataset",
)


def _command_modules() -> list[ModuleType]:
    return [importlib.import_module(f"cganalysis.commands.{name}") for name in COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cganalysis",
        description="Cloud-gaming traffic experiments and analysis: captures to paper figures.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
