"""``cg.encoder``: one registry of encoders (cganalysis.cg.encoders) reaching both
implementations of the frame-size model (cga-cg's, our game server's for eCGP's proxy),
refused by the sources that have none or their own; and where the sources that cannot
run on simulated time are refused."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.cg import ecgp_game
from cganalysis.cg.encoders import DEFAULT_ENCODER, ENCODERS
from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run
from cganalysis.experiment.sources import SOURCES, CgaCg


def _run(**cg: object) -> dict[str, object]:
    return {
        "name": "r",
        "schedule": {"preset": "custom", "duration_s": 30, "competitor": []},
        "bottleneck": {"rate_mbit": 20, "qdisc": {"kind": "pfifo", "limit": 250}},
        "cg": cg,
    }


def test_the_default_encoder_is_what_cga_cg_and_the_game_server_do_unasked() -> None:
    model = ENCODERS[DEFAULT_ENCODER]
    game = ecgp_game.parse_args(
        ["--duration", "1", "--commands", "c", "--frames", "f", "--proxy-log", "p", "x"]
    )
    assert (game.size_cv, game.lag_ms, game.keyframe_factor) == (
        model.frame_size_cv,
        model.lag_ms,
        model.keyframe_factor,
    )
    enc = ecgp_game.Encoder(60, 10e6, 0.5e6, 30e6)
    assert (enc.size_cv, enc.lag_s * 1000, enc.keyframe_factor) == (
        model.frame_size_cv,
        model.lag_ms,
        model.keyframe_factor,
    )


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_cga_cg_gets_the_encoders_options_and_sender_args_come_last(
    name: str, tmp_path: Path
) -> None:
    cg = parse_run(
        _run(source="cga-cg", encoder=name, sender_args=["--seed", "7"]), "r.yaml", tmp_path
    ).cg
    assert cg.encoder == name
    argv = CgaCg.send_options(cg, "10.0.0.2:30002", "10.0.0.1:30001", 60.0, "/tmp/x")
    extra = [a for a in argv if a.startswith("--cga-cg-args=")]
    e = ENCODERS[name]
    assert extra == [
        f"--cga-cg-args=--frame-size-cv {e.frame_size_cv:g} --encoder-lag-ms {e.lag_ms:g} "
        f"--keyframe-factor {e.keyframe_factor:g} --seed 7"
    ]


def test_cga_cg_makes_the_constant_encoders_frames(tmp_path: Path) -> None:
    """The real binary, 2 s at a constant 6 Mbit/s: every frame 12,500 bytes with the
    constant encoder, varying with the model."""
    sizes = {}
    for name in ("constant", "model"):
        cg = parse_run(
            _run(source="cga-cg", cc="none", rate_mbit=6, encoder=name), "r.yaml", tmp_path
        ).cg
        log = tmp_path / name
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        argv = CgaCg.send_options(cg, "127.0.0.1:9", f"127.0.0.1:{port}", 2.0, str(log))
        subprocess.run(
            [sys.executable, "-m", "cganalysis.cli", *argv], check=True, capture_output=True
        )
        frames = pl.read_parquet(log / "sender_frames.parquet")
        sizes[name] = frames["size_bytes"].to_list()
    assert len(sizes["constant"]) >= 100 and set(sizes["constant"]) == {12500}
    assert statistics.pstdev(sizes["model"]) / statistics.mean(sizes["model"]) > 0.05


def test_the_game_servers_encoder_follows_the_same_settings() -> None:
    e = ENCODERS["constant"]
    enc = ecgp_game.Encoder(
        60,
        10e6,
        0.5e6,
        30e6,
        lag_s=e.lag_ms / 1000,
        size_cv=e.frame_size_cv,
        keyframe_factor=e.keyframe_factor,
    )
    frames = [enc.produce(12e6) for _ in range(120)]
    assert {size for size, _ in frames} == {25000}  # target / fps at once
    enc.keyframe_requested = True
    assert enc.produce(12e6) == (25000, True)  # an I-frame no larger than a P-frame
    cbr = ENCODERS["cbr"]
    fixed = ["--duration", "1", "--commands", "c", "--frames", "f", "--proxy-log", "p"]
    argv = ecgp_game.parse_args([*fixed, *cbr.game_args(), "x"])
    assert (argv.size_cv, argv.keyframe_factor) == (0.03, 1.0)
    assert argv.lag_ms == pytest.approx(1000 / 60, rel=1e-5)  # one frame at 60 fps


@pytest.mark.parametrize(
    ("cg", "words"),
    [
        ({"source": "cga-cg", "encoder": "nvenc"}, "'nvenc' is not one of: model, constant, cbr"),
        ({"source": "rtp-cbr", "encoder": "model"}, "source rtp-cbr has no encoder"),
        ({"source": "scream-reference", "encoder": "model"}, "runs only constant"),
    ],
)
def test_an_encoder_a_source_cannot_run_is_refused_naming_the_key(
    cg: dict[str, Any], words: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"r\.yaml: key cg\.encoder: ") as err:
        parse_run(_run(**cg), "r.yaml", tmp_path)
    assert words in str(err.value)


def test_ecgp_proxy_takes_every_encoder_and_is_refused_on_simulated_time(tmp_path: Path) -> None:
    for name in ENCODERS:
        assert (
            parse_run(_run(source="ecgp-proxy", encoder=name), "r.yaml", tmp_path).cg.encoder
            == name
        )
    with pytest.raises(
        ConfigError,
        match=r"key cg\.source: cannot run on the sim testbed's simulated clock: "
        r"ecgp-proxy's threads .*spinlock",
    ):
        parse_run({**_run(source="ecgp-proxy"), "testbed": "sim"}, "r.yaml", tmp_path)
    ok = parse_run({**_run(source="cga-cg"), "testbed": "sim"}, "r.yaml", tmp_path)
    assert ok.testbed.kind == "sim"


def test_a_user_built_sources_programs_reach_the_sim_guest_by_their_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guest's PATH is the project's own: the programs this machine finds are named to
    it through their environment variables (absolute paths)."""
    for name in ("scream_server", "scream_client"):
        prog = tmp_path / "bin" / name
        prog.parent.mkdir(exist_ok=True)
        prog.write_text("#!/bin/sh\n")
        prog.chmod(0o755)
    monkeypatch.delenv("CGA_ECGP_SERVER_BIN", raising=False)
    monkeypatch.delenv("CGA_ECGP_CLIENT_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert SOURCES["ecgp-proxy"].program_env() == {
        "CGA_ECGP_SERVER_BIN": str(tmp_path / "bin" / "scream_server"),
        "CGA_ECGP_CLIENT_BIN": str(tmp_path / "bin" / "scream_client"),
    }
    monkeypatch.setenv("CGA_CG_BIN", "/opt/cga-cg")
    assert SOURCES["cga-cg"].program_env() == {"CGA_CG_BIN": "/opt/cga-cg"}
    assert SOURCES["rtp-cbr"].program_env() == {}
