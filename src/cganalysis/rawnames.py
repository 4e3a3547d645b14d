"""The names a raw run may have: its campaign's folder, its own folder, its captures.

Raw runs are shared between labs, and the workflow puts their names into command lines
run as root. Every name it takes from ``data/raw/`` therefore matches a plain grammar,
checked whole (``re.fullmatch``: ``$`` would let a trailing newline through): letters,
digits, ``.``, ``_`` and ``-``, never first a ``-`` (an option) or a ``.``. A name outside
it is refused with one line naming the path, never skipped quietly nor used.
"""

from __future__ import annotations

import re
from pathlib import Path

from cganalysis.errors import ConfigError

#: A campaign, a run id, a dataset: the workflow's wildcard constraint (a regex string).
NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
#: The two capture points of a run (ingress before the bottleneck, egress after it).
POINTS = ("ingress", "egress")
#: What the capture of ``point`` may be called: ``ingress.pcap``, ``ingress.pcapng`` or
#: ``ingress<suffix>.pcap[ng]`` (``ingress-rtr1.pcap``) with a suffix of NAME's letters.
_CAPTURE = r"{point}[A-Za-z0-9._-]*\.pcap(?:ng)?"
_CAPTURE_SUFFIXES = (".pcap", ".pcapng")


def check_name(name: str, path: Path | str, what: str) -> None:
    """Refuses ``name`` (of ``what`` at ``path``) unless it matches :data:`NAME`."""
    if not re.fullmatch(NAME, name):
        raise ConfigError(
            f"{str(path)!r}: not a usable {what} name {name!r} (it must be letters, digits, "
            "'.', '_' and '-', starting with a letter or digit); rename or remove it"
        )


def run_folders(campaign_dir: Path) -> list[Path]:
    """The run folders of a campaign, sorted. Folders starting with ``.`` (a run being
    made, or kept after failing: :mod:`cganalysis.experiment.rundir`) or ``_``
    (``_calibration``) are not runs; any other folder must have a usable name."""
    found = []
    for path in sorted(p for p in campaign_dir.iterdir() if p.is_dir()):
        if path.name.startswith((".", "_")):
            continue
        check_name(path.name, path, "run folder")
        found.append(path)
    return found


def find_capture(run_dir: Path, point: str) -> Path | None:
    """The run's capture for ``point``: ``<point>.pcap`` when there is one, else
    ``<point>.pcapng``, else the first ``<point><suffix>.pcap[ng]`` by name; None when
    there is none. Any file that would be a capture of ``point`` but whose name is
    outside the grammar is refused, even beside a proper one."""
    if not Path(run_dir).is_dir():
        return None
    pattern = _CAPTURE.format(point=re.escape(point))
    found = []
    for path in sorted(Path(run_dir).iterdir()):
        looks_like = path.name.startswith(point) and path.name.endswith(_CAPTURE_SUFFIXES)
        if not looks_like or not path.is_file():
            continue
        if not re.fullmatch(pattern, path.name):
            raise ConfigError(
                f"{str(path)!r}: not a usable capture name (it must be {point}.pcap, "
                f"{point}.pcapng or {point}<letters, digits, '.', '_', '-'>.pcap[ng]); "
                "rename or remove it"
            )
        found.append(path)
    for exact in (f"{point}.pcap", f"{point}.pcapng"):
        if any(p.name == exact for p in found):
            return Path(run_dir) / exact
    return found[0] if found else None
