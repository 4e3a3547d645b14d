#!/usr/bin/env python3
"""The game-server side of eCGP's SCReAM proxy (``cg.source: ecgp-proxy``), stdlib only.

eCGP's proxy server (the user's own build, docs/cg.md) sits between a game server and the
network: it takes the game's RTP video on ``127.0.0.1:10002``, queues and paces it with
Ericsson's SCReAM V2 towards its client, and tells the game server the new target bitrate
after every feedback, over a TCP connection that *it* opens to ``GAME_SERVER_IP:9999`` when
it starts (so the listener must be up first). A frame on that connection is a byte
``0xff``, a 16-bit big-endian length (sent as 0 by eCGP's build, see CommandReader) and
JSON ``{"t":"n","v":BPS}`` (``v`` = -1 asks for an I-frame).

This program plays the game server: it listens on ``127.0.0.1:9999``, starts the proxy
server as its child, and sends RTP frames of cga-cg's encoder model (the same first-order
rate follower, log-normal frame sizes and I-frame debt as ``native/cg/src/encoder.rs``)
whose target is the proxy's latest command. It writes three files: the commands
(``t_ns,target_bps``, one per SCReAM feedback), the frames it made, and the proxy's own
output with each line's arrival time (``t_ns<TAB>line``: the proxy's lines carry no clock).
At the end it stops the proxy (SIGTERM) and prints a JSON summary on stdout.

The ``rtp-cbr`` stand-in's packet builder is shared (``rtp_cbr.py``, staged next to this
file on a remote host).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

try:
    from cganalysis.cg.rtp_cbr import RTP_CLOCK_HZ, build_packet, frame_sizes
except ImportError:  # a staged file without the package: rtp_cbr.py was staged next to it
    import importlib.util

    _here = Path(__file__).resolve().parent
    _file = next(p for p in (_here / "rtp_cbr.py", _here / "stage-rtp_cbr.py") if p.exists())
    _spec = importlib.util.spec_from_file_location("rtp_cbr", _file)
    assert _spec is not None and _spec.loader is not None
    _rtp = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_rtp)
    RTP_CLOCK_HZ, build_packet, frame_sizes = _rtp.RTP_CLOCK_HZ, _rtp.build_packet, _rtp.frame_sizes

#: Fixed in eCGP's main_server.cpp: where the game's RTP goes and where commands come from.
GAME_IP = "127.0.0.1"
VIDEO_RTP_PORT = 10002
COMMAND_PORT = 9999
DELIMITER = 0xFF
LENGTH = struct.Struct("!H")
#: ``v`` of an I-frame request (eCGP's MsgTypeConverter<IFRAME_REQUEST, RAW>).
KEYFRAME_REQUEST = -1
READY = "game server: listening"
CONNECTED = "game server: proxy connected"
#: The proxy server's line when its client has connected to its TCP port 29999: both
#: proxies are up, the video may start.
CLIENT_UP = "client side tcp commands: connection from"
#: Seconds the proxy server runs on after the last frame: its RTP queue drains.
TAIL_S = 1.0


def encode_command(bps: int) -> bytes:
    """One command frame as the proxy sends it (tests speak it against our listener)."""
    body = json.dumps({"t": "n", "v": bps}, separators=(",", ":")).encode()
    return bytes([DELIMITER]) + LENGTH.pack(len(body)) + body


@dataclass
class CommandReader:
    """Splits the command stream into messages. Bytes before a 0xff are skipped, as
    eCGP's own TcpClient::read does. The length is used when it is set; eCGP's server
    sends it as 0 (TcpClient::run shifts the 64-bit size by 64 and 56 bits: both bytes
    come out 0 with GCC on x86-64), so a zero length is read as "one JSON object follows".
    An incomplete message waits for more bytes."""

    buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[dict[str, object]]:
        self.buffer += data
        out: list[dict[str, object]] = []
        decoder = json.JSONDecoder()
        while True:
            start = self.buffer.find(DELIMITER)
            if start < 0:
                self.buffer.clear()
                return out
            del self.buffer[:start]
            head = 1 + LENGTH.size
            if len(self.buffer) < head:
                return out
            (size,) = LENGTH.unpack_from(self.buffer, 1)
            if size:
                if len(self.buffer) < head + size:
                    return out
                body, end = bytes(self.buffer[head : head + size]), head + size
            else:
                rest = bytes(self.buffer[head:])
                stop = rest.find(DELIMITER)
                body = rest if stop < 0 else rest[:stop]
                try:
                    _, used = decoder.raw_decode(body.decode(errors="replace"))
                except ValueError:
                    if stop < 0:
                        return out  # the object is not complete yet
                    del self.buffer[:head]  # not JSON before the next frame: skip it
                    continue
                body, end = body[:used], head + used
            del self.buffer[:end]
            try:
                msg = json.loads(body)
            except ValueError:
                continue  # not JSON: a resync on a stray 0xff
            if isinstance(msg, dict):
                out.append(msg)


@dataclass
class Encoder:
    """cga-cg's encoder model (native/cg/src/encoder.rs), no periodic I-frames."""

    fps: float
    rate_bps: float
    min_bps: float
    max_bps: float
    lag_s: float = 0.1
    size_cv: float = 0.1
    keyframe_factor: float = 4.0
    seed: int = 1
    index: int = 0
    last_keyframe_s: float = -math.inf
    keyframe_requested: bool = False
    debt_bytes: float = 0.0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.rate_bps = min(max(self.rate_bps, self.min_bps), self.max_bps)

    def produce(self, target_bps: float) -> tuple[int, bool]:
        """Bytes of the next frame and whether it is an I-frame."""
        now_s, period = self.index / self.fps, 1.0 / self.fps
        target = min(max(target_bps, self.min_bps), self.max_bps)
        k = 1.0 - math.exp(-period / self.lag_s) if self.lag_s > 0 else 1.0
        self.rate_bps += (target - self.rate_bps) * k
        nominal = self.rate_bps / self.fps / 8.0
        requested = self.keyframe_requested and now_s - self.last_keyframe_s >= 0.2
        keyframe = self.index == 0 or requested
        size = nominal * self.keyframe_factor if keyframe else nominal
        if keyframe and self.index > 0:
            self.debt_bytes += nominal * (self.keyframe_factor - 1.0)
        elif not keyframe and self.debt_bytes > 0:
            pay = min(self.debt_bytes, nominal * 0.5)
            self.debt_bytes -= pay
            size -= pay
        if self.size_cv > 0:
            sigma = math.sqrt(math.log(1.0 + self.size_cv**2))
            size *= math.exp(sigma * self.rng.gauss(0.0, 1.0) - sigma * sigma / 2.0)
        if keyframe:
            self.last_keyframe_s, self.keyframe_requested = now_s, False
        self.index += 1
        return max(1, round(size)), keyframe


def listen(port: int = COMMAND_PORT) -> socket.socket:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((GAME_IP, port))
    srv.listen(1)
    return srv


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("proxy", nargs="+", help="the proxy server's command line")
    p.add_argument("--duration", type=float, required=True, help="seconds of video")
    p.add_argument("--fps", type=float, default=60.0)
    p.add_argument("--start-bps", type=float, default=10e6)
    p.add_argument("--min-bps", type=float, default=0.5e6)
    p.add_argument("--max-bps", type=float, default=30e6)
    p.add_argument("--ssrc", type=lambda s: int(s, 0), default=100)
    p.add_argument("--pt", type=int, default=96)
    p.add_argument("--payload", type=int, default=1200, help="largest RTP payload, bytes")
    p.add_argument("--seed", type=int, default=1)
    # The encoder (cganalysis.cg.encoders; the defaults are its "model", as cga-cg's).
    p.add_argument("--size-cv", type=float, default=0.1, help="frame-size variability")
    p.add_argument("--lag-ms", type=float, default=100.0, help="rate control's lag")
    p.add_argument("--keyframe-factor", type=float, default=4.0, help="I-frame / P-frame")
    p.add_argument("--commands", required=True, help="CSV of the proxy's commands")
    p.add_argument("--frames", required=True, help="CSV of the frames sent")
    p.add_argument("--proxy-log", required=True, help="the proxy's output, timestamped")
    p.add_argument("--connect-timeout", type=float, default=10.0)
    # Fixed in the proxy; other values only for tests that run without it.
    p.add_argument("--command-port", type=int, default=COMMAND_PORT, help=argparse.SUPPRESS)
    p.add_argument("--video-port", type=int, default=VIDEO_RTP_PORT, help=argparse.SUPPRESS)
    return p.parse_args(argv)


class ProxyOutput:
    """The proxy's stdout+stderr, each line written with the time it arrived."""

    def __init__(self, pipe: IO[bytes], out: IO[str]) -> None:
        self.fd, self.out, self.partial = pipe.fileno(), out, b""
        self.client_up = False
        os.set_blocking(self.fd, False)

    def drain(self) -> bool:
        """Reads what is there; False at end of file."""
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return True
        now = time.time_ns()
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self.client_up = self.client_up or CLIENT_UP.encode() in line
            self.out.write(f"{now}\t{line.decode(errors='replace')}\n")
        if not data and self.partial:
            self.out.write(f"{now}\t{self.partial.decode(errors='replace')}\n")
        return bool(data)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    srv = listen(a.command_port)
    print(READY, file=sys.stderr, flush=True)
    proxy = subprocess.Popen(a.proxy, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proxy.stdout is not None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with (
        Path(a.commands).open("w", encoding="utf-8") as cmds,
        Path(a.frames).open("w", encoding="utf-8") as frames,
        Path(a.proxy_log).open("w", encoding="utf-8") as plog,
    ):
        output = ProxyOutput(proxy.stdout, plog)
        try:
            return _serve(a, srv, proxy, output, cmds, frames)
        finally:
            proxy.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 5.0
            while output.drain() and time.monotonic() < deadline:
                select.select([output.fd], [], [], 0.1)
            try:
                proxy.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()


def _serve(
    a: argparse.Namespace,
    srv: socket.socket,
    proxy: subprocess.Popen[bytes],
    output: ProxyOutput,
    cmds: IO[str],
    frames: IO[str],
) -> int:
    srv.settimeout(a.connect_timeout)
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        output.drain()
        print(f"game server: the proxy did not connect to :{a.command_port}", file=sys.stderr)
        return 1
    conn.setblocking(False)
    print(CONNECTED, file=sys.stderr, flush=True)
    deadline = time.monotonic() + a.connect_timeout
    while not output.client_up:
        if time.monotonic() > deadline or proxy.poll() is not None:
            print("game server: the proxy client did not connect to the server", file=sys.stderr)
            return 1
        select.select([output.fd], [], [], 0.1)
        output.drain()
    cmds.write("t_ns,target_bps\n")
    frames.write("t_ns,frame,size_bytes,packets,keyframe,target_bps,encoder_bps\n")
    enc = Encoder(
        a.fps,
        a.start_bps,
        a.min_bps,
        a.max_bps,
        lag_s=a.lag_ms / 1000.0,
        size_cv=a.size_cv,
        keyframe_factor=a.keyframe_factor,
        seed=a.seed,
    )
    reader, target = CommandReader(), a.start_bps
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = (GAME_IP, a.video_port)
    n_frames, seq, packets, sent = int(a.duration * a.fps), a.seed & 0xFFFF, 0, 0
    n_cmds, start, frame = 0, time.perf_counter(), 0
    end = start + a.duration + TAIL_S
    watch: list[socket.socket | int] = [conn, output.fd]
    while (now_s := time.perf_counter()) < end:
        wait = max(0.0, (start + frame / a.fps if frame < n_frames else end) - now_s)
        ready, _, _ = select.select(watch, [], [], wait)
        if conn in ready:
            data = conn.recv(65536)
            if not data:
                watch.remove(conn)  # the proxy closed it: it is ending (checked below)
            now = time.time_ns()
            for msg in reader.feed(data):
                value = msg.get("v")
                if not isinstance(value, int | float):
                    continue
                n_cmds += 1
                cmds.write(f"{now},{value:.0f}\n")
                if value == KEYFRAME_REQUEST:
                    enc.keyframe_requested = True
                elif value > 0:
                    target = float(value)
        if output.fd in ready:
            output.drain()
        if proxy.poll() is not None:
            print(f"game server: the proxy exited ({proxy.returncode})", file=sys.stderr)
            return 1
        while frame < n_frames and start + frame / a.fps <= time.perf_counter():
            size, key = enc.produce(target)
            ts = round(frame * RTP_CLOCK_HZ / a.fps) & 0xFFFFFFFF
            sizes = frame_sizes(size, a.payload)
            now = time.time_ns()
            for index, psize in enumerate(sizes):
                pkt = build_packet(
                    seq,
                    ts,
                    a.ssrc,
                    pt=a.pt,
                    marker=index == len(sizes) - 1,
                    frame=frame,
                    index=index,
                    size=psize,
                )
                sock.sendto(pkt, dest)
                seq, packets, sent = (seq + 1) & 0xFFFF, packets + 1, sent + len(pkt)
            frames.write(
                f"{now},{frame},{size},{len(sizes)},{int(key)},{target:.0f},{enc.rate_bps:.0f}\n"
            )
            frame += 1
    summary = {"frames": frame, "packets": packets, "bytes": sent, "commands": n_cmds}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
