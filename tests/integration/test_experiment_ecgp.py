"""`cg.source: ecgp-proxy` end to end in network namespaces (root), with stand-ins for
eCGP's proxies (tests/support/ecgp_standin.py: the real ones are the user's own build and
cannot run in CI; docs/cg.md has a run with them). What is tested is the project's side:
the order of the processes, the fixed ports, our game server following the commands, the
files kept, meta.json's cg_source and role rules, and the proxies' TCP connection kept out
of the competitor's role. ~18 s of traffic plus set-up.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from pathlib import Path

import polars as pl
import pytest

from cganalysis.cg import ecgp
from cganalysis.matching import match_files
from cganalysis.metrics.roles import assign_roles, rules_from_mapping
from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, cli, short_run, write
from tests.support import ecgp_standin

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


def _shim(folder: Path, name: str, role: str) -> Path:
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {ecgp_standin.__file__} {role} "$@"\n')
    path.chmod(0o755)
    return path


def test_a_run_through_the_proxies_stand_ins(tmp_path: Path) -> None:
    need_root()
    need_tool(*TOOLS, "timeout")
    server = _shim(tmp_path, ecgp.SERVER_NAME, "server")
    client = _shim(tmp_path, ecgp.CLIENT_NAME, "client")
    doc = short_run("test-ecgp")
    doc["cg"] = {"source": "ecgp-proxy"}
    cfg = write(doc, tmp_path / "run.yaml")
    out = tmp_path / "ecgp"
    env = {**os.environ, ecgp.SERVER_ENV: str(server), ecgp.CLIENT_ENV: str(client)}
    res = cli("experiment", cfg, "-o", out, env=env)
    assert res.returncode == 0, res.stderr

    meta = json.loads((out / "meta.json").read_text())
    info = meta["cg_source"]
    assert info["name"] == "ecgp-proxy"
    assert info["server_sha256"] == hashlib.sha256(server.read_bytes()).hexdigest()
    assert info["server_argv"][1:3] == ["127.0.0.1", meta["topology"]["client_ip"]]
    assert info["rtp_queue_discarded_packets"] == 0
    assert not [f for f in meta["flags"] if "ecgp" in f]
    assert meta["roles"] == {"cg": "udp:30002", "other": "tcp:29999", "competitor": "tcp"}

    # Our game server followed the stand-in's commands (3 Mbit/s after the first feedback).
    commands = ecgp.read_commands(out / ecgp.COMMANDS_NAME)
    assert commands.height > 50
    assert set(commands["target_bps"].to_list()) == {ecgp_standin.TARGET_BPS}
    with (out / ecgp.FRAMES_NAME).open() as fh:
        frames = list(csv.DictReader(fh))
    assert frames[0]["target_bps"] == "10000000"
    assert frames[-1]["target_bps"] == str(ecgp_standin.TARGET_BPS)
    assert ecgp.read_summaries(out / ecgp.SERVER_LOG_NAME).height >= 5
    assert "stand-in proxy client: up" in (out / ecgp.CLIENT_LOG_NAME).read_text()

    # What the game server sent crossed the bottleneck on the proxies' port and reached
    # the game client's sink; the proxies' TCP connection is role `other`.
    game = json.loads((out / "cg-ecgp-game.json").read_text())
    sink = json.loads((out / "cg-ecgp-sink.json").read_text())
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    p = assign_roles(m.packets, rules_from_mapping(meta["roles"]))
    cg = p.filter(pl.col("role") == "cg")
    # (a loaded host starves the Python relays: the last packets may not be relayed
    # before the game server stops it, 1 s after its last frame)
    assert 0.9 * game["packets"] <= cg.height <= game["packets"]
    assert set(cg["sport"].to_list()) == {30002} and set(cg["dport"].to_list()) == {30002}
    delivered = cg.filter(~pl.col("lost")).height
    assert 0.95 * delivered <= sink["packets"] <= delivered
    control = p.filter((pl.col("sport") == 29999) | (pl.col("dport") == 29999))
    assert control.height > 0 and set(control["role"].to_list()) == {"other"}
