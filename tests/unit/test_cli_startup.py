"""The command line imports only the command that runs (cganalysis.cli): the others bring
polars and matplotlib, which `cganalysis packets` and `cganalysis cg` do without."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cganalysis import cli
from cganalysis.commands import COMMANDS

#: Modules that cost a noticeable part of a second to import.
HEAVY = ("polars", "numpy", "matplotlib", "pyarrow", "yaml", "scipy")


#: Runs the command line as the installed script does, then lists ``sys.modules``
#: (``-X importtime`` misses modules loaded through ``importlib.import_module``).
_PROBE = """
import sys
from cganalysis.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("--- modules ---")
print("\\n".join(sorted(sys.modules)))
"""


def _imported(*argv: str) -> set[str]:
    """Every module a fresh interpreter imports running ``cganalysis ARGV``."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True
    )
    return set(proc.stdout.split("--- modules ---\n", 1)[1].split())


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] if not m.startswith("cganalysis.") else m for m in modules}


def test_help_imports_no_heavy_module() -> None:
    modules = _top(_imported("--help"))
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert not any(m.startswith("cganalysis.commands.") for m in modules)


@pytest.mark.parametrize("command", ["packets", "inspect", "metrics", "tables"])
def test_a_commands_help_imports_no_other_command(command: str) -> None:
    modules = _imported(command, "--help")
    others = {f"cganalysis.commands.{c}" for c in COMMANDS if c != command}
    assert f"cganalysis.commands.{command}" in modules
    assert not modules & others, sorted(modules & others)


def test_packets_imports_no_heavy_module() -> None:
    """Its native match needs none: importing polars takes about as long as matching a
    4 M-packet pair (docs/performance.md)."""
    modules = _top(_imported("packets", "--help"))
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_tables_and_metrics_are_made_without_matplotlib(tmp_path: Path) -> None:
    """A table job (and a campaign's metrics job) never imports matplotlib: importing it
    was most of their time (docs/performance.md)."""
    from tests.unit.synthetic import cbr, table

    packets, doc = tmp_path / "p.parquet", tmp_path / "m.json"
    tcp = cbr(20, 10, 30, proto=6, flow_id=1, sport=5201, dport=1)
    table(cbr(20, 0, 30, dport=30002), tcp).write_parquet(packets)
    args = ["--capacity-mbps", "50", "--window", "10:30", "--role", "cg=udp:30002"]
    args += ["--role", "competitor=tcp", "--label", "qdisc=pfifo", "--label", "cca=cubic"]
    metrics = _imported("metrics", str(packets), "-o", str(doc), *args)
    assert doc.exists() and "matplotlib" not in _top(metrics)
    made = _imported("tables", "tma-table2", str(doc), "-o", str(tmp_path / "t2"))
    assert (tmp_path / "t2.md").exists()
    assert "matplotlib" not in _top(made), "a table job imported matplotlib"


def test_unknown_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["no-such-command"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "packets" in err


#: Stops ``cganalysis cg send`` where it would start cga-cg and lists what was imported by
#: then: whatever is imported before that moment delays the CG flow's first packet.
_CG_PROBE = """
import sys
from cganalysis.cg import runner

def at_start(argv):
    print("--- modules ---")
    print("\\n".join(sorted(sys.modules)))
    raise SystemExit(0)

runner._run_forwarding_signals = at_start
from cganalysis.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("role", ["send", "receive"])
def test_cg_starts_the_generator_before_importing_polars(role: str, tmp_path: Path) -> None:
    fake = tmp_path / "cga-cg"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = {**os.environ, "CGA_CG_BIN": str(fake)}
    log = str(tmp_path / "log")
    proc = subprocess.run(
        [sys.executable, "-c", _CG_PROBE, "cg", role, "127.0.0.1:40000", "--log", log],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    modules = _top(set(proc.stdout.split("--- modules ---\n", 1)[1].split()))
    assert "cganalysis.cg.runner" in modules
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
