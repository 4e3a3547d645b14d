"""What a sender or receiver run is, and the ``cga-cg`` command line that makes it.

The options mirror ``cga-cg send --help`` / ``cga-cg receive --help``; values are checked
here so that a bad configuration fails before anything starts, naming the option.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cganalysis.errors import ConfigError

Cc = Literal["scream", "none", "tfrc", "gtfrc"]
EcnName = Literal["ect1", "ect0", "none"]
NumReports = Literal["count", "count-minus-one"]

CCS: tuple[Cc, ...] = ("scream", "none", "tfrc", "gtfrc")
ECNS: tuple[EcnName, ...] = ("ect1", "ect0", "none")
NUM_REPORTS: tuple[NumReports, ...] = ("count", "count-minus-one")


def parse_endpoint(text: str, what: str) -> tuple[str, int]:
    """``IP:PORT`` (IPv6 as ``[addr]:port``) -> (ip, port); raises naming ``what``."""
    host, sep, port_text = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        if not sep:
            raise ValueError
        ipaddress.ip_address(host)
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise ConfigError(
            f"{what} {text!r}: expected IP:PORT, e.g. 10.0.2.1:30002 or [fd00::1]:30002"
        ) from None
    return host, port


def _positive(name: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ConfigError(f"{name} {value}: must be greater than 0")


@dataclass(frozen=True)
class SendOptions:
    """One ``cga-cg send`` run. Rates in Mbit/s, times in seconds unless named ``_ms``."""

    dest: str
    log_dir: Path | None = None
    cc: Cc = "scream"
    #: None: ECT(1) for scream (L4S mode), not-ECT for the others.
    ecn: EcnName | None = None
    duration_s: float | None = None
    min_mbps: float = 0.5
    start_mbps: float = 10.0
    max_mbps: float = 30.0
    #: Constant rate of ``cc="none"`` (default: ``max_mbps``).
    rate_mbps: float | None = None
    gtfrc_target_mbps: float | None = None
    fps: float = 60.0
    frames: Path | None = None
    qdelay_target_ms: float | None = None
    num_reports: NumReports = "count"
    seed: int | None = None
    bind: str | None = None
    #: Further ``cga-cg send`` options, passed through verbatim.
    extra: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        parse_endpoint(self.dest, "destination")
        if self.bind is not None:
            parse_endpoint(self.bind, "--bind")
        if self.cc not in CCS:
            raise ConfigError(f"--cc {self.cc!r}: expected one of {', '.join(CCS)}")
        if self.ecn is not None and self.ecn not in ECNS:
            raise ConfigError(f"--ecn {self.ecn!r}: expected one of {', '.join(ECNS)}")
        if self.num_reports not in NUM_REPORTS:
            raise ConfigError(
                f"--num-reports {self.num_reports!r}: expected count or count-minus-one"
            )
        for name, value in self._quantities():
            _positive(name, value)
        if self.min_mbps > self.max_mbps:
            raise ConfigError(f"--min-mbps {self.min_mbps} is above --max-mbps {self.max_mbps}")
        if self.frames is not None and not Path(self.frames).is_file():
            raise ConfigError(f"--frames {self.frames}: no such file (a CSV of t_s,size_bytes)")

    def _quantities(self) -> tuple[tuple[str, float | None], ...]:
        """The options that are positive numbers (None: not given), as cga-cg names them."""
        return (
            ("--duration", self.duration_s),
            ("--min-mbps", self.min_mbps),
            ("--start-mbps", self.start_mbps),
            ("--max-mbps", self.max_mbps),
            ("--rate-mbps", self.rate_mbps),
            ("--gtfrc-target-mbps", self.gtfrc_target_mbps),
            ("--fps", self.fps),
            ("--qdelay-target-ms", self.qdelay_target_ms),
        )

    def argv(self, binary: Path, log_dir: Path | None = None) -> list[str]:
        """The command line; ``log_dir`` overrides where the binary writes its CSV logs."""
        out = [str(binary), "send", self.dest, "--cc", self.cc]
        opt: list[tuple[str, object | None]] = [
            ("--ecn", self.ecn),
            *self._quantities(),
            ("--frames", self.frames),
            ("--num-reports", self.num_reports),
            ("--seed", self.seed),
            ("--bind", self.bind),
            ("--log", log_dir if log_dir is not None else self.log_dir),
        ]
        for name, value in opt:
            if value is not None:
                out += [name, f"{value:g}" if isinstance(value, float) else str(value)]
        return [*out, *self.extra]


@dataclass(frozen=True)
class ReceiveOptions:
    """One ``cga-cg receive`` run."""

    listen: str
    log_dir: Path | None = None
    duration_s: float | None = None
    num_reports: NumReports = "count"
    extra: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        parse_endpoint(self.listen, "listen address")
        _positive("--duration", self.duration_s)
        if self.num_reports not in NUM_REPORTS:
            raise ConfigError(
                f"--num-reports {self.num_reports!r}: expected count or count-minus-one"
            )

    def argv(self, binary: Path, log_dir: Path | None = None) -> list[str]:
        out = [str(binary), "receive", self.listen, "--num-reports", self.num_reports]
        if self.duration_s is not None:
            out += ["--duration", f"{self.duration_s:g}"]
        d = log_dir if log_dir is not None else self.log_dir
        if d is not None:
            out += ["--log", str(d)]
        return [*out, *self.extra]
