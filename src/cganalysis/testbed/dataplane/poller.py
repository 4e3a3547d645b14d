#!/usr/bin/env python3
"""Polls a router's qdisc statistics on a fixed clock; standalone (stdlib only).

Runs on the router (inside its namespace, or copied to a remote host by the ssh backend)
so that a poll costs a few lines to one local ``tc -batch`` process, not a round trip.
Each poll writes one JSON line: ``{"t_ns", "dev", "direction", "qdisc_json",
"class_text"}`` (the raw outputs; the testbed turns them into ``qdisc-stats.jsonl``
records after the run, see tcparse.py).
Polls are scheduled from elapsed time, so a late wake-up does not shift later polls.
Stops on SIGTERM or SIGINT, after a last poll.

    poller.py --out FILE --interval-ms 100 --dev rtr1:a_to_b [--dev rtr0:b_to_a]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

_stop = False


def _on_signal(_signum: int, _frame: object) -> None:
    global _stop  # noqa: PLW0603 - a signal handler can only talk through a global
    _stop = True


class Tc:
    """One ``tc -s -j -batch -`` process for every poll: starting a program costs tens of
    milliseconds in a user-mode Linux router (and a fork here), a batch line almost none.

    In JSON mode each ``qdisc show`` prints exactly one line (``[]`` for none). ``class
    show`` prints one JSON line too on newer iproute2, but text on 6.1 (which has no JSON
    for HTB classes): zero or more lines, none starting with ``[``. With such a tc, each
    poll ends with ``qdisc show dev lo`` as an end mark, and a device's class text is what
    lies between its qdisc line and the next line starting with ``[``.
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.class_json = False
        #: What tc wrote past the last line returned (read from the pipe's descriptor, not
        #: through a buffered reader, so that select() tells the truth).
        self.buf = b""

    def start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            probe = subprocess.run(
                ["tc", "-j", "class", "show", "dev", "lo"],
                capture_output=True,
                text=True,
                check=False,
            )
            self.class_json = probe.stdout.strip().startswith("[")
            self.proc = subprocess.Popen(
                ["tc", "-force", "-s", "-j", "-batch", "-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            self.buf = b""
        return self.proc

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def _line(self, proc: subprocess.Popen[bytes]) -> str:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], 5.0)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:  # tc ended or hung: a new one at the next poll
                self.stop()
                raise EOFError
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace") + "\n"

    def poll(self, devs: list[tuple[str, str]]) -> list[dict[str, object]]:
        t_ns = time.time_ns()
        proc = self.start()
        assert proc.stdin is not None
        words = "".join(f"qdisc show dev {d}\nclass show dev {d}\n" for d, _ in devs)
        if not self.class_json:
            words += "qdisc show dev lo\n"
        proc.stdin.write(words.encode())
        out: list[dict[str, object]] = []
        try:
            line = self._line(proc)
            for dev, direction in devs:
                qdisc, classes = line, []
                line = self._line(proc)
                if self.class_json:
                    classes = [line]
                    line = self._line(proc) if len(out) + 1 < len(devs) else ""
                else:
                    while not line.startswith("["):
                        classes.append(line)
                        line = self._line(proc)
                out.append(
                    {
                        "t_ns": t_ns,
                        "dev": dev,
                        "direction": direction,
                        "qdisc_json": qdisc.strip(),
                        "class_text": "".join(classes),
                    }
                )
        except EOFError:
            pass
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--interval-ms", type=float, default=100.0)
    p.add_argument("--dev", action="append", required=True, help="DEV:DIRECTION")
    a = p.parse_args(argv)
    devs = [(d.split(":", 1)[0], d.split(":", 1)[1] if ":" in d else "a_to_b") for d in a.dev]
    tc = Tc()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    interval = a.interval_ms / 1000.0
    start = time.monotonic()
    n = 0
    with open(a.out, "w", encoding="utf-8") as out:  # noqa: PTH123 - stdlib-only script
        print("poller: ready", file=sys.stderr, flush=True)
        while True:
            for rec in tc.poll(devs):
                out.write(json.dumps(rec) + "\n")
            out.flush()
            if _stop:
                break
            n += 1
            delay = start + n * interval - time.monotonic()
            if delay < 0:  # fell behind (loaded machine): skip the missed slots
                n += int(-delay // interval) + 1
                delay = start + n * interval - time.monotonic()
            deadline = time.monotonic() + max(0.0, delay)
            while not _stop and time.monotonic() < deadline:
                time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
    tc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
