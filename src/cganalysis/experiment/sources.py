"""CG traffic sources, looked up by name (``cg.source`` in a run file).

- ``rtp-cbr``: a constant-bitrate RTP/UDP **test stand-in** (``cganalysis/cg/rtp_cbr.py``,
  stdlib only, ECN settable) and a UDP sink on the client, so that no ICMP port
  unreachable flows back. For tests and smoke runs; it is not a CG system.
- ``cga-cg``: the project's CG generator (``cganalysis cg send|receive``: SCReAM v2, none,
  TFRC, gTFRC). ``cg.rate_mbit`` is the start bitrate, or the constant rate of ``cc: none``;
  gTFRC's guaranteed rate g is the encoder minimum ``cg.min_mbit`` (cga-cg's default).
- ``scream-reference``: Ericsson's SCReAM test programs (``cganalysis.cg.reference``),
  built by the user; SCReAM only, with the run's ECN, rates and duration.
- ``ecgp-proxy``: eCGP's SCReAM proxy (``cganalysis.cg.ecgp``), built by the user, fed by
  our game server (``cganalysis/cg/ecgp_game.py``: cga-cg's encoder model over RTP, the
  proxy's bitrate commands) and delivering to a UDP sink; its settings are compiled in.

A source starts its receiver before the traffic and its sender at the schedule's CG
start, for the CG duration; its files land in the run directory (``cg-*``). Each source is
one :class:`CgSource` class that owns what a run file may ask of it, what it needs on the
hosts, how it is driven and what its files say after the run; :data:`SOURCES` is the
registry (adding a source: docs/architecture.md); those the user builds are in usersources.py.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import BINARY_ENV
from cganalysis.cg.encoders import DEFAULT_ENCODER, ENCODERS
from cganalysis.cg.udpsink import UDP_SINK
from cganalysis.experiment.cgcheck import pacing_flags
from cganalysis.experiment.cgconfig import ECN_CODEPOINTS, CgConfig
from cganalysis.experiment.cgsource import CgSource, Started, rtp_sender_path
from cganalysis.experiment.usersources import EcgpProxy, ScreamReference
from cganalysis.testbed.measure.probe import which
from cganalysis.testbed.shared.hosts import Host, TestbedError, wait_for_text
from cganalysis.testbed.shared.topology import Topology


class RtpCbr(CgSource):
    name = "rtp-cbr"

    def check(self, host: Host, cfg: CgConfig) -> None:
        if which(host, "python3") is None:
            raise TestbedError(f"cg.source rtp-cbr: python3 not found on {host.name}")

    def start_receiver(self, topo: Topology, cfg: CgConfig) -> Started:
        c = topo.client
        out, log = c.path("cg-receiver.json"), c.path("cg-receiver.log")
        proc = c.spawn(
            "CG sink",
            ["python3", "-c", UDP_SINK, topo.client_ip, str(cfg.port)],
            stdout=out,
            stderr=log,
        )
        wait_for_text(c, log, "sink: ready", proc, timeout_s=10.0)
        return Started([proc], [(c, out), (c, log)])

    def start_sender(self, topo: Topology, cfg: CgConfig, duration_s: float) -> Started:
        s = topo.server
        out, log = s.path("cg-sender.json"), s.path("cg-sender.log")
        argv = [
            "python3",
            s.stage(rtp_sender_path()),
            topo.client_ip,
            str(cfg.port),
            f"{cfg.rate_mbit:g}",
            f"{duration_s:.3f}",
            "--ssrc",
            f"{cfg.ssrc:#x}",
            "--fps",
            f"{cfg.fps:g}",
            "--ecn",
            str(ECN_CODEPOINTS[cfg.ecn]),
            "--sport",
            str(cfg.sport),
        ]
        return Started(
            [s.spawn("CG sender (rtp-cbr)", argv, stdout=out, stderr=log)], [(s, out), (s, log)]
        )


class CgaCg(CgSource):
    """``cganalysis cg send|receive`` (issue 5); the command line is the issue's."""

    name = "cga-cg"
    takes_sender_args = True
    encoders = tuple(ENCODERS)

    @staticmethod
    def _exe(host: Host) -> list[str]:
        # In a namespace the controller's own interpreter runs it; a remote host needs it
        # installed (bash scripts/install.sh).
        return ["cganalysis"] if host.remote else [sys.executable, "-m", "cganalysis.cli"]

    def check(self, host: Host, cfg: CgConfig) -> None:
        if host.remote:
            if host.run(["cganalysis", "cg", "--help"], check=False).returncode != 0:
                raise TestbedError(
                    f"cg.source cga-cg: `cganalysis cg` does not run on {host.name}; install "
                    "cganalysis there (bash scripts/install.sh)"
                )
            return
        if importlib.util.find_spec("cganalysis.commands.cg") is None:
            raise TestbedError(
                "cg.source cga-cg: `cganalysis cg` is not available yet (the CG traffic "
                "generator issue); use cg.source: rtp-cbr (a test stand-in) meanwhile"
            )

    def program_env(self) -> dict[str, str]:
        return {BINARY_ENV: os.environ[BINARY_ENV]} if os.environ.get(BINARY_ENV) else {}

    def simulated_clock_refusal(self, cfg: CgConfig) -> tuple[str, str] | None:
        """``--spin-us`` busy-waits on the clock before each packet: where each clock read
        advances a simulated clock 256 ns, the run crawls (about 100 wall seconds per
        simulated second) for nothing, since that clock wakes a sleeper on time."""
        args = list(cfg.sender_args)
        if "--spin-us" not in args:
            return None
        i = args.index("--spin-us")
        value = args[i + 1] if i + 1 < len(args) else "0"
        if value in ("0", "0.0"):
            return None
        return (
            "sender_args",
            f"--spin-us {value} busy-waits on the clock, which on simulated time crawls; "
            "drop it (a sleeper wakes on time there)",
        )

    def start_receiver(self, topo: Topology, cfg: CgConfig) -> Started:
        c = topo.client
        log_dir = c.path("cg-receiver")
        argv = [*self._exe(c), "cg", "receive", f"{topo.client_ip}:{cfg.port}", "--log", log_dir]
        proc = c.spawn("CG receiver (cga-cg)", argv, stdout=None, stderr=log_dir + ".log")
        return Started([proc], [(c, log_dir), (c, log_dir + ".log")])

    @staticmethod
    def send_options(
        cfg: CgConfig, dest: str, bind: str, duration_s: float, log_dir: str
    ) -> list[str]:
        """`cganalysis cg send` words after the executable."""
        ecn = {"ect1": "ect1", "ect0": "ect0", "none": "none"}[cfg.ecn]
        argv = [
            "cg",
            "send",
            dest,
            "--cc",
            cfg.cc,
            "--ecn",
            ecn,
            "--duration",
            f"{duration_s:.3f}",
            "--log",
            log_dir,
            "--bind",
            bind,
        ]
        # `none` sends at a constant rate (TMA 2024 Table I's "No CCA" at 30 Mbit/s); the
        # others start at rate_mbit and adapt between min and max.
        argv += ["--rate-mbps" if cfg.cc == "none" else "--start-mbps", f"{cfg.rate_mbit:g}"]
        if cfg.min_mbit is not None:
            argv += ["--min-mbps", f"{cfg.min_mbit:g}"]
        if cfg.max_mbit is not None:
            argv += ["--max-mbps", f"{cfg.max_mbit:g}"]
        # The encoder's options first: sender_args may still override one of them.
        extra = [*ENCODERS[cfg.encoder].cga_cg_args(), *cfg.sender_args] if cfg.encoder else []
        if extra or cfg.sender_args:
            argv.append("--cga-cg-args=" + shlex.join(extra or cfg.sender_args))
        return argv

    def start_sender(self, topo: Topology, cfg: CgConfig, duration_s: float) -> Started:
        s = topo.server
        log_dir = s.path("cg-sender")
        argv = [
            *self._exe(s),
            *self.send_options(
                cfg,
                f"{topo.client_ip}:{cfg.port}",
                f"{topo.server_ip}:{cfg.sport}",
                duration_s,
                log_dir,
            ),
        ]
        proc = s.spawn("CG sender (cga-cg)", argv, stdout=None, stderr=log_dir + ".log")
        encoder = ENCODERS[cfg.encoder or DEFAULT_ENCODER].to_dict()
        return Started([proc], [(s, log_dir), (s, log_dir + ".log")], {"encoder": encoder})

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        return pacing_flags(info, workdir / "cg-sender" / "sender_summary.json")


SOURCES: dict[str, CgSource] = {
    "rtp-cbr": RtpCbr(),
    "cga-cg": CgaCg(),
    "scream-reference": ScreamReference(),
    "ecgp-proxy": EcgpProxy(),
}

__all__ = ["SOURCES", "CgSource", "Started", "rtp_sender_path"]
