"""Running ``cga-emu``: start it (optionally inside a network namespace), wait until it has
bound both interfaces, stop it with SIGTERM so it writes its final statistics."""

from __future__ import annotations

import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from cganalysis.emulator.binary import EmulatorError, find_emulator
from cganalysis.emulator.config import EXIT_BAD_CONFIG
from cganalysis.errors import ConfigError

READY = "cga-emu: ready"


class Emulator:
    """One running ``cga-emu``; a context manager that always stops it.

    ``stderr_path`` receives the emulator's log (its summary line, warnings, the final
    counts); without it the log goes to a temporary file, read for error messages.
    """

    def __init__(
        self,
        config_path: Path,
        netns: str | None = None,
        stderr_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.config_path = config_path
        self.netns = netns
        self.stderr_path = stderr_path
        self.extra_args = extra_args
        self.proc: subprocess.Popen[str] | None = None
        self.returncode: int | None = None
        self._log: IO[str] | None = None

    @property
    def argv(self) -> list[str]:
        cmd = [str(find_emulator()), "--config", str(self.config_path), *self.extra_args]
        return ["ip", "netns", "exec", self.netns, *cmd] if self.netns else cmd

    def log_text(self) -> str:
        """What the emulator wrote to stderr so far."""
        if self.stderr_path is not None:
            return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        if self._log is not None:
            self._log.seek(0)
            return self._log.read()
        return ""

    def start(self, timeout_s: float = 10.0) -> Emulator:
        """Starts the emulator and returns once it printed ``cga-emu: ready``."""
        if self.stderr_path is not None:
            self._log = self.stderr_path.open("w+")
        else:
            self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise EmulatorError(f"cga-emu did not become ready within {timeout_s} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.2))
            if ready:
                line = self.proc.stdout.readline()
                if line.strip() == READY:
                    return self
                if line:
                    continue
            if self.proc.poll() is not None:
                msg = self.log_text().strip().removeprefix("cga-emu: ")
                self.stop()
                if self.returncode == EXIT_BAD_CONFIG:
                    where = str(self.config_path)
                    raise ConfigError(msg if msg.startswith(where) else f"{where}: {msg}")
                raise EmulatorError(f"cga-emu exited with {self.returncode}: {msg}")

    def stop(self, timeout_s: float = 10.0) -> int:
        """Sends SIGTERM, waits for the exit (SIGKILL after ``timeout_s``), returns the code."""
        if self.proc is None:
            self._close_log()
            return self.returncode if self.returncode is not None else 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.returncode = self.proc.returncode
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        self._close_log()
        return self.returncode

    def _close_log(self) -> None:
        # A temporary log is kept until the object goes away, for log_text() after stop().
        if self._log is not None and self.stderr_path is not None:
            self._log.close()
            self._log = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> Emulator:
        return self if self.running else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
