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
registry (adding a source: docs/architecture.md).
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.cg import ecgp, ecgp_game, reference, rtp_cbr
from cganalysis.cg.udpsink import UDP_SINK
from cganalysis.experiment.cgcheck import ecgp_flags, pacing_flags, reference_flags
from cganalysis.experiment.cgconfig import ECN_CODEPOINTS, CgConfig
from cganalysis.testbed.backends.hosts import Host, Proc, TestbedError, wait_for_text
from cganalysis.testbed.backends.topology import Topology
from cganalysis.testbed.measure.probe import which
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

    def check_config(self, cfg: CgConfig, sec: Section) -> None:
        """Refuses (``sec.error``: the file and key) a ``cg`` section this source cannot
        run, when the run file is read."""
        if cfg.sender_args and not self.takes_sender_args:
            takers = " or ".join(n for n, s in SOURCES.items() if s.takes_sender_args)
            raise sec.error("sender_args", f"options of the CG sender: only with source: {takers}")

    def check(self, host: Host) -> None:
        """Raises TestbedError naming what is missing, before anything is touched
        (``host``: this machine for netns, the router of an ssh testbed)."""

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


class RtpCbr(CgSource):
    name = "rtp-cbr"

    def check(self, host: Host) -> None:
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

    @staticmethod
    def _exe(host: Host) -> list[str]:
        # In a namespace the controller's own interpreter runs it; a remote host needs it
        # installed (bash scripts/install.sh).
        return ["cganalysis"] if host.remote else [sys.executable, "-m", "cganalysis.cli"]

    def check(self, host: Host) -> None:
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
        if cfg.sender_args:
            argv.append("--cga-cg-args=" + shlex.join(cfg.sender_args))
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
        return Started([proc], [(s, log_dir), (s, log_dir + ".log")])

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        return pacing_flags(info, workdir / "cg-sender" / "sender_summary.json")


class ScreamReference(CgSource):
    """Ericsson's ``scream_bw_test_rx`` on the client, ``scream_bw_test_tx`` on the server
    (docs/cg.md). ``cg.sender_args`` are further options of their sender (e.g.
    ``[-key, "2", "4"]`` for periodic I-frames); ``cg.sport`` is unused (their sender sends
    from the receiver's port)."""

    name = "scream-reference"
    takes_sender_args = True

    def check_config(self, cfg: CgConfig, sec: Section) -> None:
        super().check_config(cfg, sec)
        if cfg.cc != "scream":
            raise sec.error("cc", f"{cfg.cc!r}: source {self.name} runs SCReAM only; drop cg.cc")

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        return reference_flags(info, workdir)

    def _programs(self, host: Host) -> tuple[str, str, dict[str, Any]]:
        if host.remote:
            # A remote host runs what its PATH holds (no checksum from here).
            return reference.TX_NAME, reference.RX_NAME, {"remote": host.name}
        ref = reference.find_reference()
        return str(ref.tx), str(ref.rx), ref.describe()

    def check(self, host: Host) -> None:
        if host.remote:
            for name in (reference.TX_NAME, reference.RX_NAME):
                if which(host, name) is None:
                    raise TestbedError(
                        f"cg.source scream-reference: {name} not found on {host.name}'s PATH "
                        "(build Ericsson's SCReAM there, docs/cg.md)"
                    )
            return
        reference.find_reference()

    def start_receiver(self, topo: Topology, cfg: CgConfig) -> Started:
        c = topo.client
        _, rx, info = self._programs(c)
        out = c.path("cg-reference-rx.log")
        argv = reference.receiver_argv(rx, sender_ip=topo.server_ip, port=cfg.port)
        proc = c.spawn("CG receiver (scream-reference)", argv, stdout=out, stderr=out)
        wait_for_text(c, out, "Listen on port", proc, timeout_s=10.0)
        return Started([proc], [(c, out)], {"name": self.name, **info})

    def start_sender(self, topo: Topology, cfg: CgConfig, duration_s: float) -> Started:
        s = topo.server
        tx, _, info = self._programs(s)
        log, out = s.path(reference.LOG_NAME), s.path("cg-reference-tx.out")
        argv = reference.sender_argv(
            tx,
            dest_ip=topo.client_ip,
            port=cfg.port,
            ecn=cfg.ecn,
            start_mbps=cfg.rate_mbit,
            min_mbps=cfg.min_mbit,
            max_mbps=cfg.max_mbit,
            fps=cfg.fps,
            duration_s=duration_s,
            log_path=log,
            extra=cfg.sender_args,
        )
        proc = s.spawn("CG sender (scream-reference)", argv, stdout=out, stderr=out)
        return Started(
            [proc],
            [(s, log), (s, out)],
            {"name": self.name, **info, "sender_argv": argv, "duration_s": duration_s},
        )


class EcgpProxy(CgSource):
    """eCGP's proxy client and a UDP sink on the client, our game server (which runs the
    proxy server as its child) on the server (docs/cg.md). The proxy client starts with the
    sender, once the proxy server is up: started earlier, its TCP connection to the server
    fails and it spins logging errors. ``cg.port`` is the proxies' port, ``cg.sport``
    unused."""

    name = "ecgp-proxy"

    def check_config(self, cfg: CgConfig, sec: Section) -> None:
        """The proxy has its SCReAM settings and ports compiled in: a run file may not ask
        for others (cganalysis.cg.ecgp)."""
        super().check_config(cfg, sec)
        fixed: list[tuple[str, object, object]] = [
            ("cc", cfg.cc, "scream"),
            ("ecn", cfg.ecn, ecgp.ECN),
            ("port", cfg.port, ecgp.VIDEO_PORT),
            ("rate_mbit", cfg.rate_mbit, ecgp.START_MBPS),
            ("min_mbit", ecgp.MIN_MBPS if cfg.min_mbit is None else cfg.min_mbit, ecgp.MIN_MBPS),
            ("max_mbit", ecgp.MAX_MBPS if cfg.max_mbit is None else cfg.max_mbit, ecgp.MAX_MBPS),
        ]
        for key, value, wanted in fixed:
            if value != wanted:
                raise sec.error(
                    key,
                    f"{value!r}: source ecgp-proxy has {wanted!r} compiled in; drop cg.{key} "
                    "(docs/cg.md)",
                )

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        return ecgp_flags(info, workdir)

    def _programs(self, host: Host) -> tuple[str, str, dict[str, Any]]:
        if host.remote:
            return ecgp.SERVER_NAME, ecgp.CLIENT_NAME, {"remote": host.name}
        proxy = ecgp.find_proxy()
        return str(proxy.server), str(proxy.client), proxy.describe()

    def check(self, host: Host) -> None:
        for tool in ("python3", "timeout"):
            if which(host, tool) is None:
                raise TestbedError(f"cg.source ecgp-proxy: {tool} not found on {host.name}")
        if host.remote:
            for name in (ecgp.SERVER_NAME, ecgp.CLIENT_NAME):
                if which(host, name) is None:
                    raise TestbedError(
                        f"cg.source ecgp-proxy: {name} not found on {host.name}'s PATH "
                        "(build eCGP's proxy there, docs/cg.md)"
                    )
            return
        ecgp.find_proxy()

    def start_receiver(self, topo: Topology, cfg: CgConfig) -> Started:
        c = topo.client
        out, log = c.path("cg-ecgp-sink.json"), c.path("cg-ecgp-sink.log")
        argv = ["python3", "-c", UDP_SINK, ecgp_game.GAME_IP, str(ecgp_game.VIDEO_RTP_PORT)]
        proc = c.spawn("CG game client (ecgp-proxy)", argv, stdout=out, stderr=log)
        wait_for_text(c, log, "sink: ready", proc, timeout_s=10.0)
        return Started([proc], [(c, out), (c, log)])

    def start_sender(self, topo: Topology, cfg: CgConfig, duration_s: float) -> Started:
        s, c = topo.server, topo.client
        server, _, info = self._programs(s)
        _, client, _ = self._programs(c)
        files = {n: s.path(n) for n in (ecgp.COMMANDS_NAME, ecgp.FRAMES_NAME)}
        plog, out, err = (
            s.path(ecgp.SERVER_LOG_NAME),
            s.path(ecgp.GAME_SUMMARY_NAME),
            s.path(ecgp.GAME_LOG_NAME),
        )
        s.stage(rtp_sender_path())  # the game server imports its packet builder
        proxy_argv = ecgp.server_argv(server, client_ip=topo.client_ip, server_ip=topo.server_ip)
        argv = ecgp.game_argv(
            s.stage(Path(ecgp_game.__file__)),
            duration_s=duration_s,
            fps=cfg.fps,
            ssrc=cfg.ssrc,
            commands=files[ecgp.COMMANDS_NAME],
            frames=files[ecgp.FRAMES_NAME],
            proxy_log=plog,
            proxy=proxy_argv,
        )
        game = s.spawn("CG game server (ecgp-proxy)", argv, stdout=out, stderr=err)
        wait_for_text(s, err, ecgp_game.CONNECTED, game, timeout_s=15.0)
        # The client ends by itself shortly after the server (which stops its proxy
        # ecgp_game.TAIL_S after the last frame): a client without its server spins.
        clog = c.path(ecgp.CLIENT_LOG_NAME)
        lifetime_s = duration_s + ecgp_game.TAIL_S + 2.0
        client_argv = ecgp.client_argv(client, server_ip=topo.server_ip, client_ip=topo.client_ip)
        proxy_client = c.spawn(
            "CG proxy client (ecgp-proxy)",
            ["timeout", "-s", "TERM", "-k", "2", f"{lifetime_s:.3f}", *client_argv],
            stdout=clog,
            stderr=clog,
        )
        return Started(
            [game, proxy_client],
            [*((s, p) for p in files.values()), (s, plog), (s, out), (s, err), (c, clog)],
            {
                "name": self.name,
                **info,
                "server_argv": proxy_argv,
                "client_argv": client_argv,
                "game_argv": argv,
                "duration_s": duration_s,
            },
        )


SOURCES: dict[str, CgSource] = {
    "rtp-cbr": RtpCbr(),
    "cga-cg": CgaCg(),
    "scream-reference": ScreamReference(),
    "ecgp-proxy": EcgpProxy(),
}
