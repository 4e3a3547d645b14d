"""Table II's cells and TMA 2024's claims still out on the sim plane, and why: the one
registry of what is known about each (issue 55).

An :class:`OutEntry` names a Table II cell outside the target, or a claim that does not
hold with the cell that keeps it out; the factors measured to move that cell, each a
one-factor contrast between two cells of published datasets (:class:`Factor`: the factor's
runs against the same set-up without it); and why the paper's value is out of reach here.
Knowledge only: every measured number the account shows is computed when it is rendered
(:mod:`.cells_out_table`), and the reasons' arithmetic here from the paper's own numbers
(:mod:`.queuebound`, :func:`.tmacells.paper`). A factor dataset that lands later is one
more :class:`Factor` line in its group below.
"""

from __future__ import annotations

from dataclasses import dataclass

from cganalysis.report.queuebound import drain_ms, max_std_ms
from cganalysis.report.tmacells import DT, HTB, L4S, paper

Labels = tuple[tuple[str, str], ...]


def labels(**pairs: str) -> Labels:
    return tuple(pairs.items())


@dataclass(frozen=True)
class Factor:
    """A factor's measured effect on a cell: the runs of ``dataset`` with ``labels`` against
    those of ``baseline_dataset`` with ``baseline`` (the same set-up without the factor),
    both under the entry's queue discipline and CCA."""

    what: str
    dataset: str
    labels: Labels
    baseline_dataset: str
    baseline: Labels


@dataclass(frozen=True)
class Cell:
    """A Table II cell: ``role``'s ``metric`` under ``qdisc`` against ``cca``."""

    role: str
    metric: str
    qdisc: str
    cca: str


@dataclass(frozen=True)
class OutEntry:
    cell: Cell
    factors: tuple[Factor, ...]
    why: str
    #: A claim's entry: the claim (:data:`.claims_tma.TMA_CLAIMS`) that ``cell`` keeps out.
    claim: str | None = None


SIM = "tma2024-sim-2026-11-29"
FACTORS = "tma2024-factors-2026-11-26"
BURST = "tma2024-factors-burst-2026-11-27"
BE_RATE = "tma2024-factors-be-rate-2026-11-27"
OFFLOADS = "tma2024-factors-offloads-2026-11-27"
SCREAM2023 = "tma2024-factors-scream2023-2026-11-29"
ECGP_FIXED = "tma2024-factors-ecgp-fixed-2026-11-27"
UML = "tma2024-factors-uml-2026-11-27"
ERICSSON = "tma2024-factors-ericsson-2026-11-26"
CEIL50 = "tma2024-sim-be10-ceil50-2026-11-29"
BUCKETS = "tma2024-factors-buckets-2026-11-27"
KERNEL_BE10 = "tma2024-kernel-be10-2026-11-27"
BBR3 = "tma2024-sim-bbr3-2026-11-29"
BBR2 = "tma2024-sim-bbr2-2026-11-29"
ECGP_L4S = "tma2024-factors-ecgp-l4s-2026-11-29"
COMBINED = "tma2024-factors-combined-2026-11-29"
COMBINED_PARTS = "tma2024-factors-combined-parts-2026-11-29"
SCREAM2023_UML = "tma2024-factors-scream2023-uml-2026-11-29"
SCREAM2023_V2_UML = "tma2024-factors-scream2023-v2-uml-2026-11-29"

_CONSTANT = labels(queue="pfifo", encoder="constant")
_BE10 = labels(queue="htb-be-10-ceil-20")

#: Factors measured under drop-tail (either CCA), on simulated time but eCGP's (uml).
DROPTAIL: tuple[Factor, ...] = (
    Factor(
        "iperf3 in bursts of 4 x 128 KB",
        BURST,
        labels(queue="pfifo", burst="b4"),
        FACTORS,
        _CONSTANT,
    ),
    Factor(
        "iperf3 in bursts of 16 x 128 KB",
        BURST,
        labels(queue="pfifo", burst="b16"),
        FACTORS,
        _CONSTANT,
    ),
    Factor(
        "eCGP's proxy, race mended (uml)",
        ECGP_FIXED,
        labels(queue="pfifo"),
        UML,
        labels(queue="pfifo"),
    ),
    Factor("Ericsson's SCReAM c8f84c3", ERICSSON, labels(queue="pfifo"), FACTORS, _CONSTANT),
    Factor(
        "the hosts' offloads, iperf3 in bursts of 4 x 128 KB and eCGP's mended proxy (uml)",
        COMBINED,
        (),
        ECGP_FIXED,
        labels(queue="pfifo"),
    ),
    Factor(
        "the hosts' offloads and eCGP's mended proxy (uml)",
        COMBINED_PARTS,
        labels(part="offloads"),
        ECGP_FIXED,
        labels(queue="pfifo"),
    ),
    Factor(
        "iperf3 in bursts of 4 x 128 KB and eCGP's mended proxy (uml)",
        COMBINED_PARTS,
        labels(part="bursts"),
        ECGP_FIXED,
        labels(queue="pfifo"),
    ),
    Factor("the hosts' offloads on", OFFLOADS, labels(queue="pfifo"), FACTORS, _CONSTANT),
    Factor("CBR-like encoder", FACTORS, labels(queue="pfifo", encoder="cbr"), FACTORS, _CONSTANT),
    Factor(
        "frame-size model encoder",
        FACTORS,
        labels(queue="pfifo", encoder="model"),
        FACTORS,
        _CONSTANT,
    ),
)
#: Factors measured under the HTB (either CCA).
HTB_FACTORS: tuple[Factor, ...] = (
    Factor(
        "best effort guaranteed 1, not 10 Mbit/s",
        BE_RATE,
        labels(queue="htb-be-1-ceil-20"),
        BE_RATE,
        _BE10,
    ),
    Factor("the hosts' offloads on", OFFLOADS, _BE10, BE_RATE, _BE10),
    Factor("iperf3 in bursts of 4 x 128 KB", BURST, (*_BE10, ("burst", "b4")), BE_RATE, _BE10),
    Factor("iperf3 in bursts of 16 x 128 KB", BURST, (*_BE10, ("burst", "b16")), BE_RATE, _BE10),
    Factor("best effort borrowing up to 50, model frames", CEIL50, (), SIM, ()),
    Factor(
        "best effort borrowing up to 50 (guaranteed 20)",
        FACTORS,
        labels(queue="htb-ceil-50", encoder="constant"),
        FACTORS,
        labels(queue="htb-ceil-20", encoder="constant"),
    ),
    Factor("64 KB token buckets (uml, real time)", BUCKETS, (), KERNEL_BE10, ()),
)
#: Factors measured under DualPI2 (either CCA): the CG sender's SCReAM revision.
L4S_FACTORS: tuple[Factor, ...] = (
    Factor(
        "SCReAM's L4S filter gain 1/16 (aca6556's)",
        SCREAM2023,
        labels(sender="alpha16"),
        SCREAM2023,
        labels(sender="default"),
    ),
    Factor(
        "Ericsson's aca6556 programs, V1 build",
        SCREAM2023,
        labels(sender="aca6556"),
        SCREAM2023,
        labels(sender="default"),
    ),
    Factor(
        "eCGP's proxy, race mended (uml: the paper's sender)",
        ECGP_L4S,
        labels(sender="ecgp-fixed"),
        ECGP_L4S,
        labels(sender="cga-cg"),
    ),
    Factor(
        "our --profile ericsson-2023 (uml)",
        SCREAM2023_UML,
        labels(sender="ericsson-2023"),
        ECGP_L4S,
        labels(sender="cga-cg"),
    ),
    Factor(
        "Ericsson's aca6556 programs, V1 build (uml)",
        SCREAM2023_UML,
        labels(sender="aca6556"),
        ECGP_L4S,
        labels(sender="cga-cg"),
    ),
    Factor(
        "Ericsson's aca6556 programs, V2 build (uml: eCGP's controller)",
        SCREAM2023_V2_UML,
        labels(sender="aca6556-v2"),
        ECGP_L4S,
        labels(sender="cga-cg"),
    ),
    Factor(
        "our --profile ericsson-2023, one packet at a time (uml: the proxy's loop)",
        SCREAM2023_V2_UML,
        labels(sender="e2023-b0"),
        ECGP_L4S,
        labels(sender="cga-cg"),
    ),
)
#: The competing BBR's version, under every queue (BBR cells only): ours is BBRv1.
BBR_VERSION: tuple[Factor, ...] = (
    Factor("BBRv2 (the paper's) for BBRv1", BBR2, labels(bbr="bbr2"), SIM, ()),
    Factor("BBRv3 for BBRv1", BBR3, labels(bbr="bbr3"), SIM, ()),
)


# The paper's set-up (TMA 2024 IV): a 50 Mbit/s link, drop-tail and best effort's pfifo of
# 250 packets; a full-size packet is 1,514 bytes on the wire.
LINK_MBPS = 50.0
QUEUE_PACKETS = 250
PACKET_BYTES = 1514
DT_BOUND_MS = drain_ms(QUEUE_PACKETS, PACKET_BYTES, LINK_MBPS)
THRESHOLDS_MS = (10.0, 20.0, 50.0, 100.0)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.0f} %"


def droptail_reason(role: str, cca: str) -> str:
    """The drop-tail queue's arithmetic on the paper's delay cell of ``role`` and ``cca``:
    how full the queue was on average, and whether the paper's spread fits in it."""
    mean, std = (paper(role, m, DT, cca) for m in ("delay_mean_ms", "delay_std_ms"))
    over = {t: paper(role, f"pct_delay_over_{t:.0f}ms", DT, cca) for t in THRESHOLDS_MS}
    most = max_std_ms(mean, over, DT_BOUND_MS)
    head = (
        f"{QUEUE_PACKETS} packets of {PACKET_BYTES:,} B drain in {DT_BOUND_MS:.1f} ms at "
        f"{LINK_MBPS:.0f} Mbit/s: the paper's {mean} ms is that queue "
        f"{_pct(mean / DT_BOUND_MS)} full on average"
    )
    if std > most:
        return (
            f"{head}, and its standard deviation, {std} ms, exceeds the {most:.1f} ms that "
            f"any delays of at most {DT_BOUND_MS:.1f} ms with its mean and its shares over "
            "10, 20 and 50 ms can have: the paper's cell cannot come from 250 packets of "
            "the wire's size, so nothing is tuned towards it on that queue; 250 TCP "
            "super-packets (the hosts' offloads) hold more, and with eCGP's proxy (with or "
            "without iperf3's bursts) they reach it on uml, but on sim the same offloads "
            "double HTB Cubic's TCP delay, past the paper's: no one set-up of the hosts "
            "measured gives both queues"
        )
    return f"{head} (its standard deviation, {std} ms, fits: at most {most:.1f})"


_BBR2 = (
    "the paper's BBR is v2 (out of tree, ECN off); mainline Linux has only v1, which this "
    "Table II ran; v2 and v3 run on kernels built from Google's code (their own datasets)"
)
BBR_WHY = _BBR2
_HTB_TCP_RATE = paper("competitor", "bitrate_mean_mbps", HTB, "cubic")
_HTB_TCP_DELAY = paper("competitor", "delay_mean_ms", HTB, "cubic")
_HTB_TCP_BOUND = drain_ms(QUEUE_PACKETS, PACKET_BYTES, _HTB_TCP_RATE)
_L4S_TOTAL = {
    k: paper("cg", "bitrate_mean_mbps", L4S, k) + paper("competitor", "bitrate_mean_mbps", L4S, k)
    for k in ("cubic", "bbr")
}

DT_CUBIC_WHY = droptail_reason("cg", "cubic")
_HTB_CG = {k: paper("cg", "delay_mean_ms", HTB, k) for k in ("cubic", "bbr")}
HTB_BBR_CG_WHY = (
    f"the paper's BBR cell is {_HTB_CG['cubic'] / _HTB_CG['bbr']:.1f}"
    " times under its Cubic one though the CG class, served first, does not see which TCP "
    "runs; every factor measured moves our two cells together, so no one set-up gives "
    "both, and one run per cell in the paper gives no spread to tell them apart"
)
HTB_CUBIC_TCP_WHY = (
    f"best effort's {QUEUE_PACKETS}-packet pfifo drains in {_HTB_TCP_BOUND:.0f} ms at the "
    f"paper's TCP rate ({_HTB_TCP_RATE} Mbit/s): its {_HTB_TCP_DELAY} ms is that queue "
    f"{_pct(_HTB_TCP_DELAY / _HTB_TCP_BOUND)} full on average; the paper gives nothing else "
    "of the class that would keep Cubic's queue emptier (its limit, 250 packets, is ours)"
)
L4S_CG_DELAY_WHY = (
    "a sub-millisecond L-queue delay is what the sender's own spacing of packets leaves "
    "in DualPI2, which the paper does not give (its encoder's frame sizes, its pacing); "
    "its SCReAM revision is measured"
)
L4S_BBR_WHY = (
    f"DualPI2's split between SCReAM and TCP is the competing CCA's answer to the classic "
    f"queue's signals: {_BBR2}"
)
L4S_CUBIC_WHY = (
    f"the paper's CG and TCP rates add to {_L4S_TOTAL['cubic']:.2f} of {LINK_MBPS:.0f} "
    f"Mbit/s (its link {_pct(1 - _L4S_TOTAL['cubic'] / LINK_MBPS)} idle against Cubic); "
    "DualPI2 was 'left by default' without saying whose defaults, and what idled the link "
    "is not said; the paper's own sender, eCGP's proxy, brings both rates within 25 % on "
    "uml, with the link full"
)

ENTRIES: tuple[OutEntry, ...] = (
    # Table II's cells outside the target.
    OutEntry(Cell("cg", "delay_mean_ms", DT, "cubic"), DROPTAIL, DT_CUBIC_WHY),
    OutEntry(
        Cell("cg", "delay_mean_ms", DT, "bbr"),
        DROPTAIL + BBR_VERSION,
        droptail_reason("cg", "bbr") + f"; {_BBR2}",
    ),
    OutEntry(
        Cell("competitor", "delay_mean_ms", DT, "cubic"),
        DROPTAIL,
        droptail_reason("competitor", "cubic"),
    ),
    OutEntry(Cell("cg", "delay_mean_ms", HTB, "bbr"), HTB_FACTORS + BBR_VERSION, HTB_BBR_CG_WHY),
    OutEntry(Cell("competitor", "delay_mean_ms", HTB, "cubic"), HTB_FACTORS, HTB_CUBIC_TCP_WHY),
    OutEntry(Cell("competitor", "delay_mean_ms", HTB, "bbr"), HTB_FACTORS + BBR_VERSION, BBR_WHY),
    OutEntry(Cell("cg", "delay_mean_ms", L4S, "cubic"), L4S_FACTORS, L4S_CG_DELAY_WHY),
    OutEntry(Cell("cg", "delay_mean_ms", L4S, "bbr"), L4S_FACTORS + BBR_VERSION, L4S_CG_DELAY_WHY),
    OutEntry(Cell("cg", "bitrate_mean_mbps", L4S, "bbr"), L4S_FACTORS + BBR_VERSION, L4S_BBR_WHY),
    OutEntry(Cell("competitor", "delay_mean_ms", L4S, "cubic"), L4S_FACTORS, L4S_CUBIC_WHY),
    OutEntry(
        Cell("competitor", "delay_mean_ms", L4S, "bbr"), L4S_FACTORS + BBR_VERSION, L4S_BBR_WHY
    ),
    OutEntry(Cell("competitor", "bitrate_mean_mbps", L4S, "cubic"), L4S_FACTORS, L4S_CUBIC_WHY),
    OutEntry(
        Cell("competitor", "bitrate_mean_mbps", L4S, "bbr"), L4S_FACTORS + BBR_VERSION, L4S_BBR_WHY
    ),
    # The claims that do not hold, each with the cell that keeps it out.
    OutEntry(
        Cell("cg", "pct_delay_over_20ms", DT, "cubic"),
        DROPTAIL,
        DT_CUBIC_WHY,
        "droptail_bufferbloat",
    ),
    OutEntry(
        Cell("cg", "delay_mean_ms", DT, "cubic"),
        DROPTAIL,
        DT_CUBIC_WHY,
        "droptail_bbr_less_cg_delay",
    ),
    OutEntry(
        Cell("cg", "bitrate_q1_mbps", DT, "bbr"),
        DROPTAIL + BBR_VERSION,
        BBR_WHY,
        "droptail_bbr_cg_q1",
    ),
    OutEntry(
        Cell("cg", "delay_mean_ms", DT, "cubic"), DROPTAIL, DT_CUBIC_WHY, "droptail_shared_delay"
    ),
    OutEntry(
        Cell("cg", "pct_delay_over_50ms", DT, "cubic"),
        DROPTAIL,
        DT_CUBIC_WHY,
        "droptail_bbr_delay_bounded",
    ),
    OutEntry(
        Cell("competitor", "delay_mean_ms", HTB, "bbr"),
        HTB_FACTORS + BBR_VERSION,
        BBR_WHY,
        "htb_tcp_pays",
    ),
    OutEntry(
        Cell("competitor", "delay_mean_ms", HTB, "bbr"),
        HTB_FACTORS + BBR_VERSION,
        BBR_WHY,
        "htb_bbr_less_tcp_delay",
    ),
    OutEntry(
        Cell("competitor", "delay_mean_ms", L4S, "cubic"),
        L4S_FACTORS,
        L4S_CUBIC_WHY,
        "l4s_tcp_delay_below_htb",
    ),
    OutEntry(
        Cell("competitor", "bitrate_mean_mbps", L4S, "cubic"),
        L4S_FACTORS,
        L4S_CUBIC_WHY,
        "l4s_tcp_rate_below_htb",
    ),
    OutEntry(
        Cell("cg", "bitrate_mean_mbps", L4S, "bbr"),
        L4S_FACTORS + BBR_VERSION,
        L4S_BBR_WHY,
        "l4s_bbr_balanced",
    ),
)


def factor_datasets() -> tuple[str, ...]:
    """Every published dataset the entries read, in first-mention order."""
    names = (n for e in ENTRIES for f in e.factors for n in (f.dataset, f.baseline_dataset))
    return tuple(dict.fromkeys(names))
