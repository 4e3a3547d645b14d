"""What every CG source is (:class:`CgSource`) and what starting one gives back
(:class:`Started`); the sources themselves are in sources.py (the registry) and
usersources.py (programs the user builds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.cg import rtp_cbr
from cganalysis.experiment.cgconfig import CgConfig
from cganalysis.testbed.shared.hosts import Host, Proc
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.validate import Section


@dataclass
class Started:
    procs: list[Proc]
    files: list[tuple[Host, str]]  # (host, path) to fetch into the run directory
    info: dict[str, Any] = field(default_factory=dict)  # for meta.json's cg_source


class CgSource:
    """A CG source; subclasses drive one. The defaults: no sender options, no flags."""

    name: str
    #: ``cg.sender_args`` are passed to its sender (else a run file giving them is refused).
    takes_sender_args = False
    #: The ``cg.encoder`` values it can run (cganalysis.cg.encoders); none: no encoder.
    encoders: tuple[str, ...] = ()
    #: ``cg.reference_controller`` can ask which SCReAM controller class its build runs.
    names_controller = False

    def check_config(self, cfg: CgConfig, sec: Section) -> None:
        """Refuses (``sec.error``: the file and key) a ``cg`` section this source cannot
        run, when the run file is read (``sender_args`` for a source that takes none is
        refused before, by the parser, which knows every source)."""
        if cfg.encoder is not None and cfg.encoder not in self.encoders:
            runs = f"runs only {', '.join(self.encoders)}" if self.encoders else "has no encoder"
            raise sec.error("encoder", f"{cfg.encoder!r}: source {self.name} {runs}")
        if cfg.reference_controller is not None and not self.names_controller:
            raise sec.error(
                "reference_controller", f"only with source: scream-reference, not {self.name}"
            )

    def check(self, host: Host, cfg: CgConfig) -> None:
        """Raises TestbedError naming what is missing, before anything is touched
        (``host``: this machine for netns, the router of an ssh testbed)."""

    def simulated_clock_refusal(self, cfg: CgConfig) -> tuple[str, str] | None:
        """Why it cannot run as ``cfg`` asks where the clock is simulated (a testbed type
        with ``simulated_clock``: it advances only when every process is idle), as (the
        ``cg`` key to name, the reason); None where it can. A loop that neither sleeps nor
        reads the clock stops such a clock; one that polls it crawls."""
        return None

    def program_env(self) -> dict[str, str]:
        """The environment that names this source's programs as found on this machine, for
        a guest whose PATH is the project's own (the sim testbed's kernel)."""
        return {}

    def start_receiver(self, topo: Topology, cfg: CgConfig) -> Started:
        raise NotImplementedError

    def start_sender(self, topo: Topology, cfg: CgConfig, duration_s: float) -> Started:
        raise NotImplementedError

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        """Flags for meta.json from the source's files in ``workdir`` after the run; fills
        ``info`` (meta.json's ``cg_source``) with what it read."""
        return []


def rtp_sender_path() -> Path:
    """The stand-in's source file, shipped in the package and staged on the sending host."""
    return Path(rtp_cbr.__file__)
