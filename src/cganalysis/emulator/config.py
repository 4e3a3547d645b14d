"""Writing EMU.json and asking the emulator whether it accepts it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cganalysis.emulator.binary import EmulatorError, find_emulator
from cganalysis.errors import ConfigError
from cganalysis.io import atomic_path

#: Exit code of cga-emu for a configuration it refuses.
EXIT_BAD_CONFIG = 2


def write_config(config: Mapping[str, Any], path: Path) -> Path:
    """Writes ``config`` (the EMU.json structure, see docs/emulator.md) to ``path`` atomically."""
    text = json.dumps(config, indent=2, allow_nan=False)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    return path


def check_config(path: Path) -> None:
    """Runs ``cga-emu --check``: raises ConfigError with the emulator's message (which names
    the offending key) if it refuses the file. Traces are loaded; interfaces are not opened."""
    res = subprocess.run(
        [str(find_emulator()), "--config", str(path), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if res.returncode == EXIT_BAD_CONFIG:
        raise ConfigError(res.stderr.strip().removeprefix("cga-emu: "))
    if res.returncode != 0:
        raise EmulatorError(f"cga-emu --check failed ({res.returncode}): {res.stderr.strip()}")
