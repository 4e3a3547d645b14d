"""Running ``cga-cg`` and keeping its logs as parquet.

The binary writes its CSV logs into a hidden working folder inside the log directory;
when it ends (its duration passed, or SIGINT / SIGTERM, which are forwarded to it so that
it flushes its logs), the CSVs become parquet tables in the log directory and the working
folder is removed. An interrupted conversion leaves no parquet file half-written, and a
log directory that already holds logs is never overwritten (raw data is write-once).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from cganalysis.cg.lognames import LOG_FILES, SUMMARIES
from cganalysis.errors import CganalysisError


class GeneratorError(CganalysisError):
    """cga-cg failed."""


def _existing_logs(log_dir: Path) -> list[str]:
    names = [parquet for parquet, _ in LOG_FILES.values()] + list(SUMMARIES)
    return [n for n in names if (log_dir / n).exists()]


def run_generator(
    argv_for: Callable[[Path], Sequence[str]],
    log_dir: Path,
    provenance: dict[str, Any] | None = None,
) -> list[Path]:
    """Runs ``argv_for(csv_dir)`` (a cga-cg command line writing logs to ``csv_dir``).

    Returns the parquet and summary files written into ``log_dir``.
    """
    existing = _existing_logs(log_dir)
    if existing:
        raise GeneratorError(
            f"{log_dir} already holds generator logs ({', '.join(existing)}); logs are "
            "write-once: choose a new --log directory"
        )
    log_dir.mkdir(parents=True, exist_ok=True)
    csv_dir = log_dir / f".cga-cg-csv-{os.getpid()}"
    csv_dir.mkdir()
    try:
        argv: Sequence[str] = argv_for(csv_dir)
        code = _run_forwarding_signals(argv)
        if code != 0:
            raise GeneratorError(f"{Path(argv[0]).name} {argv[1]} exited with status {code}")
        meta = {"command": list(argv), **(provenance or {})}
        # polars only once the generator has run: see cganalysis.cg.lognames
        from cganalysis.cg.logs import convert_logs

        return convert_logs(csv_dir, log_dir, meta)
    finally:
        shutil.rmtree(csv_dir, ignore_errors=True)


def _run_forwarding_signals(argv: Sequence[str]) -> int:
    """Runs ``argv``; SIGINT and SIGTERM go to the child, which stops cleanly."""
    try:
        proc = subprocess.Popen(list(argv))
    except OSError as err:
        raise GeneratorError(f"cannot start {argv[0]}: {err}") from err

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    handlers: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, forward)
    try:
        return proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
