#!/usr/bin/env python3
"""Polls a router's qdisc statistics on a fixed clock; standalone (stdlib only).

Runs on the router (inside its namespace, or copied to a remote host by the ssh backend)
so that a poll costs two local ``tc`` calls, not a round trip. Each poll writes one JSON
line: ``{"t_ns", "dev", "direction", "qdisc_json", "class_text"}`` (the raw outputs; the
testbed turns them into ``qdisc-stats.jsonl`` records after the run, see tcparse.py).
Polls are scheduled from elapsed time, so a late wake-up does not shift later polls.
Stops on SIGTERM or SIGINT, after a last poll.

    poller.py --out FILE --interval-ms 100 --dev rtr1:a_to_b [--dev rtr0:b_to_a]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time

_stop = False


def _on_signal(_signum: int, _frame: object) -> None:
    global _stop  # noqa: PLW0603 - a signal handler can only talk through a global
    _stop = True


def poll(dev: str, direction: str) -> dict[str, object]:
    t_ns = time.time_ns()
    q = subprocess.run(
        ["tc", "-s", "-j", "qdisc", "show", "dev", dev], capture_output=True, text=True, check=False
    ).stdout
    c = subprocess.run(
        ["tc", "-s", "class", "show", "dev", dev], capture_output=True, text=True, check=False
    ).stdout
    return {"t_ns": t_ns, "dev": dev, "direction": direction, "qdisc_json": q, "class_text": c}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--interval-ms", type=float, default=100.0)
    p.add_argument("--dev", action="append", required=True, help="DEV:DIRECTION")
    a = p.parse_args(argv)
    devs = [tuple(d.split(":", 1)) if ":" in d else (d, "a_to_b") for d in a.dev]
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    interval = a.interval_ms / 1000.0
    start = time.monotonic()
    n = 0
    with open(a.out, "w", encoding="utf-8") as out:  # noqa: PTH123 - stdlib-only script
        print("poller: ready", file=sys.stderr, flush=True)
        while True:
            for dev, direction in devs:
                out.write(json.dumps(poll(dev, direction)) + "\n")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
