"""Stand-ins for eCGP's proxy server and client (``cg.source: ecgp-proxy``) in tests that
cannot have the real ones (CI: the proxy is the user's own build). They keep what the
project relies on: the command lines, the fixed ports, the server's connection to the game
server's ``:9999`` at start, the client's TCP connection to the server's 29999 (and the
server's line about it), RTP relayed unchanged over 30002 with feedback back between the
same ports, a command frame (zero length bytes, as eCGP's build) per feedback, and a
SCReAM summary line every 2 s. No congestion control: the relay forwards at once.

Run as ``python ecgp_standin.py server|client ARGS...`` with the proxies' own arguments.
"""

from __future__ import annotations

import select
import signal
import socket
import sys
import time

VIDEO_PORT, CONTROL_PORT, COMMAND_PORT, GAME_RTP_PORT = 30002, 29999, 9999, 10002
#: Linux's SO_RCVBUFFORCE (not in Python's socket module).
SO_RCVBUFFORCE = 33
#: What the stand-in server answers to every feedback (bit/s).
TARGET_BPS = 3_000_000


def _udp(bind: tuple[str, int]) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # A loaded host starves this relay for a second or more: buffer what arrives meanwhile
    # (as root beyond net.core.rmem_max; these tests run as root).
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(bind)
    return s


def server(game_ip: str, client_ip: str, game_bind: str, net_bind: str) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((net_bind, CONTROL_PORT))
    listener.listen(1)
    commands = socket.create_connection((game_ip, COMMAND_PORT))
    game = _udp((game_bind, GAME_RTP_PORT))
    net = _udp((net_bind, VIDEO_PORT))
    print("[INFO] stand-in proxy server: up", flush=True)
    peers: list[socket.socket] = []
    sent, last_summary = 0, time.monotonic()
    while True:
        ready, _, _ = select.select([listener, game, net, *peers], [], [], 0.1)
        if listener in ready:
            conn, addr = listener.accept()
            peers.append(conn)
            print(
                f"[INFO] client side tcp commands: connection from {addr[0]}:{addr[1]} accepted",
                flush=True,
            )
        for peer in [p for p in peers if p in ready]:
            if not peer.recv(4096):
                peers.remove(peer)
        if game in ready:
            packet = game.recv(2048)
            net.sendto(packet, (client_ip, VIDEO_PORT))
            sent += len(packet)
        if net in ready:
            net.recv(2048)  # a feedback: answer with the target
            body = b'{"t":"n","v":%d}' % TARGET_BPS
            commands.sendall(b"\xff\x00\x00" + body)
        if time.monotonic() - last_summary >= 2.0:
            last_summary = time.monotonic()
            print(
                f"[INFO] scream server: summary {last_summary % 1000:5.1f}  Transmit rate = "
                f"{sent * 8 / 2000:5.0f}kbps, PLR =  0.00%( 0.00%), RTT = 0.020s, "
                "Queue delay = 0.005s",
                flush=True,
            )
            sent = 0


def client(server_ip: str, game_ip: str, net_bind: str, game_bind: str) -> None:
    control = socket.create_connection((server_ip, CONTROL_PORT))
    net = _udp((net_bind, VIDEO_PORT))
    game = _udp((game_bind, 20002))
    print("[INFO] stand-in proxy client: up", flush=True)
    n = 0
    while True:
        ready, _, _ = select.select([net, control], [], [], 0.5)
        if control in ready and not control.recv(4096):
            return  # the server is gone
        if net in ready:
            game.sendto(net.recv(2048), (game_ip, GAME_RTP_PORT))
            n += 1
            if n % 16 == 0:
                net.sendto(b"\x8b\xcd\x00\x01" + bytes(4), (server_ip, VIDEO_PORT))


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    role, a, b, _, c, d = sys.argv[1:7]
    try:
        (server if role == "server" else client)(a, b, c, d)
    finally:
        print("[INFO] all done", flush=True)


if __name__ == "__main__":
    main()
