"""Where a trace named in a run or campaign file is: a path, or a name on the search path.

A value with a ``/`` is a path relative to the naming file's folder that stays in it (plain
names, no ``..``, no absolute path, no symlink leading out: run files come from other
labs and are read as root). A bare name is looked up, first match wins, in:

1. the naming file's own folder;
2. each folder of ``$CGA_TRACES`` (``:``-separated; the user's own collection);
3. the repository's ``data/traces/`` (untracked: the nearest folder above the naming file,
   or the working directory, that has one);
4. mahimahi's installed traces, ``DIR/mahimahi/traces`` for each ``DIR`` of
   ``$XDG_DATA_DIRS`` (default ``/usr/local/share:/usr/share``, where ``make install``
   and the Debian/Ubuntu packages put them).

A name of the project's generator (``cga-lte-s1-300s.down``, :mod:`.generate`) that is
found nowhere is generated into the first folder of ``$CGA_TRACES``, else the repository's
``data/traces/``: the same name always gives the same trace, so making it on first use is
the same as finding it. Anything else found nowhere is one error naming every folder
looked in. A name found in a folder must stay in it once symlinks are resolved.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.traces.generate import TraceRecipe, generate_to

ENV = "CGA_TRACES"
#: A trace's file name, and each part of a relative trace path.
TRACE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
XDG_DEFAULT = "/usr/local/share:/usr/share"


def repo_traces(start: Path | None) -> Path | None:
    """The ``data/traces/`` of the repository holding ``start`` (or the working directory)."""
    for base in ([start] if start else []) + [Path.cwd()]:
        for d in [base, *base.resolve().parents]:
            if (d / "data" / "traces").is_dir() or (d / ".git").exists():
                return d / "data" / "traces"
    return None


def search_path(base_dir: Path | None) -> list[Path]:
    """The folders a bare trace name is looked up in, in order (docstring above)."""
    out: list[Path] = [base_dir.resolve()] if base_dir is not None else []
    out += [Path(p) for p in os.environ.get(ENV, "").split(":") if p]
    repo = repo_traces(base_dir)
    if repo is not None:
        out.append(repo)
    xdg = os.environ.get("XDG_DATA_DIRS") or XDG_DEFAULT
    out += [Path(p) / "mahimahi" / "traces" for p in xdg.split(":") if p]
    return list(dict.fromkeys(out))


def _inside(folder: Path, parts: list[str]) -> Path | None:
    """``folder/parts`` resolved, or None when symlinks lead it out of ``folder``."""
    top = folder.resolve()
    path = top.joinpath(*parts).resolve()
    return path if path.is_relative_to(top) else None


def generated_home(base_dir: Path | None) -> Path | None:
    first = [Path(p) for p in os.environ.get(ENV, "").split(":") if p]
    return first[0] if first else repo_traces(base_dir)


def find_trace(text: str, base_dir: Path | None, where: str = "trace") -> Path:
    """The trace file ``text`` names (resolved), generating a generator's name on first use;
    ConfigError (``where``: the key, for the message) when there is none."""
    parts = text.split("/")
    if not all(TRACE_NAME.fullmatch(p) for p in parts):
        raise ConfigError(
            f"{where}: {text[:80]!r}: give a trace's name (`cganalysis trace find`) or a "
            "relative path of plain names beside the run file (no absolute path, no ..)"
        )
    if len(parts) > 1:
        if base_dir is None:
            raise ConfigError(f"{where}: {text}: give a trace's name here")
        path = _inside(base_dir, parts)
        if path is None or not path.is_file():
            raise ConfigError(
                f"{where}: {text}: no such trace beside the run file ({base_dir.resolve()}; "
                "a symlink leading out of it does not count)"
            )
        return path
    folders = search_path(base_dir)
    for d in folders:
        found = _inside(d, parts)
        if found is not None and found.is_file():
            return found
    recipe = TraceRecipe.from_name(text)
    home = generated_home(base_dir)
    if recipe is not None and home is not None:
        return generate_to(recipe, home / text).resolve()
    looked = ", ".join(str(d) for d in folders) or "nowhere (no folder to look in)"
    if recipe is not None:
        raise ConfigError(
            f"{where}: trace {text} is a generated trace, but there is no folder to make it "
            f"in (looked in {looked}): set ${ENV} to one, or run from the repository"
        )
    raise ConfigError(
        f"{where}: trace {text} not found; looked in {looked}. Put the file in one of them "
        f"(or add its folder to ${ENV}), give a path, or name a generated trace such as "
        "cga-lte-s1-300s.down (`cganalysis trace generate --help`)"
    )
