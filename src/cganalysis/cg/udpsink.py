"""The CG flow's receiving end where the source has none of its own: a UDP sink, run as
``python3 -c UDP_SINK ADDRESS PORT`` on the client (stdlib only: the client may be a bare
host), so that no ICMP port unreachable flows back; it counts what arrives and prints a
JSON summary when stopped."""

UDP_SINK = """\
import json, signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
n = b = 0
def done(*_):
    print(json.dumps({"packets": n, "bytes": b}), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
signal.signal(signal.SIGINT, done)
print("sink: ready", file=sys.stderr, flush=True)
while True:
    b += len(s.recv(65535))
    n += 1
"""
