"""``cganalysis cg send|receive|frames-from-capture``: the CG traffic generator.

``send`` and ``receive`` run the native ``cga-cg`` binary and keep its logs as parquet in
``--log DIR``; ``frames-from-capture`` rebuilds a frame-size trace from a capture of an RTP
video flow, for ``send --frames``. Details: docs/cg.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import find_binary
from cganalysis.cg.options import CCS, ECNS, NUM_REPORTS, ReceiveOptions, SendOptions
from cganalysis.cg.runner import run_generator
from cganalysis.commands import COMMANDS


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cg",
        help=COMMANDS["cg"],
        description=(
            "Run the cloud-gaming traffic generator (the native cga-cg binary; bash "
            "scripts/install.sh installs it): an RTP/UDP video sender driven by a congestion "
            "controller, and a receiver returning RFC 8888 feedback. Logs are kept as "
            "parquet in --log DIR. See docs/cg.md."
        ),
    )
    cg_sub = p.add_subparsers(dest="cg_command", required=True, metavar="SUBCOMMAND")

    s = cg_sub.add_parser(
        "send",
        help="send RTP video to DEST_IP:PORT",
        description="Send RTP video whose bitrate the chosen controller drives.",
    )
    s.add_argument("dest", metavar="DEST_IP:PORT", help="receiver address")
    s.add_argument("--cc", choices=CCS, default="scream", help="rate controller (default scream)")
    s.add_argument(
        "--ecn",
        choices=ECNS,
        help="ECN codepoint (default ect1 for scream, i.e. its L4S mode; none otherwise)",
    )
    s.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    s.add_argument("--min-mbps", type=float, default=0.5, help="encoder minimum (default 0.5)")
    s.add_argument("--start-mbps", type=float, default=10.0, help="start bitrate (default 10)")
    s.add_argument("--max-mbps", type=float, default=30.0, help="encoder maximum (default 30)")
    s.add_argument("--rate-mbps", type=float, help="constant rate of --cc none (default max)")
    s.add_argument("--gtfrc-target-mbps", type=float, help="gTFRC target rate g (default min)")
    s.add_argument("--fps", type=float, default=60.0, help="frame rate (default 60)")
    s.add_argument("--frames", type=Path, metavar="TRACE.csv", help="replay a frame-size trace")
    s.add_argument("--qdelay-target-ms", type=float, help="SCReAM queue delay target (60)")
    s.add_argument(
        "--num-reports", choices=NUM_REPORTS, default="count", help="RFC 8888 num_reports meaning"
    )
    s.add_argument("--seed", type=int, help="random seed of the encoder model")
    s.add_argument("--bind", metavar="IP:PORT", help="local address")
    s.add_argument("--log", type=Path, required=True, metavar="DIR", help="log directory")
    s.add_argument(
        "--cga-cg-args",
        default="",
        metavar="'ARGS'",
        help="further cga-cg send options, quoted as one string (see cga-cg send --help)",
    )
    s.set_defaults(run=run_send)

    r = cg_sub.add_parser(
        "receive",
        help="receive RTP video on LISTEN_IP:PORT and send feedback",
        description="Receive RTP video, send RFC 8888 feedback (and TFRC reports), log frames.",
    )
    r.add_argument("listen", metavar="LISTEN_IP:PORT", help="address to listen on")
    r.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    r.add_argument(
        "--num-reports", choices=NUM_REPORTS, default="count", help="RFC 8888 num_reports meaning"
    )
    r.add_argument("--log", type=Path, required=True, metavar="DIR", help="log directory")
    r.add_argument(
        "--cga-cg-args",
        default="",
        metavar="'ARGS'",
        help="further cga-cg receive options, quoted as one string",
    )
    r.set_defaults(run=run_receive)

    f = cg_sub.add_parser(
        "frames-from-capture",
        help="frame-size trace of an RTP video flow in a capture",
        description=(
            "Rebuild the frame sizes of an RTP video stream from a capture (frames end at the "
            "marker bit or where the RTP timestamp changes) and write them as t_s,size_bytes "
            "CSV for `cganalysis cg send --frames`."
        ),
    )
    f.add_argument("capture", type=Path, help="pcap or pcapng file")
    f.add_argument("-o", "--output", type=Path, required=True, help="TRACE.csv to write")
    f.add_argument("--ssrc", type=lambda v: int(v, 0), help="RTP SSRC (default: largest stream)")
    f.add_argument("--dport", type=int, help="UDP destination port of the stream")
    f.set_defaults(run=run_frames)


def _extra(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))


def run_send(args: argparse.Namespace) -> int:
    opts = SendOptions(
        dest=args.dest,
        log_dir=args.log,
        cc=args.cc,
        ecn=args.ecn,
        duration_s=args.duration,
        min_mbps=args.min_mbps,
        start_mbps=args.start_mbps,
        max_mbps=args.max_mbps,
        rate_mbps=args.rate_mbps,
        gtfrc_target_mbps=args.gtfrc_target_mbps,
        fps=args.fps,
        frames=args.frames,
        qdelay_target_ms=args.qdelay_target_ms,
        num_reports=args.num_reports,
        seed=args.seed,
        bind=args.bind,
        extra=_extra(args.cga_cg_args),
    )
    return _generate(opts, args.log)


def run_receive(args: argparse.Namespace) -> int:
    opts = ReceiveOptions(
        listen=args.listen,
        log_dir=args.log,
        duration_s=args.duration,
        num_reports=args.num_reports,
        extra=_extra(args.cga_cg_args),
    )
    return _generate(opts, args.log)


def _generate(opts: SendOptions | ReceiveOptions, log: Path) -> int:
    """Runs cga-cg with ``opts`` into the log directory ``log``, parquet logs out."""
    binary = find_binary()
    written = run_generator(lambda d: opts.argv(binary, d), log)
    print(f"wrote {', '.join(p.name for p in written)} in {log}", file=sys.stderr)
    return 0


def run_frames(args: argparse.Namespace) -> int:
    from cganalysis.cg.frames import frames_from_capture, write_trace  # polars: only here

    trace = frames_from_capture(args.capture, ssrc=args.ssrc, dport=args.dport)
    write_trace(trace, args.output)
    duration = trace["t_s"].max()
    assert isinstance(duration, float)
    total = int(trace["size_bytes"].sum())
    rate = total * 8 / duration / 1e6 if duration > 0 else float("nan")
    print(
        f"{trace.height} frames over {duration:.2f} s ({rate:.2f} Mbit/s of RTP payload) "
        f"-> {args.output}",
        file=sys.stderr,
    )
    return 0
