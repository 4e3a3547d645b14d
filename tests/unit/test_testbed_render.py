"""Golden tests: every qdisc kind renders to exact tc (or mm-*, cga-emu) command lines.

The files in tests/golden/tc/ are the reviewed expectations. After an intended change,
regenerate them with ``CGA_UPDATE_GOLDEN=1 pytest tests/unit/test_testbed_render.py`` and
review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.testbed.rendering import emuconf
from cganalysis.testbed.rendering.mahimahi import link_of, render_for_docs
from cganalysis.testbed.rendering.render import as_text, render_direction, render_netem
from cganalysis.testbed.spec.config import parse_bottleneck, parse_propagation
from cganalysis.testbed.spec.validate import Section

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tc"
UPDATE = os.environ.get("CGA_UPDATE_GOLDEN") == "1"

#: name -> the bottleneck section of a run file.
CASES: dict[str, str] = {
    "pfifo-root": "qdisc: {kind: pfifo, limit: 250}",
    "bfifo-htb": "rate_mbit: 50\nqdisc: {kind: bfifo, limit: 375000}",
    # TMA 2024 drop-tail (its paper: 50 Mbit/s, 250 packets).
    "htb-pfifo": "rate_mbit: 50\nqdisc: {kind: pfifo, limit: 250}",
    "htb-pfifo-burst": "rate_mbit: 20\nburst_bytes: 100000\nqdisc: {kind: pfifo, limit: 250}",
    "tbf-pfifo": "rate_mbit: 50\nshaper: tbf\nqdisc: {kind: pfifo, limit: 250}",
    "tbf-pfifo-burst": "rate_mbit: 20\nshaper: tbf\nburst_bytes: 32768\nqdisc: {kind: pfifo}",
    # TMA 2024 HTB: CG class prioritised, 10 Mbit/s guaranteed, SFQ 63; best effort pfifo 250.
    "htb-classes-tma2024": """
rate_mbit: 50
qdisc:
  kind: htb
  default: "20"
  classes:
    - {classid: "10", rate_mbit: 10, ceil_mbit: 50, prio: 0,
       leaf: {kind: sfq, limit: 63}, match: {proto: udp, sport: 30002}}
    - {classid: "20", rate_mbit: 40, ceil_mbit: 50, prio: 1, leaf: {kind: pfifo, limit: 250}}
""",
    "htb-classes-match": """
rate_mbit: 30
qdisc:
  kind: htb
  classes:
    - {classid: "a", rate_mbit: 5, prio: 0, leaf: {kind: pfifo, limit: 30},
       match: {proto: udp, port: 30002}}
    - {classid: "b", rate_mbit: 5, prio: 1, leaf: {kind: pfifo, limit: 30}, match: {dscp: 46}}
    - {classid: "c", rate_mbit: 5, prio: 2, leaf: {kind: bfifo, limit: 90000},
       match: {ecn: 1}, burst_bytes: 15000, cburst_bytes: 3000, quantum: 3028}
    - {classid: "d", rate_mbit: 15, leaf: {kind: pfifo, limit: 100},
       match: {proto: tcp, dport: 5201, dscp: 0}}
""",
    "sfq": "rate_mbit: 50\nqdisc: {kind: sfq, limit: 127, perturb: 10, quantum: 1514, "
    "divisor: 1024, depth: 64, headdrop: true}",
    # TMA 2024 L4S: defaults with a 1000-packet limit, behind a 50 Mbit/s shaper.
    "dualpi2-tma2024": "rate_mbit: 50\nqdisc: {kind: dualpi2, limit: 1000}",
    "dualpi2-defaults": "qdisc: {kind: dualpi2}",
    "dualpi2-all": """
rate_mbit: 50
shaper: tbf
qdisc:
  kind: dualpi2
  limit: 10000
  memlimit: 30280000
  target_ms: 15
  tupdate_ms: 16
  alpha: 0.16
  beta: 3.2
  coupling_factor: 2
  step_thresh_ms: 1
  min_qlen_step: 0
  drop_on_overload: true
  drop_enqueue: false
  l4s_ect: true
  classic_protection: 10
  split_gso: true
""",
    "dualpi2-flipped": """
qdisc:
  kind: dualpi2
  step_thresh_packets: 5
  drop_on_overload: false
  drop_enqueue: true
  l4s_ect: false
  max_rtt_ms: 100
  typical_rtt_ms: 15
  split_gso: false
""",
    "codel": "rate_mbit: 25\nqdisc: {kind: codel, limit: 1000, target_ms: 5, interval_ms: 100, "
    "ce_threshold_ms: 1.5, ecn: true}",
    "fq_codel": "rate_mbit: 25\nqdisc: {kind: fq_codel, limit: 10240, flows: 1024, "
    "target_ms: 5, interval_ms: 100, quantum: 1514, ce_threshold_ms: 2, memory_limit: 33554432, "
    "drop_batch: 64, ecn: false}",
    "pie": "rate_mbit: 25\nqdisc: {kind: pie, limit: 1000, target_ms: 15, tupdate_ms: 15, "
    "alpha: 2, beta: 20, ecn: true, bytemode: false, dq_rate_estimator: true}",
    # Xu & Claypool: 25 Mbit/s, 2x BDP with the 15 ms RTT they added for iperf.
    "pfifo-bdp-xu2022": "rate_mbit: 25\nbdp_rtt_ms: 15\nqdisc: {kind: pfifo, limit_bdp: 2}",
    "reverse": "rate_mbit: 50\nqdisc: {kind: pfifo, limit: 250}\n"
    "reverse: {rate_mbit: 5, qdisc: {kind: pfifo, limit: 50}}",
}


#: The traces the cases name, beside a run file of their own (a run file reaches no other
#: folder); the goldens name them /traces/NAME.
TRACES = Path(tempfile.mkdtemp(prefix="cga-render-traces-"))
for _name in ("down.trace", "up.trace"):
    (TRACES / _name).write_text("0\n1\n2\n")


def _as_golden(b: Any) -> Any:
    def one(d: Any) -> Any:
        if d is None or d.trace is None:
            return d
        return dataclasses.replace(d, trace=f"/traces/{Path(d.trace).name}")

    return dataclasses.replace(b, forward=one(b.forward), reverse=one(b.reverse))


def _bottleneck(text: str):  # type: ignore[no-untyped-def]
    sec = Section(yaml.safe_load(text), "case", "bottleneck")
    return _as_golden(parse_bottleneck(sec, 0.0, TRACES))


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with CGA_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_tc_commands_match_golden(name: str) -> None:
    b = _bottleneck(CASES[name])
    cmds = render_direction("rtr1", b.forward)
    if b.reverse is not None:
        cmds += render_direction("rtr0", b.reverse)
    _check(name, as_text(cmds))


def test_every_kind_has_a_golden_case() -> None:
    from cganalysis.testbed.spec.qdisc_kinds import KINDS

    covered = set()
    for text in CASES.values():
        b = _bottleneck(text)
        q = b.forward.qdisc
        covered.add(q.kind)
        covered |= {c.leaf.kind for c in getattr(q, "classes", ())}
    assert set(KINDS) <= covered


def test_netem_golden() -> None:
    p = parse_propagation(
        Section({"forward_ms": 15, "reverse_ms": 15, "jitter_ms": 2, "loss": 0.001}, "case")
    )
    _check("netem", as_text([render_netem("srv0", 15, p), render_netem("cli0", 15.5, p)]))


def test_mahimahi_golden() -> None:
    b = _as_golden(
        parse_bottleneck(
            Section(
                {
                    "backend": "mahimahi",
                    "trace": "down.trace",
                    "qdisc": {"kind": "pfifo", "limit": 250},
                    "reverse": {"trace": "up.trace", "qdisc": {"kind": "codel"}},
                },
                "case",
            ),
            30.0,
            TRACES,
        )
    )
    p = parse_propagation(Section({"forward_ms": 15, "reverse_ms": 15}, "case"))
    cmd = render_for_docs(link_of(b, p), Path("/tmp/run"))
    _check("mahimahi", shlex.join(cmd) + "\n")
    # Without a reverse bottleneck the uplink is a ~1 Gbit/s trace with an infinite queue.
    one_way = parse_bottleneck(
        Section(
            {"backend": "mahimahi", "rate_mbit": 12, "qdisc": {"kind": "bfifo", "limit": 30000}},
            "case",
        ),
        0.0,
    )
    link = link_of(one_way, parse_propagation(Section({}, "case")))
    assert (link.down_rate_mbps, link.up_rate_mbps) == (12, 1000.0)
    assert (link.down_queue, link.up_queue) == (("droptail", "bytes=30000"), ("infinite", ""))
    assert "mm-delay" not in render_for_docs(link, Path("/r"))


def test_emulator_config_golden() -> None:
    b = _bottleneck(CASES["dualpi2-all"])
    doc = emuconf.bottleneck_config("rtr0", "rtr1", b.forward, None, "emu-stats.jsonl", 100.0)
    htb = _bottleneck(CASES["htb-classes-tma2024"])
    doc2 = emuconf.bottleneck_config("rtr0", "rtr1", htb.forward, None, "s.jsonl", 100.0)
    p = parse_propagation(Section({"forward_ms": 15, "reverse_ms": 15}, "case"))
    text = "\n".join(
        json.dumps(d, indent=1, sort_keys=True)
        for d in (doc, doc2, emuconf.delay_config("dly0", "dly1", p))
    )
    _check("emulator", text + "\n")
    # split_gso means nothing to a userspace emulator; everything else passes through.
    assert "split_gso" not in doc["a_to_b"]["qdisc"]
    assert doc["a_to_b"]["qdisc"]["target_ms"] == 15
    assert doc["a_to_b"]["delay_ms"] == 0.0  # delay never inside the captured span


#: name -> the bottleneck section of a run file, for what only cga-emu runs (no tc words).
EMU_CASES: dict[str, str] = {
    # SQF (seed 001) and the per-flow DRR it is compared with, as extensions.yaml runs them.
    "sqf": "rate_mbit: 50\nqdisc: {kind: sqf, limit: 250, flows: 128}",
    "drr": "rate_mbit: 50\nqdisc: {kind: drr, limit: 250, quantum: 1514, flows: 1024}",
    # Trace-driven links (tma2024-cellular.yaml): the trace is the rate, scaled.
    "trace": "trace: down.trace\ntrace_scale: 2\nqdisc: {kind: pfifo, limit: 250}\n"
    "reverse: {trace: up.trace, qdisc: {kind: drr}}",
}


def test_emulator_only_configs_golden() -> None:
    docs = []
    for name in sorted(EMU_CASES):
        b = _bottleneck(EMU_CASES[name])
        docs.append(
            emuconf.bottleneck_config("rtr0", "rtr1", b.forward, b.reverse, "s.jsonl", 100.0)
        )
    _check("emulator-only", "\n".join(json.dumps(d, indent=1, sort_keys=True) for d in docs) + "\n")
    trace = docs[sorted(EMU_CASES).index("trace")]
    assert trace["a_to_b"]["rate"] == {"trace": "/traces/down.trace", "scale": 2.0}
    assert trace["b_to_a"]["rate"] == {"trace": "/traces/up.trace", "scale": 1.0}
    # A trace staged elsewhere on the emulator's host is named there.
    b = _bottleneck(EMU_CASES["trace"])
    staged = emuconf.bottleneck_config(
        "a", "b", b.forward, None, "s", 100.0, {"/traces/down.trace": "/run/x/down.trace"}
    )
    assert staged["a_to_b"]["rate"]["trace"] == "/run/x/down.trace"


def test_every_emulator_only_kind_has_a_golden_case_and_no_tc_words() -> None:
    from cganalysis.testbed.spec.qdisc import tc_words
    from cganalysis.testbed.spec.qdisc_kinds import ALL_KINDS, EMULATOR_ONLY, KINDS

    covered = {_bottleneck(t).forward.qdisc.kind for t in EMU_CASES.values()}
    assert covered >= EMULATOR_ONLY
    assert set(ALL_KINDS) == set(KINDS) | EMULATOR_ONLY
    for name in EMULATOR_ONLY:
        with pytest.raises(ValueError, match="only in cga-emu"):
            tc_words(_bottleneck(EMU_CASES[name]).forward.qdisc)
