"""Daemons a test starts in the foreground and ends by their process id, and free
loopback ports for them (the SLURM cluster's and its accounting's)."""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def foreground_daemon(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A daemon in the foreground, ended by its process id when the block exits."""
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
