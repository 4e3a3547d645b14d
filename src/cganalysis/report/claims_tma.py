"""TMA 2024's claims (:mod:`.claims`): the relations the paper draws from its Table II
(queue discipline x competing CCA, section IV) and Table I (the CG flow over a cellular
trace with and without SCReAM, section III), each checked over a campaign's cells.

The cells are :class:`.tmacells.TmaCells` (Table II's and Table I's own aggregation), the
paper's Table II numbers :data:`.factors.PAPER`'s and its Table I's
:data:`.tmacells.TABLE1_PAPER`; those it states elsewhere are written here once.
A Table II campaign has no Table I cells and a cellular one no Table II cells: their claims
are ``not measured`` there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cganalysis.report.claims import Claim, Outcome, claims_table, ratio, within
from cganalysis.report.conditions import require_one_condition
from cganalysis.report.tablefmt import Table
from cganalysis.report.tables import num2
from cganalysis.report.tmacells import (
    CCA_LABELS,
    CCAS,
    DT,
    HTB,
    L4S,
    TABLE1_COLUMNS,
    TABLE1_PAPER,
    TmaCells,
    paper,
)


def _cg_delay(c: TmaCells, q: str, k: str) -> float:
    return c.get("cg", "delay_mean_ms", q, k)


def _tcp_delay(c: TmaCells, q: str, k: str) -> float:
    return c.get("competitor", "delay_mean_ms", q, k)


def _cg_rate(c: TmaCells, q: str, k: str) -> float:
    return c.get("cg", "bitrate_mean_mbps", q, k)


def _tcp_rate(c: TmaCells, q: str, k: str) -> float:
    return c.get("competitor", "bitrate_mean_mbps", q, k)


def _p(role: str, metric: str, q: str, k: str) -> str:
    return num2(paper(role, metric, q, k))


RATE, DELAY = "bitrate_mean_mbps", "delay_mean_ms"


def _cg_delay_order(c: TmaCells) -> Outcome:
    v = {(q, k): _cg_delay(c, q, k) for q in (DT, HTB, L4S) for k in CCAS}
    ours = "; ".join(
        f"{CCA_LABELS[k]} {num2(v[DT, k])} > {num2(v[HTB, k])} > {num2(v[L4S, k])} ms" for k in CCAS
    )
    return Outcome(ours, all(v[DT, k] > v[HTB, k] > v[L4S, k] for k in CCAS))


def _dt_bufferbloat(c: TmaCells) -> Outcome:
    cubic, bbr = (c.get("cg", "pct_delay_over_20ms", DT, k) for k in CCAS)
    ours = f"{num2(cubic)} % (Cubic), {num2(bbr)} % (BBR)"
    return Outcome(ours, cubic > bbr, within(cubic, 85.54) and within(bbr, 68.88))


def _dt_bbr_less_cg_delay(c: TmaCells) -> Outcome:
    cubic, bbr = (_cg_delay(c, DT, k) for k in CCAS)
    want = ratio(paper("cg", DELAY, DT, "bbr"), paper("cg", DELAY, DT, "cubic"))
    ours = f"{num2(bbr)} vs {num2(cubic)} ms (x{num2(ratio(bbr, cubic))}, paper x{num2(want)})"
    return Outcome(ours, bbr < cubic, within(ratio(bbr, cubic), want))


def _dt_bbr_cg_q1(c: TmaCells) -> Outcome:
    cubic, bbr = (c.get("cg", "bitrate_q1_mbps", DT, k) for k in CCAS)
    r = ratio(bbr, cubic)
    ours = f"{num2(bbr)} vs {num2(cubic)} Mbit/s (x{num2(r)})"
    return Outcome(ours, bbr > cubic, within(r, 9.69 / 4.29))


def _dt_shared_delay(c: TmaCells) -> Outcome:
    pairs = {k: (_cg_delay(c, DT, k), _tcp_delay(c, DT, k)) for k in CCAS}
    ours = "; ".join(f"{CCA_LABELS[k]} {num2(g)} / {num2(t)} ms" for k, (g, t) in pairs.items())
    return Outcome(ours, all(within(g, t) for g, t in pairs.values()))


def _dt_tcp_dominates(c: TmaCells) -> Outcome:
    pairs = {k: (_tcp_rate(c, DT, k), _cg_rate(c, DT, k)) for k in CCAS}
    ours = "; ".join(
        f"{CCA_LABELS[k]} {num2(t)} vs {num2(g)} Mbit/s" for k, (t, g) in pairs.items()
    )
    size = all(
        within(ratio(t, g), ratio(paper("competitor", RATE, DT, k), paper("cg", RATE, DT, k)))
        for k, (t, g) in pairs.items()
    )
    return Outcome(ours, all(t > g for t, g in pairs.values()), size)


def _dt_bbr_bounded(c: TmaCells) -> Outcome:
    cubic, bbr = (c.get("cg", "pct_delay_over_50ms", DT, k) for k in CCAS)
    ours = f"{num2(bbr)} % (BBR) vs {num2(cubic)} % (Cubic)"
    return Outcome(ours, bbr < cubic, bbr < 1.0)


def _htb_cg_protected(c: TmaCells) -> Outcome:
    order = all(
        _cg_rate(c, HTB, k) > _cg_rate(c, DT, k) and _cg_delay(c, HTB, k) < _cg_delay(c, DT, k) / 10
        for k in CCAS
    )
    ours = "; ".join(
        f"{CCA_LABELS[k]} {num2(_cg_rate(c, HTB, k))} Mbit/s at {num2(_cg_delay(c, HTB, k))} ms"
        for k in CCAS
    )
    size = all(within(_cg_rate(c, HTB, k), paper("cg", RATE, HTB, k)) for k in CCAS)
    return Outcome(ours, order, size)


def _htb_cg_same(c: TmaCells) -> Outcome:
    cubic, bbr = (_cg_rate(c, HTB, k) for k in CCAS)
    return Outcome(f"{num2(cubic)} / {num2(bbr)} Mbit/s", within(bbr, cubic))


def _htb_tcp_pays(c: TmaCells) -> Outcome:
    order = all(_tcp_delay(c, HTB, k) > 10 * _cg_delay(c, HTB, k) for k in CCAS)
    ours = "; ".join(
        f"{CCA_LABELS[k]} {num2(_tcp_delay(c, HTB, k))} vs {num2(_cg_delay(c, HTB, k))} ms"
        for k in CCAS
    )
    size = all(within(_tcp_delay(c, HTB, k), paper("competitor", DELAY, HTB, k)) for k in CCAS)
    return Outcome(ours, order, size)


def _htb_bbr_less_tcp_delay(c: TmaCells) -> Outcome:
    cubic, bbr = (_tcp_delay(c, HTB, k) for k in CCAS)
    want = ratio(paper("competitor", DELAY, HTB, "bbr"), paper("competitor", DELAY, HTB, "cubic"))
    ours = f"{num2(bbr)} vs {num2(cubic)} ms (x{num2(ratio(bbr, cubic))}, paper x{num2(want)})"
    return Outcome(ours, bbr < cubic, within(ratio(bbr, cubic), want))


def _htb_tcp_rate(c: TmaCells) -> Outcome:
    rates = {k: _tcp_rate(c, HTB, k) for k in CCAS}
    ours = " / ".join(num2(r) for r in rates.values()) + " Mbit/s"
    return Outcome(
        ours, all(within(r, paper("competitor", RATE, HTB, k)) for k, r in rates.items())
    )


def _l4s_cg_below_1ms(c: TmaCells) -> Outcome:
    delays = [_cg_delay(c, L4S, k) for k in CCAS]
    return Outcome(" / ".join(num2(d) for d in delays) + " ms", all(d < 1.0 for d in delays))


def _cubic_pair(c: TmaCells, role: str, metric: str, lower: str, higher: str, unit: str) -> Outcome:
    """``lower``'s cell below ``higher``'s (Cubic), by about the paper's ratio."""
    low, high = (c.get(role, metric, q, "cubic") for q in (lower, higher))
    want = ratio(paper(role, metric, lower, "cubic"), paper(role, metric, higher, "cubic"))
    ours = f"{num2(low)} vs {num2(high)} {unit} (x{num2(ratio(low, high))}, paper x{num2(want)})"
    return Outcome(ours, low < high, within(ratio(low, high), want))


def _l4s_tcp_delay_below_htb(c: TmaCells) -> Outcome:
    return _cubic_pair(c, "competitor", DELAY, L4S, HTB, "ms")


def _l4s_tcp_rate_below_htb(c: TmaCells) -> Outcome:
    return _cubic_pair(c, "competitor", RATE, L4S, HTB, "Mbit/s")


def _l4s_cg_rate_below_htb(c: TmaCells) -> Outcome:
    return _cubic_pair(c, "cg", RATE, L4S, HTB, "Mbit/s")


def _htb_util_above_l4s(c: TmaCells) -> Outcome:
    htb, l4s = (100 * c.get(None, "utilisation_total", q, "cubic") for q in (HTB, L4S))
    ours = f"{num2(htb)} % vs {num2(l4s)} %"
    return Outcome(ours, htb > l4s, within(ratio(htb, l4s), 96.39 / 81.36))


def _l4s_bbr_balanced(c: TmaCells) -> Outcome:
    cg, tcp = _cg_rate(c, L4S, "bbr"), _tcp_rate(c, L4S, "bbr")
    ours = f"CG {num2(cg)}, TCP {num2(tcp)} Mbit/s"
    size = within(cg, paper("cg", RATE, L4S, "bbr")) and within(
        tcp, paper("competitor", RATE, L4S, "bbr")
    )
    return Outcome(ours, within(cg, tcp), size)


def _l4s_cubic_vs_bbr(c: TmaCells) -> Outcome:
    delay = {k: _tcp_delay(c, L4S, k) for k in CCAS}
    rate = {k: _tcp_rate(c, L4S, k) for k in CCAS}
    want = ratio(paper("competitor", RATE, L4S, "bbr"), paper("competitor", RATE, L4S, "cubic"))
    ours = (
        f"{num2(delay['cubic'])} vs {num2(delay['bbr'])} ms; "
        f"{num2(rate['cubic'])} vs {num2(rate['bbr'])} Mbit/s"
    )
    order = delay["cubic"] < delay["bbr"] and rate["cubic"] < rate["bbr"]
    return Outcome(ours, order, within(ratio(rate["bbr"], rate["cubic"]), want))


def _t1_scream_latency(c: TmaCells) -> Outcome:
    none, scream = (c.table1("delay_mean_ms", v) for v in ("none", "scream"))
    want = TABLE1_PAPER["scream"][0] / TABLE1_PAPER["none"][0]
    ours = f"{num2(scream)} vs {num2(none)} ms (x{num2(ratio(scream, none))}, paper x{num2(want)})"
    return Outcome(ours, scream < none, within(ratio(scream, none), want))


def _t1_scream_thresholds(c: TmaCells) -> Outcome:
    pairs = [(c.table1(col, "scream"), c.table1(col, "none")) for col in TABLE1_COLUMNS[1:]]
    ours = ", ".join(f"{num2(s)} vs {num2(n)} %" for s, n in pairs) + " (10 / 20 / 50 / 100 ms)"
    return Outcome(ours, all(s < n for s, n in pairs))


def _words_cells(role: str, metric: str, qdiscs: Sequence[str], unit: str) -> str:
    return "; ".join(
        f"{CCA_LABELS[k]} " + " / ".join(_p(role, metric, q, k) for q in qdiscs) + f" {unit}"
        for k in CCAS
    )


TMA_CLAIMS: tuple[Claim[TmaCells], ...] = (
    Claim(
        "cg_latency_order",
        "Table II; V, VI",
        "CG latency drop-tail > HTB > L4S with either CCA: "
        + _words_cells("cg", DELAY, (DT, HTB, L4S), "ms"),
        _cg_delay_order,
    ),
    Claim(
        "droptail_bufferbloat",
        "IV-B; Table II",
        "Drop-tail: 85.54 % (Cubic) and 68.88 % (BBRv2) of CG packets over 20 ms",
        _dt_bufferbloat,
    ),
    Claim(
        "droptail_bbr_less_cg_delay",
        "IV-B.2; Table II",
        f"Drop-tail: BBRv2 leaves CG less delay than Cubic ({_p('cg', DELAY, DT, 'bbr')} vs "
        f"{_p('cg', DELAY, DT, 'cubic')} ms)",
        _dt_bbr_less_cg_delay,
    ),
    Claim(
        "droptail_bbr_cg_q1",
        "IV-B.2; Table II",
        "Drop-tail: CG's 1st bitrate quartile 'two times more' with BBRv2 (9.69 vs 4.29 Mbit/s)",
        _dt_bbr_cg_q1,
    ),
    Claim(
        "droptail_shared_delay",
        "IV-B.1; Table II",
        "Drop-tail: CG and TCP delays equal, one shared queue: "
        + "; ".join(
            f"{CCA_LABELS[k]} {_p('cg', DELAY, DT, k)} / {_p('competitor', DELAY, DT, k)} ms"
            for k in CCAS
        ),
        _dt_shared_delay,
    ),
    Claim(
        "droptail_tcp_dominates",
        "IV-B; Table II",
        "Drop-tail: TCP takes most of the link: "
        + "; ".join(
            f"{CCA_LABELS[k]} {_p('competitor', RATE, DT, k)} vs {_p('cg', RATE, DT, k)} Mbit/s"
            for k in CCAS
        ),
        _dt_tcp_dominates,
    ),
    Claim(
        "droptail_bbr_delay_bounded",
        "IV-B.2; Fig. 7; Table II",
        "Drop-tail: BBRv2's delay stabilises (around 35 ms): 0.41 % of CG packets over 50 ms "
        "(under 1 %), Cubic 34.71 %",
        _dt_bbr_bounded,
    ),
    Claim(
        "htb_cg_protected",
        "IV-C; Figs. 8-9; Table II",
        "HTB: CG keeps its rate at negligible delay (under a tenth of drop-tail's): "
        + "; ".join(
            f"{CCA_LABELS[k]} {_p('cg', RATE, HTB, k)} Mbit/s at {_p('cg', DELAY, HTB, k)} ms"
            for k in CCAS
        ),
        _htb_cg_protected,
    ),
    Claim(
        "htb_cg_same_either_cca",
        "IV-C.2; Table II",
        "HTB: CG's statistics 'very similar' against Cubic and BBRv2: "
        f"{_p('cg', RATE, HTB, 'cubic')} / {_p('cg', RATE, HTB, 'bbr')} Mbit/s",
        _htb_cg_same,
    ),
    Claim(
        "htb_tcp_pays",
        "IV-C.1; Table II",
        "HTB: TCP's delays much greater than CG's (over ten times): "
        + _words_cells("competitor", DELAY, (HTB,), "ms"),
        _htb_tcp_pays,
    ),
    Claim(
        "htb_bbr_less_tcp_delay",
        "IV-C.2; Table II",
        "HTB: BBRv2 controls TCP's delay better than Cubic "
        f"({_p('competitor', DELAY, HTB, 'bbr')} vs {_p('competitor', DELAY, HTB, 'cubic')} ms)",
        _htb_bbr_less_tcp_delay,
    ),
    Claim(
        "htb_tcp_rate_20",
        "IV-C.1; Table II",
        "HTB: TCP stabilises around 20 Mbit/s: "
        + " / ".join(_p("competitor", RATE, HTB, k) for k in CCAS)
        + " Mbit/s",
        _htb_tcp_rate,
    ),
    Claim(
        "l4s_cg_below_1ms",
        "IV-D.2; Table II",
        "L4S: CG's delays below 1 ms with either CCA: "
        + " / ".join(_p("cg", DELAY, L4S, k) for k in CCAS)
        + " ms",
        _l4s_cg_below_1ms,
    ),
    Claim(
        "l4s_tcp_delay_below_htb",
        "IV-D.1; Table II",
        "Cubic's delay much reduced under L4S compared to HTB "
        f"({_p('competitor', DELAY, L4S, 'cubic')} vs {_p('competitor', DELAY, HTB, 'cubic')} ms)",
        _l4s_tcp_delay_below_htb,
    ),
    Claim(
        "l4s_tcp_rate_below_htb",
        "IV-D.1; Table II",
        "... at the expense of a slightly lower TCP bitrate under L4S "
        f"({_p('competitor', RATE, L4S, 'cubic')} vs {_p('competitor', RATE, HTB, 'cubic')} "
        "Mbit/s, Cubic)",
        _l4s_tcp_rate_below_htb,
    ),
    Claim(
        "htb_cg_rate_above_l4s",
        "IV-D.1; Table II",
        "HTB gives CG a higher throughput than L4S "
        f"({_p('cg', RATE, HTB, 'cubic')} vs {_p('cg', RATE, L4S, 'cubic')} Mbit/s, Cubic)",
        _l4s_cg_rate_below_htb,
    ),
    Claim(
        "htb_utilisation_above_l4s",
        "IV-D.1; Table II",
        "Link utilisation higher with HTB (96.39 %) than L4S (81.36 %), Cubic",
        _htb_util_above_l4s,
    ),
    Claim(
        "l4s_bbr_balanced",
        "IV-D.2; Fig. 11; Table II",
        "L4S with BBRv2: bandwidth 'perfectly balanced', both about 22 Mbit/s "
        f"(CG {_p('cg', RATE, L4S, 'bbr')}, TCP {_p('competitor', RATE, L4S, 'bbr')})",
        _l4s_bbr_balanced,
    ),
    Claim(
        "l4s_cubic_vs_bbr",
        "IV-D.2; Figs. 10-11; Table II",
        "L4S: Cubic has less delay but a significantly lower bitrate than BBRv2 "
        f"({_p('competitor', DELAY, L4S, 'cubic')} vs {_p('competitor', DELAY, L4S, 'bbr')} "
        f"ms; {_p('competitor', RATE, L4S, 'cubic')} vs {_p('competitor', RATE, L4S, 'bbr')} "
        "Mbit/s)",
        _l4s_cubic_vs_bbr,
    ),
    Claim(
        "table1_scream_cuts_latency",
        "III; Table I",
        "Cellular: SCReAM cuts CG's latency against no CCA "
        f"({num2(TABLE1_PAPER['scream'][0])} vs {num2(TABLE1_PAPER['none'][0])} ms)",
        _t1_scream_latency,
    ),
    Claim(
        "table1_scream_fewer_late",
        "III; Table I",
        "Cellular: fewer packets over every threshold with SCReAM ("
        + " vs ".join(" / ".join(num2(v) for v in TABLE1_PAPER[k][1:]) for k in ("scream", "none"))
        + " %, 10 / 20 / 50 / 100 ms, SCReAM vs none)",
        _t1_scream_thresholds,
    ),
)

#: Labels the claims' cells are keyed by: runs differing in another label must not mix.
CELL_KEYS = ("qdisc", "cca", "system")


def tma_claims_table(docs: Sequence[Mapping[str, Any]]) -> Table:
    """The TMA 2024 claims over a campaign's runs (one condition: :data:`CELL_KEYS`)."""
    require_one_condition(docs, CELL_KEYS, table="tma_claims")
    return claims_table(TMA_CLAIMS, TmaCells.of(docs), "TMA 2024's claims against ours")
