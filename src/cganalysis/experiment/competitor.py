"""The competing TCP flow: iperf3, one client per schedule step.

How a rate step is made: a **new iperf3 client per step** (own connection, own port and
server), started at the step's time for the step's length, with ``-b RATE`` (or no limit
for ``bulk``). iperf3 cannot change the rate of a running test, so the alternatives were a
custom sender or pausing one connection; a new connection per step is what iperf3 offers
and what the TMA 2024 set-up did with iperf. Consequences, visible in the data: each step
restarts slow start (TCP metrics caching is off on the endpoints, so no ssthresh is
inherited), and there is a gap of a few milliseconds between steps. iperf3 takes whole
seconds for ``-t``: step lengths are rounded (the quick profile's scale factors keep the
papers' steps whole).

Each step has its own server (``-1``: one test, then exit) on ``port + index``, all
started before the traffic, so a step never meets a server busy with the previous one.
"""

from __future__ import annotations

from dataclasses import dataclass

from cganalysis.experiment.config import CompetitorConfig
from cganalysis.experiment.schedule import Phase
from cganalysis.testbed.shared.hosts import Host, Proc
from cganalysis.testbed.shared.topology import Topology


@dataclass
class Step:
    phase: Phase
    port: int
    seconds: int
    json_path: str
    client: Proc | None = None


def client_argv(
    server_ip: str,
    port: int,
    seconds: int,
    rate_mbit: float | None,
    cca: str,
    burst_blocks: int | None = None,
) -> list[str]:
    argv = ["iperf3", "-c", server_ip, "-p", str(port), "-t", str(seconds), "-C", cca, "-J"]
    argv += ["--connect-timeout", "3000"]
    if rate_mbit is not None:
        # `/N`: N writes back to back between rate checks (iperf3's burst mode)
        burst = "" if burst_blocks is None else f"/{burst_blocks}"
        argv += ["-b", f"{rate_mbit:g}M{burst}"]
    return argv


def plan(phases: list[Phase], cfg: CompetitorConfig, host: Host) -> list[Step]:
    return [
        Step(
            p,
            cfg.port + p.index,
            max(1, round(p.duration_s)),
            host.path(f"iperf3-step{p.index + 1:02d}.json"),
        )
        for p in phases
    ]


def start_servers(topo: Topology, steps: list[Step]) -> list[Proc]:
    c = topo.client
    return [
        c.spawn(
            f"iperf3 server {s.port}",
            ["iperf3", "-s", "-1", "-B", topo.client_ip, "-p", str(s.port)],
            stdout=c.path(f"iperf3-server-step{s.phase.index + 1:02d}.log"),
            stderr=c.path(f"iperf3-server-step{s.phase.index + 1:02d}.log.err"),
        )
        for s in steps
    ]


def start_client(topo: Topology, step: Step, cfg: CompetitorConfig) -> Proc:
    s = topo.server
    argv = client_argv(
        topo.client_ip, step.port, step.seconds, step.phase.rate_mbit, cfg.cca, cfg.burst_blocks
    )
    step.client = s.spawn(
        f"iperf3 client step {step.phase.index + 1}",
        argv,
        stdout=step.json_path,
        stderr=step.json_path + ".err",
    )
    return step.client
