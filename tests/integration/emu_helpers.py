"""Shared by the cga-emu integration tests: skip (outside CI) when the binary is missing."""

from __future__ import annotations

import pytest

from cganalysis.emulator import EmulatorError, find_emulator


def need_emulator() -> None:
    try:
        find_emulator()
    except EmulatorError as e:
        pytest.skip(str(e))
