"""Test-wide rules: what needs root or system tools, and CI's no-skip policy.

Outside CI a test that needs root or a missing tool skips with the reason. In CI
(``CI=true``) every test must run: a skip there is turned into a failure, so a machine
that lacks a tool cannot pass quietly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Generator
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
#: The cellular traces the project ships (data/traces/README.md).
TRACES = REPO / "data" / "traces" / "cellular"


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, tc)")


def need_tool(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (bash scripts/install.sh installs it)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI, which counts as a failure: {reason}"
    return report


@pytest.fixture(scope="session")
def dualpoint_dir() -> Path:
    """The committed real dual-point capture (see tests/fixtures/README.md)."""
    return FIXTURES / "dualpoint"
