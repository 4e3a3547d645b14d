"""A run's ``meta.json``: what the metrics need, the checks' verdicts, and provenance.

Top-level keys read by the metrics (src/cganalysis/metrics/runfacts.py, docs/metrics.md):
``run_id``, ``campaign``, labels (``qdisc``, ``cca``, ``system``, ``repetition``,
``queue``; ``labels`` holds every label of the run, campaign factors included),
``start_ns`` (the run's time origin), ``capacity_mbps`` (configured),
``capacity_measured_mbps`` (calibration), ``roles``, ``schedule``, ``analysis``. The rest is
provenance: the resolved configuration, hosts (kernel, sysctls, offloads, tools), qdisc
dumps before and after, the commands that built the bottleneck, times, files with checksums.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cganalysis.cg import ecgp
from cganalysis.experiment import rundir
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.record import RunRecord
from cganalysis.experiment.schedule import Schedule
from cganalysis.experiment.sources import SOURCES
from cganalysis.jsonrecord import to_json
from cganalysis.matching import match_files
from cganalysis.metrics.runmeta import (
    META_VERSION,
    Analysis,
    RunMeta,
    ScheduleDetail,
    validate_meta,
)
from cganalysis.metrics.steps import Step
from cganalysis.testbed.measure import provenance

if TYPE_CHECKING:
    from cganalysis.experiment.plan import Plan, RunOptions
    from cganalysis.experiment.session import Session


def roles(cfg: RunConfig) -> dict[str, str]:
    """The role rules (first match wins): eCGP's proxies keep a TCP connection of their
    own across the bottleneck, which is not the competitor."""
    rules = {"cg": f"udp:{cfg.cg.port}"}
    if cfg.cg.source == "ecgp-proxy":
        rules["other"] = f"tcp:{ecgp.CONTROL_TCP_PORT}"
    return {**rules, "competitor": "tcp"}


def drop_check(session: Session, workdir: Path) -> dict[str, Any]:
    """Losses seen in the captures against the qdisc's drop counter over the same span.

    A mismatch beyond tolerance means packets were lost somewhere other than the
    configured queue (or the queue is not where the captures are): the run is flagged.
    """

    files = {t.point: workdir / Path(t.path).name for t in session.taps}
    m = match_files(files["ingress"], files["egress"])
    s = m.summary
    counters = session.record.counters or {}
    qdisc_drops = int(counters["at_capture_end"]["dropped"] or 0) - int(
        counters["at_capture_start"]["dropped"] or 0
    )
    tol = session.cfg.checks
    allowed = max(tol.drop_tolerance_packets, tol.drop_tolerance_ratio * max(qdisc_drops, 1))
    diff = s.packets_lost - qdisc_drops
    # A uml router counts what its input dropped before its kernel read it
    # (testbed/uml/testbed.py), from its start: the capture's share is the difference
    # (calibration's line-rate bursts before the capture overflow it too).
    c0, c1 = counters["at_capture_start"], counters["at_capture_end"]
    input_drops = (
        c1["router_input_drops"] - c0["router_input_drops"]
        if "router_input_drops" in c0 and "router_input_drops" in c1
        else None
    )
    out = {
        "capture_lost": s.packets_lost,
        "capture_unknown": s.packets_unknown,
        "qdisc_drops": qdisc_drops,
        "difference": diff,
        "tolerance": allowed,
        "capture_drops_ingress": s.capture_drops_ingress,
        "capture_drops_egress": s.capture_drops_egress,
        "ok": abs(diff) <= allowed and not s.loss_suspect,
        "matched_packets_in": s.packets_in,
        "matched_delivered": s.packets_delivered,
    }
    if input_drops is not None:
        out["router_input_drops"] = int(input_drops)
    if abs(diff) > allowed:
        why = f"; the router's input dropped {input_drops}" if input_drops else ""
        session.record.flags.append(
            f"bottleneck not where configured: the captures lost {s.packets_lost} packets, "
            f"the qdisc dropped {qdisc_drops} (tolerance {allowed:g}){why}"
        )
    if s.loss_suspect:
        session.record.flags.append(
            f"capture drops (ingress {s.capture_drops_ingress}, egress "
            f"{s.capture_drops_egress}): loss figures are suspect"
        )
    return out


def busy_rate_mbps(stats: Path) -> float | None:
    """Delivered rate (layer 2) over the polls where the queue stayed backlogged."""

    prev: dict[str, Any] | None = None
    bits = 0.0
    seconds = 0.0
    with stats.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("direction") != "a_to_b":
                continue
            if (
                prev is not None
                and (prev.get("backlog_packets") or 0) > 1
                and (rec.get("backlog_packets") or 0) > 1
            ):
                bits += ((rec.get("sent_bytes") or 0) - (prev.get("sent_bytes") or 0)) * 8
                seconds += (rec["t_ns"] - prev["t_ns"]) / 1e9
            prev = rec
    return None if seconds < 0.5 else round(bits / seconds / 1e6, 3)


#: cga-emu's delivery opportunity: 1504 IP bytes, as mahimahi (docs/emulator.md).
EMU_BYTES_PER_OPPORTUNITY = 1504


def trace_keys(scale: float, trace: str, record: RunRecord) -> dict[str, Any]:
    """The capacity of a trace-driven run, as the metrics read it (docs/metrics.md 3.8).

    cga-emu starts the trace when it starts, before the run's t0 (setup, warm-up pings and
    receivers come in between), so the trace's time 0 is a negative offset from t0.
    """
    started = record.emulator_started_ns
    t0 = record.times.start_ns
    offset_s = 0.0 if started is None or t0 is None else (started - t0) / 1e9
    uncertainty = record.emulator_started_uncertainty_ns
    return {
        "capacity_trace": trace,
        "capacity_trace_scale": scale,
        "capacity_trace_offset_s": round(offset_s, 6),
        "capacity_trace_bytes_per_opportunity": EMU_BYTES_PER_OPPORTUNITY,
        "capacity_note": f"trace-driven link ({record.bottleneck_backend}): the capacity is "
        "the trace's delivery "
        "opportunities x capacity_trace_scale, from the trace's time 0 at "
        "capacity_trace_offset_s (when the link started; uncertain by "
        f"{(uncertainty or 0) / 1e6:.1f} ms); not calibrated",
    }


def schedule_steps(sched: Schedule) -> tuple[Step, ...]:
    """The schedule as the metrics read it (``rate_mbps`` in Mbit/s, None = bulk)."""
    return tuple(Step(**s) for s in sched.meta())


def schedule_detail(sched: Schedule) -> ScheduleDetail:
    """The schedule the runner played: the flows' starts (metrics/starts.py) and scale."""
    fw = sched.fairness_window_s
    return ScheduleDetail(
        preset=sched.preset,
        duration_s=sched.duration_s,
        time_scale=sched.time_scale,
        cg_start_s=sched.cg_start_s,
        cg_stop_s=sched.cg_stop_s,
        steps=schedule_steps(sched),
        window_s=sched.window_s,
        fairness_window_s=None if fw is None else fw,
    )


def build_meta(
    cfg: RunConfig,
    p: Plan,
    opts: RunOptions,
    session: Session,
    record: RunRecord,
    workdir: Path,
) -> dict[str, Any]:
    """The run's meta.json (:class:`RunMeta`), checked against the schema the metrics read
    it with: a run whose metadata they would refuse is a bug to see now, not a surprise at
    analysis time."""
    meta: dict[str, Any] = to_json(run_meta(cfg, p, opts, session, record, workdir))
    validate_meta(meta, "meta.json (as written by the runner)")
    return meta


def run_meta(
    cfg: RunConfig,
    p: Plan,
    opts: RunOptions,
    session: Session,
    record: RunRecord,
    workdir: Path,
) -> RunMeta:
    sched = p.schedule
    calib = record.calibration or {}
    configured = cfg.bottleneck.forward.rate_mbit
    measured = calib.get("capacity_measured_mbps")
    trace = cfg.bottleneck.forward.trace
    checks = {"drops": drop_check(session, workdir)}
    stats = workdir / "qdisc-stats.jsonl"
    busy = busy_rate_mbps(stats) if stats.exists() else None
    cg_source = dict(record.cg_source or {"name": cfg.cg.source})
    flags = list(calib.get("flags", [])) + record.flags
    flags += SOURCES[cfg.cg.source].post_run_flags(cg_source, workdir)
    labels = cfg.all_labels()
    capacity_source: Literal["measured", "configured"] = "measured" if measured else "configured"
    return RunMeta(
        meta_version=META_VERSION,
        run_id=opts.run_id,
        campaign=opts.campaign or None,
        repetition=opts.repetition,
        label_keys=labels,
        labels=dict(labels),
        start_ns=record.times.start_ns,
        capacity_mbps=configured or None,
        capacity_measured_mbps=measured if measured and not trace else None,
        capacity_configured_mbps=configured,
        **(
            trace_keys(cfg.bottleneck.forward.trace_scale, trace, record)
            if trace
            else {
                "capacity_note": "capacity_measured_mbps is the calibration's delivered rate "
                "at layer 2 (egress capture); the metrics use it for utilisation and fairness"
            }
        ),
        roles=roles(cfg),
        schedule=schedule_steps(sched),
        analysis=Analysis(
            window_s=sched.window_s,
            fairness_window_s=sched.fairness_window_s or None,
            capacity_source=None if trace else capacity_source,
        ),
        flags=flags,
        cg_source=cg_source,
        checks=checks,
        calibration=calib,
        delivered_busy_mbps=busy,
        bottleneck_backend=record.bottleneck_backend,
        bottleneck_backend_reason=p.resolution.reason,
        shaper=record.shaper,
        delay_via=p.resolution.delay.name,
        config=cfg.to_dict(),
        schedule_detail=schedule_detail(sched),
        steps=record.steps,
        counters=record.counters,
        qdisc_stats_records=record.qdisc_stats_records,
        qdisc_before=record.qdisc_before,
        qdisc_after=record.qdisc_after,
        bottleneck_commands=record.bottleneck_commands,
        delay_commands=record.delay_commands,
        hosts=record.hosts,
        # Where it ran, by name (a pool's member, or the run file's testbed) and in detail.
        testbed={
            **(record.testbed or {}),
            "name": cfg.testbed.label,
            "file": None if cfg.testbed.path is None else str(cfg.testbed.path),
            **({"pool": list(cfg.testbed.pool)} if cfg.testbed.pool else {}),
        },
        topology=record.topology,
        captures={
            t.point: {
                "file": Path(t.path).name,
                "dev": t.dev,
                "direction": t.direction,
                "command": " ".join(t.argv),
            }
            for t in session.taps
        },
        times=asdict(record.times),
        controller={**provenance.controller(), "argv": sys.argv},
        # Last, once every other file of the run is written.
        files=rundir.inventory(workdir),
    )
