"""The dual-point pairs `benchmarks.bench_capture` measures, and the disk's own read rate.

- **Mix A** (the benchmark's pair since 2026-11-24): one RTP, one TCP and one UDP flow
  in equal thirds through a model bottleneck, no duplicates, ~5,000 packets a second.
- **Mix B**: 200 such trios, each from its own source address, starting one after the
  other a twentieth of a trio's span apart (600 flows, about 20 trios at a time: ~100,000
  packets a second, the rate of a 1 Gbit/s link of mixed sizes), with the generator's
  default disorder: 10 % of the packets dropped, 5 %
  duplicated, 5 % of TCP segments retransmitted, 20 % CE marks, 3 ms of delay jitter
  (packets overtake each other at egress), RTP sequence numbers and IP IDs that wrap.
  More flows and more look-alike groups per packet: what a loaded testbed's pair has
  that mix A lacks.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import polars as pl

from cganalysis.capture.writer import pcap_header, pcap_records
from tests.support.synthetic import Knobs, make_scenario

#: Trios of flows side by side in mix B.
MIX_B_TRIOS = 200


def mix_a(packets: int, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    third = packets // 3
    sc = make_scenario(
        Knobs(seed=seed, n_rtp=third, n_tcp=third, n_udp=packets - 2 * third, p_dup=0.0)
    )
    return sc.ingress, sc.egress


def mix_b(packets: int, trios: int = MIX_B_TRIOS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """About ``packets`` ingress packets (duplicates add ~5 %) of ``trios`` trios of flows
    (see the module)."""
    per = packets // trios
    ingress, egress = [], []
    for k in range(trios):
        third = per // 3
        sc = make_scenario(Knobs(seed=100 + k, n_rtp=third, n_tcp=third, n_udp=per - 2 * third))
        t = sc.ingress["t_ns"]
        span = int(t.max()) - int(t.min())  # type: ignore[arg-type]
        shift = pl.col("t_ns") + k * span // 20
        src = pl.lit(0x0A010000 + k, pl.UInt32)
        ingress.append(sc.ingress.with_columns(shift, src_ip=src))
        egress.append(sc.egress.with_columns(shift, src_ip=src))
    return (
        pl.concat(ingress).sort("t_ns", maintain_order=True),
        pl.concat(egress).sort("t_ns", maintain_order=True),
    )


def write_pair(folder: Path, pair: tuple[pl.DataFrame, pl.DataFrame]) -> tuple[Path, Path]:
    paths = folder / "ingress.pcap", folder / "egress.pcap"
    for path, table in zip(paths, pair, strict=True):
        with path.open("wb") as out:
            out.write(pcap_header())
            out.write(pcap_records(table))
    return paths


def generate_pair(folder: Path, packets: int, slice_packets: int = 1_000_000) -> tuple[Path, Path]:
    """A mix A pair of ``packets`` ingress packets written slice by slice (memory of one
    slice): each slice a fresh scenario, shifted in time to follow the previous one."""
    ingress, egress = folder / "ingress.pcap", folder / "egress.pcap"
    shift = 0
    with ingress.open("wb") as fin, egress.open("wb") as feg:
        fin.write(pcap_header())
        feg.write(pcap_header())
        for s, start in enumerate(range(0, packets, slice_packets)):
            n = min(slice_packets, packets - start)
            ing, eg = mix_a(n, seed=s)
            t0 = int(ing["t_ns"].min())  # type: ignore[arg-type]
            offset = shift - t0 if s else 0
            fin.write(pcap_records(ing.with_columns(pl.col("t_ns") + offset)))
            feg.write(pcap_records(eg.with_columns(pl.col("t_ns") + offset)))
            shift = int(ing["t_ns"].max()) + offset + 1_000_000  # type: ignore[arg-type]
            print(f"  generated {start + n:,} of {packets:,} ingress packets", flush=True)
    return ingress, egress


def drop_from_page_cache(fd: int) -> None:
    """The file's pages written back, then dropped from the page cache: read cold next."""
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def uncache(paths: tuple[Path, ...]) -> None:
    """:func:`drop_from_page_cache` for each of ``paths``."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            drop_from_page_cache(fd)
        finally:
            os.close(fd)


def disk_read_rate(paths: tuple[Path, ...], block: int = 8 << 20) -> float:
    """Bytes per second reading ``paths`` from the disk itself: each file's pages dropped
    from the page cache first (written back, then POSIX_FADV_DONTNEED), then read in
    order. The physical limit of anything that reads them cold."""
    total, seconds = 0, 0.0
    buf = bytearray(block)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            drop_from_page_cache(fd)
            start = time.perf_counter()
            with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
                while n := f.readinto(buf):
                    total += n
            seconds += time.perf_counter() - start
        finally:
            os.close(fd)
    return total / seconds if seconds > 0 else float("nan")
