"""CG sources whose programs the user builds (nothing of theirs is in this project):
Ericsson's SCReAM test programs (``scream-reference``) and eCGP's SCReAM proxy
(``ecgp-proxy``), docs/cg.md. Both are a pair of programs, found on this machine through
their environment variables or the PATH and on an ssh host through its PATH."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cganalysis.cg import ecgp, ecgp_game, reference
from cganalysis.cg.encoders import DEFAULT_ENCODER, ENCODERS
from cganalysis.cg.udpsink import UDP_SINK
from cganalysis.experiment.cgcheck import ecgp_flags, reference_flags
from cganalysis.experiment.cgconfig import CgConfig
from cganalysis.experiment.cgsource import CgSource, Started, rtp_sender_path
from cganalysis.testbed.measure.probe import which
from cganalysis.testbed.shared.hosts import Host, TestbedError, wait_for_text
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.validate import Section


class UserBuilt(CgSource):
    """A source made of two programs the user built (sender side first)."""

    names: tuple[str, str]
    envs: tuple[str, str]  # the environment variables that name them
    build: str  # what to build, for errors

    def locate(self) -> tuple[Path, Path]:
        """Both programs on this machine; raises with what to do when one is missing."""
        raise NotImplementedError

    def describe(self, first: Path, second: Path) -> dict[str, Any]:
        """For meta.json's cg_source: which build ran."""
        raise NotImplementedError

    def _programs(self, host: Host) -> tuple[str, str, dict[str, Any]]:
        if host.remote:
            # A remote host runs what its PATH holds (no checksum from here).
            return self.names[0], self.names[1], {"remote": host.name}
        first, second = self.locate()
        return str(first), str(second), self.describe(first, second)

    def check(self, host: Host, cfg: CgConfig) -> None:
        if not host.remote:
            self.locate()
            return
        for name in self.names:
            if which(host, name) is None:
                raise TestbedError(
                    f"cg.source {self.name}: {name} not found on {host.name}'s PATH "
                    f"(build {self.build} there, docs/cg.md)"
                )

    def program_env(self) -> dict[str, str]:
        return {env: str(path) for env, path in zip(self.envs, self.locate(), strict=True)}


class ScreamReference(UserBuilt):
    """Ericsson's ``scream_bw_test_rx`` on the client, ``scream_bw_test_tx`` on the server
    (docs/cg.md). ``cg.sender_args`` are further options of their sender (e.g.
    ``[-key, "2", "4"]`` for periodic I-frames); ``cg.sport`` is unused (their sender sends
    from the receiver's port)."""

    name = "scream-reference"
    takes_sender_args = True
    names_controller = True
    encoders = ("constant",)  # their test program's, the only one it has

    def check_config(self, cfg: CgConfig, sec: Section) -> None:
        super().check_config(cfg, sec)
        if cfg.cc != "scream":
            raise sec.error("cc", f"{cfg.cc!r}: source {self.name} runs SCReAM only; drop cg.cc")

    def post_run_flags(self, info: dict[str, Any], workdir: Path) -> list[str]:
        return reference_flags(info, workdir)

    names = (reference.TX_NAME, reference.RX_NAME)
    envs = (reference.TX_ENV, reference.RX_ENV)
    build = "Ericsson's SCReAM"

    def locate(self) -> tuple[Path, Path]:
        ref = reference.find_reference()
        return ref.tx, ref.rx

    def check(self, host: Host, cfg: CgConfig) -> None:
        super().check(host, cfg)
        if cfg.reference_controller is None:
            return
        tx = self.names[0] if host.remote else str(self.locate()[0])
        # Without arguments their sender prints its usage, whose first line names it.
        res = host.run([tx], check=False, timeout_s=10.0)
        banner = reference.parse_banner(res.stderr + res.stdout)
        refusal = reference.controller_refusal(cfg.reference_controller, banner, tx)
        if refusal is not None:
            raise TestbedError(refusal)

    def describe(self, first: Path, second: Path) -> dict[str, Any]:
        return reference.Reference(first, second).describe()

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


class EcgpProxy(UserBuilt):
    """eCGP's proxy client and a UDP sink on the client, our game server (which runs the
    proxy server as its child) on the server (docs/cg.md). The proxy client starts with the
    sender, once the proxy server is up: started earlier, its TCP connection to the server
    fails and it spins logging errors. ``cg.port`` is the proxies' port, ``cg.sport``
    unused."""

    name = "ecgp-proxy"
    encoders = tuple(ENCODERS)

    def simulated_clock_refusal(self, cfg: CgConfig) -> tuple[str, str] | None:
        # Measured: the clock stopped 0.1 s after the proxy started, the kernel's process busy.
        return (
            "source",
            "ecgp-proxy's threads wait for each other on spinlocks (its spinlock.h), a loop "
            "that neither sleeps nor reads the clock, so simulated time stops; run it on the "
            "uml testbed (docs/cg.md)",
        )

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

    names = (ecgp.SERVER_NAME, ecgp.CLIENT_NAME)
    envs = (ecgp.SERVER_ENV, ecgp.CLIENT_ENV)
    build = "eCGP's proxy"

    def locate(self) -> tuple[Path, Path]:
        proxy = ecgp.find_proxy()
        return proxy.server, proxy.client

    def describe(self, first: Path, second: Path) -> dict[str, Any]:
        return ecgp.Proxy(first, second).describe()

    def check(self, host: Host, cfg: CgConfig) -> None:
        for tool in ("python3", "timeout"):
            if which(host, tool) is None:
                raise TestbedError(f"cg.source ecgp-proxy: {tool} not found on {host.name}")
        super().check(host, cfg)

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
            encoder=ENCODERS[cfg.encoder or DEFAULT_ENCODER].game_args(),
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
                "encoder": ENCODERS[cfg.encoder or DEFAULT_ENCODER].to_dict(),
                "duration_s": duration_s,
            },
        )
