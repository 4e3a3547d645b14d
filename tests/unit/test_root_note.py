"""The analysis says, once, that it does not need root (issue 58)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import FIXTURES, need_root

CAPTURE = FIXTURES / "dualpoint" / "ingress.pcap"


def _inspect(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", "inspect", str(CAPTURE)],
        capture_output=True, text=True, check=False, env={**os.environ, **env},
    )  # fmt: skip


def test_an_analysis_command_as_root_says_it_needs_no_root() -> None:
    need_root()
    env = {k: v for k, v in os.environ.items() if k != "CGA_ROOT_NOTED"}
    res = subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", "inspect", str(CAPTURE)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    notes = [ln for ln in res.stderr.splitlines() if "does not need" in ln]
    assert notes == [
        "cganalysis inspect: note: running as root, which the analysis does not need; run it "
        "as an ordinary user (docs/security.md)"
    ]
    # Once: a workflow that said it already passes that on to its jobs.
    again = _inspect({"CGA_ROOT_NOTED": "1"})
    assert again.returncode == 0 and "does not need" not in again.stderr
