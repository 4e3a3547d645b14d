"""A run's ``cg`` section as a value: which CG source (by name, the registry
:data:`cganalysis.experiment.sources.SOURCES`) and its settings. Apart from the run file's
parser (config.py) so that the sources, which take it, and the parser, which asks the
sources to check it, do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ECN_CODEPOINTS = {"none": 0, "ect1": 1, "ect0": 2}


@dataclass(frozen=True)
class CgConfig:
    """The CG stream: a source (by name, see sources.py) and its settings."""

    source: str = "rtp-cbr"
    port: int = 30002  # destination UDP port on the client (the role rule's port)
    sport: int = 30001
    rate_mbit: float = 10.0  # constant rate (rtp-cbr; cga-cg --cc none); start rate otherwise
    fps: float = 60.0
    ecn: str = "ect1"
    cc: str = "scream"  # cga-cg's rate controller
    min_mbit: float | None = None
    max_mbit: float | None = None
    ssrc: int = 0x1234ABCD
    #: Further sender options (cga-cg: `cga-cg send`'s, e.g. ["--l4s-alpha-gain", "0.0625"];
    #: scream-reference: scream_bw_test_tx's, e.g. ["-key", "2", "4"]).
    sender_args: tuple[str, ...] = ()
    #: The encoder behind the sender, a name of cganalysis.cg.encoders.ENCODERS (None: the
    #: source's own: cga-cg's and our game server's model, Ericsson's constant frames).
    encoder: str | None = None
    #: scream-reference: the controller class its build must run (``v1`` / ``v2``; None: any).
    reference_controller: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["sender_args"] = list(self.sender_args)
        if self.reference_controller is None:
            # only when set: the resolved configuration of every earlier run stays as it was
            del out["reference_controller"]
        return out
