"""A synthetic bottleneck with known truth: packets in, packets out, what happened to each.

Generates the ingress traffic of three flows (RTP video over UDP, TCP with
retransmissions, plain UDP), pushes it through a model queue that delays, drops,
reorders, duplicates and CE-marks packets, and keeps, for every ingress packet, when (if
ever) it left. The two sides are written as real pcap files for the matcher to solve.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from hypothesis import strategies as st

from cganalysis.capture.writer import SYNTHETIC_COLUMNS, write_pcap

T0_NS = 1_700_000_000_000_000_000
SRC, DST = 0x0A000001, 0x0A000002


@dataclass(frozen=True)
class Knobs:
    seed: int
    n_rtp: int = 60
    n_tcp: int = 60
    n_udp: int = 30
    p_drop: float = 0.1
    p_dup: float = 0.05
    p_retx: float = 0.05
    p_ce: float = 0.2
    base_delay_us: int = 2_000
    jitter_us: int = 3_000  # delays vary this much: packets overtake each other
    rtp_seq_start: int = 65_500  # near the 16-bit wrap
    ip_id_start: int = 65_500


@dataclass(frozen=True)
class Scenario:
    ingress: pl.DataFrame  # synthetic columns, ingress time order
    egress: pl.DataFrame  # synthetic columns, egress time order
    #: Per ingress packet: t_ns, group (copies of one packet share it), t_egress_ns (null if
    #: dropped), ecn_egress.
    truth: pl.DataFrame

    def write(self, folder: Path) -> tuple[Path, Path]:
        ingress, egress = folder / "ingress.pcap", folder / "egress.pcap"
        write_pcap(ingress, self.ingress)
        write_pcap(egress, self.egress)
        return ingress, egress


def _flows(k: Knobs, rng: np.random.Generator) -> pl.DataFrame:
    rtp = pl.DataFrame(
        {
            "proto": 17,
            "sport": 5000,
            "dport": 30002,
            "ip_id": rng.integers(0, 65536, k.n_rtp),  # random, as for unconnected sockets
            "size_bytes": rng.integers(100, 1241, k.n_rtp),
            "ecn": 1,
            "is_rtp": True,
            "rtp_ssrc": 0x1234ABCD,
            "rtp_seq": (k.rtp_seq_start + np.arange(k.n_rtp)) % 65536,
            "rtp_ts": (np.arange(k.n_rtp) // 4) * 1500,
            "rtp_marker": np.arange(k.n_rtp) % 4 == 3,
            "rtp_pt": 98,
            "payload_tag": np.arange(k.n_rtp),
        }
    )
    seq = 1_000 + np.arange(k.n_tcp) * 1448
    retx = rng.random(k.n_tcp) < k.p_retx
    # A retransmission repeats an earlier segment's seq and length with a new IP ID.
    seq = np.where(retx & (np.arange(k.n_tcp) > 3), seq - 3 * 1448, seq)
    tcp = pl.DataFrame(
        {
            "proto": 6,
            "sport": 40_000,
            "dport": 5201,
            "ip_id": (k.ip_id_start + np.arange(k.n_tcp)) % 65536,
            "size_bytes": 1500,
            "ecn": 2,
            "tcp_seq": seq,
            "tcp_ack": 77,
            "tcp_flags": 0x10,
            "payload_tag": seq,
        }
    )
    udp = pl.DataFrame(
        {
            "proto": 17,
            "sport": 6000,
            "dport": 7000,
            "ip_id": (k.ip_id_start + 7 + np.arange(k.n_udp)) % 65536,
            "size_bytes": rng.integers(60, 1400, k.n_udp),
            "ecn": 0,
            "payload_tag": rng.integers(0, 3, k.n_udp),  # payloads repeat; IP ID tells apart
        }
    )
    table = pl.concat([rtp, tcp, udp], how="diagonal_relaxed")
    table = table[_interleaved([k.n_rtp, k.n_tcp, k.n_udp], rng)]
    defaults = {"src_ip": SRC, "dst_ip": DST, "ttl": 64, "dscp": 0}
    return pl.DataFrame(
        {
            name: (
                table[name].fill_null(0 if dtype is not pl.Boolean else False)
                if name in table.columns
                else pl.repeat(defaults.get(name, 0), table.height, eager=True)
            ).cast(dtype)
            for name, dtype in SYNTHETIC_COLUMNS.items()
            if name != "t_ns"
        }
    )


def _interleaved(sizes: list[int], rng: np.random.Generator) -> np.ndarray:
    """A row order that interleaves consecutive blocks of ``sizes`` rows (the flows) at
    random while each keeps its own order: a sender sends its packets in sequence. (A
    permutation of all rows shuffled each flow too, and no RTP stream survived the
    classifier's in-order rule: the matcher's RTP keys and wraps went untested.)"""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(labels)
    order = np.empty(labels.size, dtype=np.int64)
    start = 0
    for flow, size in enumerate(sizes):
        order[labels == flow] = np.arange(start, start + size)
        start += size
    return order


def make_scenario(k: Knobs) -> Scenario:
    rng = np.random.default_rng(k.seed)
    packets = _flows(k, rng)
    n = packets.height
    # Ingress times at least 2 us apart; some packets duplicated 1 us later.
    gaps = 2_000 + rng.exponential(200_000, n).astype(np.int64)
    t = T0_NS + np.cumsum(gaps)
    group = np.arange(n)
    dup = rng.random(n) < k.p_dup
    idx = np.sort(np.concatenate([np.arange(n), np.flatnonzero(dup)]))
    packets, t, group = packets[idx], t[idx], group[idx]
    t = t + (np.diff(np.concatenate([[-1], idx])) == 0) * 1_000
    packets = packets.with_columns(t_ns=pl.Series(t, dtype=pl.Int64))
    m = packets.height
    dropped = rng.random(m) < k.p_drop
    delay = (k.base_delay_us + rng.integers(0, k.jitter_us + 1, m)) * 1_000
    ecn_in = packets["ecn"].to_numpy()
    marked = (ecn_in > 0) & (ecn_in < 3) & (rng.random(m) < k.p_ce)
    ecn_out = np.where(marked, 3, ecn_in)
    truth = pl.DataFrame(
        {
            "t_ns": t,
            "group": group,
            "t_egress_ns": pl.Series(np.where(dropped, 0, t + delay)).set(pl.Series(dropped), None),
            "ecn_egress": pl.Series(ecn_out, dtype=pl.UInt8).set(pl.Series(dropped), None),
        }
    )
    egress = (
        packets.with_columns(
            t_ns=pl.Series(t + delay, dtype=pl.Int64),
            ecn=pl.Series(ecn_out, dtype=pl.UInt8),
            ttl=pl.col("ttl") - 1,  # a router decrements it: must not break matching
        )
        .filter(~pl.Series(dropped))
        .sort("t_ns", maintain_order=True)
        .select(list(SYNTHETIC_COLUMNS))
    )
    return Scenario(ingress=packets.select(list(SYNTHETIC_COLUMNS)), egress=egress, truth=truth)


def knobs_strategy(max_packets: int = 120, max_udp: int = 60) -> st.SearchStrategy[Knobs]:
    """Random scenarios for property tests: every kind of disorder the matcher must survive
    (drops, duplicates, retransmissions, CE marks, jitter, sequence and IP ID wraps)."""
    return st.builds(
        Knobs,
        seed=st.integers(0, 2**32 - 1),
        n_rtp=st.integers(0, max_packets),
        n_tcp=st.integers(0, max_packets),
        n_udp=st.integers(1, max_udp),
        p_drop=st.sampled_from([0.0, 0.05, 0.3]),
        p_dup=st.sampled_from([0.0, 0.05, 0.2]),
        p_retx=st.sampled_from([0.0, 0.1]),
        p_ce=st.sampled_from([0.0, 0.3]),
        jitter_us=st.sampled_from([0, 500, 5_000]),
        rtp_seq_start=st.sampled_from([0, 65_450, 65_535]),
        ip_id_start=st.sampled_from([0, 65_450, 65_535]),
    )
