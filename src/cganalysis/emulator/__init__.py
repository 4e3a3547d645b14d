"""The link emulator ``cga-emu`` from Python: find the binary, write its EMU.json, start it
(waiting for ``cga-emu: ready``), stop it with SIGTERM, and read its statistics and event log.

The emulator itself is the Rust program in ``native/emulator`` (installed on the PATH by
``bash scripts/install.sh``); ``docs/emulator.md`` documents EMU.json and its outputs.
"""

from __future__ import annotations

from cganalysis.emulator.binary import EmulatorError, find_emulator
from cganalysis.emulator.config import check_config, write_config
from cganalysis.emulator.process import Emulator
from cganalysis.emulator.stats import EVENTS, read_events, read_stats, stats_table

__all__ = [
    "EVENTS",
    "Emulator",
    "EmulatorError",
    "check_config",
    "find_emulator",
    "read_events",
    "read_stats",
    "stats_table",
    "write_config",
]
