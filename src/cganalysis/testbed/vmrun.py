"""Host side of a ``vm`` run: boot the guest, hand it the run, relay its progress.

``runner.run_experiment`` / ``run_calibration`` come here for ``testbed: vm`` (outside the
guest): the guest runs the very same functions on its ``netns`` testbed and writes the run
directory straight into the host's folder (shared writable), so a vm run directory is an
ordinary one; its meta.json says ``testbed.backend: vm`` with the VM's facts (KVM or TCG,
guest kernel, QEMU). The host holds the ``vm`` testbed lock for the whole run.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cganalysis.errors import ConfigError
from cganalysis.testbed.hosts import Proc, Result, TestbedError
from cganalysis.testbed.vm import Guest, load_options

if TYPE_CHECKING:
    from cganalysis.experiment.config import RunConfig
    from cganalysis.experiment.runner import RunOptions


def run_in_guest(mode: str, cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """``mode``: experiment or calibration. Returns meta.json (or calibration.json)."""
    from cganalysis.experiment import rundir
    from cganalysis.experiment.runner import signals_ignored, signals_raise
    from cganalysis.testbed.lock import lock_name, testbed_lock

    out = out.resolve()
    rundir.check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    vm_opts = load_options(cfg.testbed.path)
    plain = {f.name: getattr(opts, f.name) for f in fields(opts) if f.name != "progress"}
    job = {"mode": mode, "pickle": "job.pkl"}
    what = opts.run_id if mode == "experiment" else f"calibration of {opts.run_id}"
    with signals_raise(), testbed_lock(lock_name("vm", cfg.testbed.path), what, opts.progress):
        guest = Guest(job, vm_opts, [out.parent], opts.progress)
        try:
            with (guest.ctl / "job.pkl").open("wb") as fh:
                pickle.dump((cfg, out, plain), fh)
            guest.start()
            opts.progress(
                f"vm: guest {guest.info['guest'].get('kernel', guest.version)} up in "
                f"{guest.info['boot_s']:g} s ({guest.info['accel']})"
            )
            result = guest.wait_job()
        finally:
            with signals_ignored():
                guest.stop()
    if not result.get("ok"):
        err = f"in the vm guest: {result.get('error')}"
        raise ConfigError(err) if result.get("kind") == "config" else TestbedError(err)
    name = "meta.json" if mode == "experiment" else "calibration.json"
    data: dict[str, Any] = json.loads((out / name).read_text(encoding="utf-8"))
    return data


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
    """``python -m cganalysis.testbed.vmrun --probe``: boot once, print what the guest has."""
    ap = argparse.ArgumentParser(prog="cganalysis.testbed.vmrun")
    ap.add_argument("--probe", action="store_true", help="boot the guest and probe its qdiscs")
    ap.add_argument("--testbed", type=Path, default=None, help="a vm testbed file")
    args = ap.parse_args(argv)
    from cganalysis.errors import CganalysisError
    from cganalysis.testbed.probe import probe_qdiscs

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
