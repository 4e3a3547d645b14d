"""Reading and matching speed on ~2 million packet dual-point pairs, next to dpkt.

    python -m benchmarks.bench_capture [--packets 2000000] [--dpkt-packets 200000]
    python -m benchmarks.bench_capture --pair-packets 100000000 [--tmpdir DIR | --pair-dir DIR]

Generates synthetic ingress/egress pairs of two traffic mixes (snaplen 128, RTP + TCP +
UDP through a model bottleneck; `benchmarks.capture_pairs`: mix A, three flows; mix B,
600 flows with drops, duplicates, retransmissions and reordering), warms the page cache,
then prints for each mix:
- the whole command as a user runs it: `cganalysis packets INGRESS EGRESS -o OUT` in a
  fresh process (start-up, reading, matching, writing parquet), packets of both captures
  per second next to dpkt's, with its peak memory (bytes per packet); writing new tables,
  as the workflow does, and once more over existing ones; and the start-up alone
  (`cganalysis --help`);
- per stage, packets per second for:
- the native reader alone (columns) and the whole `read_capture` (typed table with RTP
  classification), the issue's target being 10 M packets/s per core;
- dpkt parsing the same file (object parsing of Ethernet/IP/UDP/TCP, the same fields),
  on its first `--dpkt-packets` packets because it is ~100x slower;
- the in-memory command's native steps (`cga_core::table`, as it times them: reading both
  captures, RTP streams, identity keys, pairing, the tables) and its Parquet writer;
- the streaming command's steps (`cga_core::streaming`, as it times them): the first
  pass (over the ingress capture; over both when the egress one is pcapng or out of
  order beyond a chunk), the matching pass (reading both, pairing, writing the tables)
  and the flow table with the footers;
- for comparison, the whole-capture matcher (identity keys and pairing) in memory;
- whether the streamed tables are the in-memory ones byte for byte, and what the packet
  table holds (rows, RTP, lost and unknown);
- at the end, the disk's own read rate for the capture files (their pages dropped from
  the page cache first): the physical limit of a command reading them cold.
Each figure is the median of `--repeat` runs; the whole command's runs (in memory and
streaming) and dpkt's take turns, round after round, so that the ratios compare runs made
under the same conditions. Each timed run of the command follows an untimed one; on a
virtual machine that hands freed memory back to its host, the untimed run follows a pause
and is printed too, as a first run after a pause (`benchmarks.command_runs` says why).

`--pair-packets N` instead generates a pair of N ingress packets (and their egress twins)
slice by slice into a temporary folder (`--tmpdir`; about 150 bytes a packet each; or
`--pair-dir DIR`, where it is kept and measured again by the next run with the same N)
and measures only the whole command (peak memory, bytes per packet) next to dpkt on the
first `--dpkt-packets` packets (timed before, between and after the command's runs, the
median): what memory does as the captures outgrow it, and what the disk does as they
outgrow the page cache. The command runs once cold (the pair's pages dropped from the
page cache first: a pair just copied in, or written long ago), then as above (after an
untimed run: what a run leaves in the page cache helps the next, as it does a user's
second command on the same pair), and once more for the time of each of its steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpkt  # type: ignore[import-untyped,unused-ignore]
import polars as pl

from benchmarks.capture_pairs import (
    disk_read_rate,
    generate_pair,
    mix_a,
    mix_b,
    uncache,
    write_pair,
)
from benchmarks.command_runs import Runs, medians, reports_free_memory, run_process, whole_command
from cganalysis import _native
from cganalysis.capture import read_capture
from cganalysis.capture.chunks import CaptureChunks
from cganalysis.matching.pairing import pair_packets
from cganalysis.matching.streaming import match_to_files


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def dpkt_read(path: Path, limit: int) -> int:
    """The reference: dpkt objects, extracting what our reader extracts."""
    rows = []
    with path.open("rb") as fh:
        for i, (ts, buf) in enumerate(dpkt.pcap.Reader(fh)):
            if i >= limit:
                break
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP):
                continue
            l4 = ip.data
            row: tuple[Any, ...] = (ts, ip.src, ip.dst, ip.p, ip.id, ip.len, ip.tos, ip.ttl)
            if isinstance(l4, dpkt.tcp.TCP):
                row += (l4.sport, l4.dport, l4.seq, l4.ack, l4.flags)
            elif isinstance(l4, dpkt.udp.UDP):
                row += (l4.sport, l4.dport)
            rows.append(row)
    return min(limit, i + 1)


def _chunked_read(path: Path) -> int:
    return sum(chunk.height for chunk in CaptureChunks(path))


def _in_memory_pairing(ingress: Path, egress: Path, repeat: int) -> tuple[float, int]:
    """The whole-capture matcher's keys and pairing (seconds) and the egress packets."""
    ing, eg = read_capture(ingress), read_capture(egress)
    t, _ = timed(lambda: pair_packets(ing.packets, eg.packets, 2_000_000_000), repeat)
    return t, eg.packets.height


_STAGES_PROBE = """
import json, sys, time
from cganalysis import _native
ingress, egress, out = sys.argv[1:4]
tables, result = _native.match_pair(ingress, egress, 2_000_000_000)
assert tables is not None, result.get("error")
start = time.perf_counter()
tables.write(out, out + ".eo", "")
stages = {**result["stages_s"], "write Parquet (both tables)": time.perf_counter() - start}
print(json.dumps(stages))
"""


def _native_stages(
    ingress: Path, egress: Path, n_both: int, repeat: int
) -> list[tuple[str, int, float]]:
    """The steps of the command's in-memory path (`cga_core::table`, then the Parquet
    writer), each as the native side times it: (what, packets, median seconds). Each run
    is a fresh process, as the command is (after one untimed run, see `whole_command`):
    repeated in one process, the steps' figures depend on what earlier runs left."""
    argv = [sys.executable, "-c", _STAGES_PROBE, str(ingress), str(egress)]
    argv.append(str(ingress.with_name("n.parquet")))
    runs: list[dict[str, float]] = []
    for i in range(repeat + 1):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the native stages failed:\n{done.stderr}")
        if i > 0:
            runs.append(json.loads(done.stdout))
    return [
        (f"native: {name}", n_both, statistics.median(r[name] for r in runs)) for name in runs[0]
    ]


def stages(ingress: Path, egress: Path, args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """Per-stage figures, in this process: (what, packets, median seconds)."""
    n_in = read_capture(ingress).packets.height
    rows: list[tuple[str, int, float]] = []
    t, _ = timed(lambda: _native.read_capture(str(ingress)), args.repeat)
    rows.append(("native reader (columns)", n_in, t))
    t, ing = timed(lambda: read_capture(ingress), args.repeat)
    rows.append(("read_capture (typed table)", n_in, t))
    n_dpkt = min(args.dpkt_packets, n_in)
    t, _ = timed(lambda: dpkt_read(ingress, n_dpkt), max(1, args.repeat // 2))
    rows.append((f"dpkt (first {n_dpkt:,} packets)", n_dpkt, t))
    t, _ = timed(lambda: _chunked_read(ingress), args.repeat)
    rows.append(("chunked reader (typed chunks)", n_in, t))
    del ing
    t, n_out = _in_memory_pairing(ingress, egress, args.repeat)
    n_both = n_in + n_out
    rows.append(("in memory: keys + pairing", n_in, t))
    rows += _native_stages(ingress, egress, n_both, args.repeat)
    out = ingress.with_name("stage.parquet")
    steps: list[dict[str, float]] = []
    for _ in range(args.repeat):
        steps.append({})
        match_to_files(
            ingress,
            egress,
            out,
            out.with_name("stage.egress-only.parquet"),
            flows=out.with_name("stage.flows.parquet"),
            timings=steps[-1],
        )
    # The egress capture (classic pcap, in order) is read only in the matching pass.
    first = "both captures" if any(s["egress_first_pass"] for s in steps) else "ingress capture"
    for name, what in (
        ("prescan", f"streaming: first pass ({first})"),
        ("matching", "streaming: matching pass (read, pair, write)"),
        ("flows and footers", "streaming: flow table, footers"),
    ):
        rows.append((what, n_both, statistics.median(s[name] for s in steps)))
    return rows


def _count_records(path: Path) -> int:
    return sum(len(c) for c in _native_chunks(path))


def _native_chunks(path: Path) -> Any:
    reader = _native.CaptureChunks(str(path))
    while (chunk := reader.next_chunk(1 << 20)) is not None:
        yield chunk["columns"]["t_ns"]


# The streaming command's steps as the native side times them, in a process of its own
# set up as the command's (`cganalysis packets` keeps freed blocks).
_STREAM_STEPS_PROBE = """
import json, sys
from pathlib import Path
from cganalysis import _native
from cganalysis.matching.streaming import match_to_files
_native.keep_freed_blocks()
steps = {}
match_to_files(*(Path(a) for a in sys.argv[1:5]), timings=steps)
print(json.dumps(steps))
"""


def _stream_steps(ingress: Path, egress: Path, out: Path) -> dict[str, float]:
    """Seconds of each step of one streaming match (first pass, matching pass, footers)."""
    eg_only = out.with_name("steps.egress-only.parquet")
    argv = [sys.executable, "-c", _STREAM_STEPS_PROBE, str(ingress), str(egress), str(out)]
    done = subprocess.run([*argv, str(eg_only)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the streaming steps failed:\n{done.stderr}")
    steps: dict[str, float] = json.loads(done.stdout)
    return steps


def _pair_in(folder: Path, packets: int) -> tuple[Path, Path, int]:
    """The pair of ``packets`` ingress packets in ``folder`` and the packets of both
    captures: generated there unless a pair of that size already is (``pair.json`` says
    so, and how many packets both hold)."""
    ingress, egress, marker = folder / "ingress.pcap", folder / "egress.pcap", folder / "pair.json"
    made = json.loads(marker.read_text()) if marker.exists() else {}
    if made.get("ingress_packets") == packets and ingress.exists() and egress.exists():
        print(f"the pair of {packets:,} ingress packets in {folder}, generated before")
        return ingress, egress, int(made["packets_both"])
    marker.unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    print(f"generating a pair of {packets:,} ingress packets in {folder} ...", flush=True)
    start = time.perf_counter()
    generate_pair(folder, packets)
    print(f"generated in {time.perf_counter() - start:.0f} s", flush=True)
    n_both = _count_records(ingress) + _count_records(egress)
    marker.write_text(json.dumps({"ingress_packets": packets, "packets_both": n_both}))
    return ingress, egress, n_both


def big_pair(args: argparse.Namespace) -> None:
    """The whole command on a generated pair of ``--pair-packets`` ingress packets, cold and
    after an untimed run, next to dpkt timed before, between and after them."""
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        folder = args.pair_dir or Path(tmp)
        ingress, egress, n_both = _pair_in(folder, args.pair_packets)
        size_gb = (ingress.stat().st_size + egress.stat().st_size) / 1e9
        print(f"{n_both:,} packets ({size_gb:.1f} GB)", flush=True)
        n_dpkt = args.dpkt_packets
        dpkt_s = [timed(lambda: dpkt_read(ingress, n_dpkt), 1)[0]]
        out = Path(tmp) / "out.parquet"
        uncache((ingress, egress))
        cold = whole_command(ingress, egress, out, 1, warm=False)
        dpkt_s.append(timed(lambda: dpkt_read(ingress, n_dpkt), 1)[0])
        warm = whole_command(ingress, egress, out, args.repeat)
        dpkt_s.append(timed(lambda: dpkt_read(ingress, n_dpkt), 1)[0])
        steps = _stream_steps(ingress, egress, Path(tmp) / "steps.parquet")
        disk = disk_read_rate((ingress, egress)) if args.disk else float("nan")
    reference = n_dpkt / statistics.median(dpkt_s)
    print(f"\nwhole `cganalysis packets` on {n_both:,} packets of both captures:")
    for what, runs in (("cold", cold), ("after a run", warm)):
        wall, peak = runs.wall_s, runs.peak_bytes
        print(
            f"  {what}: {wall:.1f} s, {n_both / wall / 1e6:.2f} M packets/s, "
            f"{n_both / wall / reference:,.0f}x dpkt; CPU (user + sys, all threads) "
            f"{runs.cpu_s:.1f} s (system {runs.sys_s:.1f} s); peak memory {peak / 1e6:,.0f} MB "
            f"({peak / n_both:,.1f} bytes a packet)"
        )
    print(
        f"  where the time goes (one more run after those): first pass "
        f"({'both captures' if steps['egress_first_pass'] else 'ingress capture'}) "
        f"{steps['prescan']:.1f} s, matching pass (both, pairing, writing) "
        f"{steps['matching']:.1f} s, footers {steps['flows and footers']:.1f} s"
    )
    rates = ", ".join(f"{n_dpkt / t / 1e6:.3f}" for t in dpkt_s)
    print(f"dpkt (first {n_dpkt:,} packets): {reference / 1e6:.3f} M packets/s ({rates})")
    if args.disk:
        rate = f"{disk / 1e6:,.0f} MB/s cold ({size_gb * 1e9 / disk:.1f} s)"
        print(f"the disk reads the captures at {rate}")


def _table_mix(packets: Path) -> str:
    """What the packet table holds: its rows, and how many are RTP, lost or unknown (a
    pair whose RTP flow the classifier does not take for one measures no RTP path)."""
    table = pl.read_parquet(packets, columns=["rtp_ssrc", "lost"])
    rtp = table["rtp_ssrc"].is_not_null().sum()
    lost, unknown = table["lost"].eq(True).sum(), table["lost"].null_count()
    return f"{table.height:,} rows, {rtp:,} RTP, {lost:,} lost, {unknown:,} unknown"


def _same_bytes(a: Path, b: Path) -> bool:
    names = ("out.parquet", "out.egress-only.parquet")
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def _print_first_runs(n_both: int, reference: float, whole: Runs, streamed: Runs) -> None:
    """The untimed runs before the timed ones: each the first after a pause long enough
    for this machine to hand the memory freed before it back to its host (what a user's
    single command meets here; see `benchmarks.command_runs`)."""
    figures = (
        f"{runs.first_wall_s:.3f} s, {n_both / runs.first_wall_s / reference:,.0f}x {how}"
        for how, runs in (("in memory", whole), ("streaming", streamed))
    )
    print(f"a first run after a pause (freed memory back with the host): {'; '.join(figures)}")


def measure_mix(
    name: str, pair: tuple[pl.DataFrame, pl.DataFrame], args: argparse.Namespace
) -> float:
    """Prints one mix's figures; returns its pair's bytes (for the disk's rate)."""
    n_both = pair[0].height + pair[1].height
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ingress, egress = write_pair(folder, pair)
        size = ingress.stat().st_size + egress.stat().st_size
        print(f"mix {name}: {n_both:,} packets in both captures, {size / 1e6:.0f} MB", flush=True)
        ingress.read_bytes()  # into the page cache
        egress.read_bytes()
        rows: list[tuple[str, int, float]] = []
        if name == "A" or args.all_stages:
            rows = stages(ingress, egress, args)
        n_in = pair[0].height
        n_dpkt = min(args.dpkt_packets, n_in)
        (folder / "mem").mkdir()
        (folder / "stream").mkdir()
        forced = ("--stream-above-mb", "0")
        # The command in memory, streaming, and the reference in turn, round after round:
        # whatever else the machine does then weighs on all three alike (dpkt timed once
        # apart from them swung by a quarter from one run of this benchmark to the next).
        # Each timed run of the command follows an untimed one, as whole_command says why.
        rounds = []
        for _ in range(args.repeat):
            mem = whole_command(ingress, egress, folder / "mem" / "out.parquet", 1)
            stream = whole_command(ingress, egress, folder / "stream" / "out.parquet", 1, forced)
            t_dpkt, _ = timed(lambda: dpkt_read(ingress, n_dpkt), 1)
            rounds.append((mem, stream, t_dpkt))
        whole = medians([r[0] for r in rounds])
        streamed = medians([r[1] for r in rounds])
        reference = n_dpkt / statistics.median(r[2] for r in rounds)
        rows.append(("whole `cganalysis packets` (both)", n_both, whole.wall_s))
        rows.append(("  the same, streaming (forced)", n_both, streamed.wall_s))
        same = _same_bytes(folder / "mem", folder / "stream")
        holds = _table_mix(folder / "mem" / "out.parquet")
        disk = disk_read_rate((ingress, egress)) if args.disk else float("nan")
    print(f"\nmix {name}")
    print(f"{'what':<44} {'packets':>11} {'seconds':>9} {'M packets/s':>12}")
    for what, n, seconds in rows:
        print(f"{what:<44} {n:>11,} {seconds:>9.3f} {n / seconds / 1e6:>12.2f}")
    print(
        f"dpkt (first {n_dpkt:,} packets, this run, in turn with the command): "
        f"{reference / 1e6:.3f} M packets/s"
    )
    print(f"whole command / dpkt: {n_both / whole.wall_s / reference:,.0f}x (target 80x)")
    print(f"streaming (forced) / dpkt: {n_both / streamed.wall_s / reference:,.0f}x (target 60x)")
    if reports_free_memory():
        _print_first_runs(n_both, reference, whole, streamed)
    print(f"streamed tables are the in-memory ones byte for byte: {same}")
    print(f"the packet table: {holds}")
    for how, runs in (("", whole), (" streaming", streamed)):
        print(
            f"peak memory{how}: {runs.peak_bytes / 1e6:,.0f} MB "
            f"({runs.peak_bytes / n_both:,.0f} bytes per packet); CPU {runs.cpu_s:.2f} s "
            f"(system {runs.sys_s:.2f} s)"
        )
    if args.disk:
        print(
            f"the disk reads these captures at {disk / 1e6:,.0f} MB/s cold: "
            f"{n_both / (size / disk) / 1e6:.2f} M packets/s ({size / disk:.2f} s)"
        )
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--dpkt-packets", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mix", choices=("A", "B", "both"), default="both")
    parser.add_argument("--all-stages", action="store_true", help="per-stage figures of mix B too")
    parser.add_argument("--no-disk", dest="disk", action="store_false", help="skip the cold read")
    parser.add_argument(
        "--pair-packets", type=int, help="only the whole command, on a pair this large"
    )
    parser.add_argument("--tmpdir", type=Path, help="where --pair-packets writes the pair")
    parser.add_argument(
        "--pair-dir", type=Path, help="where --pair-packets keeps the pair (made if absent)"
    )
    args = parser.parse_args()
    if args.tmpdir is not None and not args.tmpdir.is_dir():
        parser.error(f"--tmpdir {args.tmpdir}: no such directory (make it, or name another)")
    if args.pair_packets:
        big_pair(args)
        return
    help_argv = [sys.executable, "-m", "cganalysis.cli", "--help"]
    startup = statistics.median(run_process(help_argv) for _ in range(args.repeat))
    print(f"start-up (cganalysis --help): {startup:.3f} s (target < 0.3 s)")
    for name, make in (("A", mix_a), ("B", mix_b)):
        if args.mix in (name, "both"):
            print(f"generating mix {name}, {args.packets:,} ingress packets ...", flush=True)
            measure_mix(name, make(args.packets), args)


if __name__ == "__main__":
    main()
