"""Writing EMU.json and asking the emulator whether it accepts it.

EMU.json has one schema, the emulator's own (``native/emulator/src/config.rs``, its
queue-discipline ranges from ``testbed/spec/qdiscs.json``, which the run files are checked
against too). Python writes the file and then has ``cga-emu --check`` read it
before anything runs: the writer's check is the reader's, so the two cannot disagree.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cganalysis.emulator.binary import NAME, EmulatorError, find_emulator
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


def check_argv(path: str, program: str = NAME) -> list[str]:
    """The command that checks EMU.json ``path`` (traces loaded, interfaces not opened)."""
    return [program, "--config", path, "--check"]


def raise_for_check(returncode: int, stderr: str) -> None:
    """Turns a ``cga-emu --check`` exit into ConfigError (the emulator's one line, naming the
    file and the key it refuses) or EmulatorError (it could not check)."""
    if returncode == EXIT_BAD_CONFIG:
        raise ConfigError(stderr.strip().removeprefix("cga-emu: "))
    if returncode != 0:
        raise EmulatorError(f"cga-emu --check failed ({returncode}): {stderr.strip()}")


def check_config(path: Path) -> None:
    """Runs ``cga-emu --check`` on this machine: raises ConfigError with the emulator's
    message (which names the offending key) if it refuses the file."""
    res = subprocess.run(
        check_argv(str(path), str(find_emulator())),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    raise_for_check(res.returncode, res.stderr)
