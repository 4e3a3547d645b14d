"""Host side of the ``vm`` testbed without a run: a guest serving commands
(:func:`serving`), a :class:`GuestHost` to probe its kernel, and ``python -m
cganalysis.testbed.vm.run --probe``. A whole run in the guest is
:mod:`cganalysis.experiment.inguest`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import Proc, Result, TestbedError
from cganalysis.testbed.vm.testbed import Guest, load_options


class GuestHost:
    """A :class:`Host` that runs commands in a serve-mode guest, in namespace ``ns`` if
    given (``testbed check``, the kernel-qdisc tests). Files and processes: not here."""

    remote = True

    def __init__(self, guest: Guest, ns: str | None = None) -> None:
        self.guest = guest
        self.ns = ns
        self.name = f"the vm guest ({guest.version})" + (f" netns {ns}" if ns else "")

    def run(self, argv: list[str], *, check: bool = True, timeout_s: float = 30.0) -> Result:
        full = ["ip", "netns", "exec", self.ns, *argv] if self.ns else argv
        res = self.guest.run(full, check=False, timeout_s=timeout_s)
        res = Result(argv, res.returncode, res.stdout, res.stderr)
        return res.check(self.name) if check else res

    def _no(self, what: str) -> TestbedError:
        return TestbedError(f"vm testbed: {what} is not available when probing the guest")

    def spawn(self, label: str, argv: list[str], stdout: str | None, stderr: str | None) -> Proc:
        raise self._no("spawn")

    def path(self, name: str) -> str:
        raise self._no("path")

    def read_text(self, path: str) -> str:
        return self.run(["cat", path], check=False).stdout

    def stage(self, local: Path) -> str:
        return str(local)  # the guest sees the host's file system

    def fetch(self, path: str, local: Path) -> None:
        raise self._no("fetch")

    def fetch_all(self, pairs: list[tuple[str, Path]]) -> None:
        raise self._no("fetch")


@contextmanager
def serving(
    path: Path | None = None, progress: Any = None, rwdirs: list[Path] | None = None
) -> Iterator[Guest]:
    """A booted guest in serve mode (commands through ``guest.run``), stopped on exit;
    ``rwdirs``: host folders the guest may write (the rest of the file system is read-only
    or a throw-away overlay there)."""
    with Guest({"mode": "serve"}, load_options(path), rwdirs, progress) as guest:
        yield guest


@contextmanager
def probing_vm(path: Path | None) -> Iterator[GuestHost]:
    with serving(path) as guest:
        yield GuestHost(guest)


def main(argv: list[str] | None = None) -> int:
    """``python -m cganalysis.testbed.vm.run --probe``: boot once, print what the
    guest has."""
    ap = argparse.ArgumentParser(prog="cganalysis.testbed.vm.run")
    ap.add_argument("--probe", action="store_true", help="boot the guest and probe its qdiscs")
    ap.add_argument("--testbed", type=Path, default=None, help="a vm testbed file")
    args = ap.parse_args(argv)
    from cganalysis.errors import CganalysisError
    from cganalysis.testbed.measure.probe import probe_qdiscs

    try:
        with serving(args.testbed, lambda m: print(m, file=sys.stderr)) as guest:
            host = GuestHost(guest)
            kinds = ["netem", "sfq", "fq_codel", "cake", "htb", "tbf", "pfifo", "dualpi2"]
            support = probe_qdiscs(host, kinds)
            have = [k for k in kinds if support[k][0]]
            lack = [k for k in kinds if not support[k][0]]
            print(
                f"guest kernel {guest.info['guest'].get('kernel')} ({guest.info['accel']}, "
                f"booted in {guest.info['boot_s']:g} s): qdiscs {' '.join(have)}"
                + (f"; lacks {' '.join(lack)}" if lack else "")
            )
    except CganalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
