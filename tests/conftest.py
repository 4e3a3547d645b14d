"""Test-wide rules: what needs root or system tools, and CI's no-skip policy.

Outside CI a test that needs root or a missing tool skips with the reason. In CI
(``CI=true``) every test must run: a skip there is turned into a failure, so a machine
that lacks a tool cannot pass quietly. The one exception is mahimahi, which Debian does
not package: its tests skip with the reason ``mahimahi not installed`` everywhere.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
#: Generated traces (the project's capacity model) go to a folder of this session, not to
#: the repository's data/traces/; subprocesses (snakemake, the runner) inherit it.
os.environ["CGA_TRACES"] = tempfile.mkdtemp(prefix="cga-test-traces-")
#: The one skip CI accepts: mahimahi has no Debian package (docs/testbed.md, mahimahi).
MAHIMAHI_MISSING = "mahimahi not installed"


def trace(name: str) -> Path:
    """A generated cellular trace by name (``cga-lte-s1-60s.down``), made on first use."""
    from cganalysis.traces.find import find_trace

    return find_trace(name, None)


def need_mahimahi() -> None:
    if shutil.which("mm-link") is None or shutil.which("mm-delay") is None:
        pytest.skip(MAHIMAHI_MISSING)


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
    reason_text = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else "")
    accepted = reason_text.endswith(MAHIMAHI_MISSING)
    if IN_CI and report.skipped and not hasattr(report, "wasxfail") and not accepted:
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI, which counts as a failure: {reason}"
    return report


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ["CGA_TRACES"], ignore_errors=True)


@pytest.fixture(scope="session")
def dualpoint_dir() -> Path:
    """The committed real dual-point capture (see tests/fixtures/README.md)."""
    return FIXTURES / "dualpoint"
