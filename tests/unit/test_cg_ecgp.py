"""eCGP's SCReAM proxy as a CG source (cganalysis.cg.ecgp, cganalysis/cg/ecgp_game.py):
command lines, our game server against a real TCP client speaking the proxy's command
frames, the run file keys, finding the programs, reading the proxy's log (real lines,
tests/fixtures/ecgp_proxy) and the flags of meta.json."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from cganalysis.cg import ecgp, ecgp_game
from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run
from cganalysis.experiment.meta import roles
from cganalysis.experiment.sources import SOURCES
from cganalysis.metrics.roles import assign_roles, rules_from_mapping

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ecgp_proxy"


def cg_flags(cfg: Any, info: dict[str, Any], workdir: Path) -> list[str]:
    """The run's CG source's post-run flags, as meta.json gets them."""
    return SOURCES[cfg.cg.source].post_run_flags(info, workdir)


def test_command_lines_follow_the_proxys_fixed_layout() -> None:
    server = ecgp.server_argv("/b/scream_server", client_ip="10.0.2.1", server_ip="10.0.1.1")
    # game side on loopback; argv[3] a placeholder: their optional arguments are read
    # from argv[4] and argv[5]
    assert server == ["/b/scream_server", "127.0.0.1", "10.0.2.1", "-", "127.0.0.1", "10.0.1.1"]
    client = ecgp.client_argv("/b/scream_client", server_ip="10.0.1.1", client_ip="10.0.2.1")
    assert client == ["/b/scream_client", "10.0.1.1", "127.0.0.1", "-", "10.0.2.1", "127.0.0.1"]
    game = ecgp.game_argv(
        "g.py",
        duration_s=12.5,
        fps=60,
        ssrc=0x1234ABCD,
        commands="c.csv",
        frames="f.csv",
        proxy_log="p.log",
        proxy=server,
    )
    assert game[:2] == ["python3", "g.py"]
    assert game[game.index("--duration") + 1] == "12.500"
    assert game[game.index("--start-bps") + 1] == "10000000"  # the proxy's own limits
    assert game[game.index("--min-bps") + 1] == "500000"
    assert game[game.index("--max-bps") + 1] == "30000000"
    assert game[game.index("--ssrc") + 1] == "0x1234abcd"
    assert game[game.index("--") + 1 :] == server


def test_command_frames_split_as_the_proxy_sends_them() -> None:
    body = b'{"t":"n","v":4000000}'
    as_sent = b"\xff\x00\x00" + body  # eCGP's build: the length bytes come out 0
    reader = ecgp_game.CommandReader()
    assert reader.feed(as_sent[:7]) == []  # incomplete: waits
    assert reader.feed(as_sent[7:] + b"junk" + ecgp_game.encode_command(-1)[:2]) == [
        {"t": "n", "v": 4000000}
    ]
    assert reader.feed(ecgp_game.encode_command(-1)[2:]) == [{"t": "n", "v": -1}]
    framed = ecgp_game.encode_command(5956487)
    assert framed[:3] == b"\xff\x00" + bytes([len(framed) - 3])  # a set length is used
    assert reader.feed(framed + b"\xff\x00\x00" + body) == [
        {"t": "n", "v": 5956487},
        {"t": "n", "v": 4000000},
    ]


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: Stands in for the proxy server on loopback: connects to the game server's command port
#: as the proxy does, says its client is up, sends three commands (zero-length headers, as
#: eCGP's build), then waits to be stopped.
FAKE_PROXY = textwrap.dedent(
    """
    import signal, socket, sys, time
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    print("[INFO] client side tcp commands: connection from 10.0.2.1:29999 accepted", flush=True)
    time.sleep(0.3)
    for v in (4000000, -1, 2500000):
        s.sendall(b"\\xff\\x00\\x00" + b'{"t":"n","v":%d}' % v)
        time.sleep(0.2)
    print("[INFO] scream server: summary   2.0  Transmit rate =  2000kbps, PLR =  0.00%( 0.00%),"
          " RTT = 0.030s, Queue delay = 0.005s", flush=True)
    signal.sigwait([signal.SIGTERM])
    print("[INFO] all done", flush=True)
    """
)


def test_the_game_server_follows_the_proxys_commands(tmp_path: Path) -> None:
    cmd_port, video_port = _free_port(socket.SOCK_STREAM), _free_port(socket.SOCK_DGRAM)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", video_port))
    sink.settimeout(0.1)
    files = {n: str(tmp_path / n) for n in ("c.csv", "f.csv", "p.log")}
    argv = ecgp.game_argv(
        ecgp_game.__file__,
        duration_s=1.5,
        fps=60,
        ssrc=0x64,
        commands=files["c.csv"],
        frames=files["f.csv"],
        proxy_log=files["p.log"],
        proxy=[sys.executable, "-c", FAKE_PROXY, str(cmd_port)],
    )
    argv[0] = sys.executable
    argv[2:2] = ["--command-port", str(cmd_port), "--video-port", str(video_port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    game = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    packets = []
    while game.poll() is None:
        with contextlib.suppress(TimeoutError):
            packets.append(sink.recv(2048))
    out, err = game.communicate()
    sink.close()
    assert game.returncode == 0, err.decode()
    commands = ecgp.read_commands(Path(files["c.csv"]))
    assert commands["target_bps"].to_list() == [4000000, -1, 2500000]
    with Path(files["f.csv"]).open() as fh:
        frames = list(csv.DictReader(fh))
    assert len(frames) == 90
    assert frames[0]["target_bps"] == "10000000" and frames[-1]["target_bps"] == "2500000"
    keyframes = [f for f in frames if f["keyframe"] == "1"]
    assert len(keyframes) == 2  # the first frame, and the one asked for with -1
    # the encoder follows the last target with its 100 ms lag
    assert 2.5e6 <= float(frames[-1]["encoder_bps"]) < 2.6e6
    assert len(packets) == sum(int(f["packets"]) for f in frames)
    assert packets[0][8:12] == (0x64).to_bytes(4, "big")  # the run's SSRC
    assert out.decode().count('"commands": 3') == 1
    summaries = ecgp.read_summaries(Path(files["p.log"]))
    assert summaries["transmit_bps"].to_list() == [2e6]
    assert "all done" in Path(files["p.log"]).read_text()  # its output until it ended


def test_the_server_log_reads_as_controller_columns() -> None:
    df = ecgp.read_summaries(FIXTURES / ecgp.SERVER_LOG_NAME)
    assert df.height == 5
    first, last = df.row(0, named=True), df.row(-1, named=True)
    assert first["t_ns"] == 1795721277369976645
    assert first["transmit_bps"] == 8547e3
    assert first["srtt_ms"] == pytest.approx(34.0)
    assert first["loss_pct"] == pytest.approx(2.52) and first["loss_long_pct"] == 5.84
    assert last["qdelay_avg_ms"] == pytest.approx(7028.0)
    assert ecgp.count_discarded(FIXTURES / ecgp.SERVER_LOG_NAME) == 216
    log = ecgp.read_log(FIXTURES)
    assert log.height == 5 + 5 and log["t_ns"].is_sorted()
    assert log["target_bps"].drop_nulls().to_list()[:3] == [4000000, 3999145, 5956487]


def test_a_line_without_its_arrival_time_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "server.log"
    line = (FIXTURES / ecgp.SERVER_LOG_NAME).read_text().splitlines()[2]
    bad.write_text(line.split("\t", 1)[1] + "\n")
    with pytest.raises(ecgp.ProxyLogError, match=r"server\.log:1: no arrival time"):
        ecgp.read_summaries(bad)


def test_programs_come_from_the_environment_or_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (ecgp.SERVER_NAME, ecgp.CLIENT_NAME):
        p = tmp_path / name
        p.write_bytes(b"#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(ecgp.SERVER_ENV, raising=False)
    monkeypatch.delenv(ecgp.CLIENT_ENV, raising=False)
    proxy = ecgp.find_proxy()
    assert proxy.client == tmp_path / ecgp.CLIENT_NAME
    described = proxy.describe()
    assert described["server_sha256"] == hashlib.sha256(proxy.server.read_bytes()).hexdigest()
    assert "proxy_commit" not in described  # not built in a checkout of the proxy
    monkeypatch.setenv(ecgp.SERVER_ENV, str(tmp_path / "missing"))
    with pytest.raises(ecgp.ProxyNotFoundError, match=r"CGA_ECGP_SERVER_BIN names .*docs/cg\.md"):
        ecgp.find_proxy()
    monkeypatch.delenv(ecgp.SERVER_ENV)
    monkeypatch.setenv("PATH", os.devnull)
    with pytest.raises(
        ecgp.ProxyNotFoundError,
        match=r"scream_server is not on the PATH and \$CGA_ECGP_SERVER_BIN is not set: .*cg\.md",
    ):
        ecgp.find_proxy()
    monkeypatch.setenv(ecgp.SERVER_ENV, str(tmp_path / ecgp.SERVER_NAME))
    with pytest.raises(ecgp.ProxyNotFoundError, match=r"scream_client .*CGA_ECGP_CLIENT_BIN"):
        ecgp.find_proxy()


def test_a_build_in_a_checkout_records_its_commits(tmp_path: Path) -> None:
    def git(folder: Path, *args: str) -> str:
        run = subprocess.run(
            ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
            text=True,
        )
        return run.stdout.strip()

    top, scream = tmp_path / "proxy", tmp_path / "proxy" / "scream"
    (scream / "code").mkdir(parents=True)
    (top / "scream_v2_server_single.cpp").write_text("//\n")
    (scream / "code" / "ScreamV2Tx.cpp").write_text("//\n")
    for folder in (scream, top):
        git(folder, "init", "-q")
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "x")
    (top / "build").mkdir()
    binary = top / "build" / ecgp.SERVER_NAME
    binary.write_bytes(b"")
    commits = ecgp.checkout_commits(binary)
    assert commits == {
        "proxy_commit": git(top, "rev-parse", "HEAD"),
        "scream_commit": git(scream, "rev-parse", "HEAD"),
    }
    # one checkout for both programs: one record
    assert "proxy_local_changes" not in ecgp.Proxy(binary, binary).describe()
    # the client built in a second checkout, locally changed: its own record, saying so
    other = tmp_path / "proxy-fixed"
    git(tmp_path, "clone", "-q", str(top), str(other))
    (other / "scream_v2_server_single.cpp").write_text("// the clock read under the lock\n")
    (other / "build").mkdir()
    client = other / "build" / ecgp.CLIENT_NAME
    client.write_bytes(b"x")
    assert ecgp.checkout_commits(client)["proxy_local_changes"] == "scream_v2_server_single.cpp"
    meta = ecgp.Proxy(binary, client).describe()
    assert "proxy_local_changes" not in meta
    assert meta["client_proxy_local_changes"] == "scream_v2_server_single.cpp"
    assert meta["client_proxy_commit"] == meta["proxy_commit"]


def _run(**cg: object) -> dict[str, object]:
    return {
        "name": "r",
        "schedule": {"preset": "custom", "duration_s": 30, "competitor": []},
        "bottleneck": {"rate_mbit": 20, "qdisc": {"kind": "pfifo", "limit": 250}},
        "cg": {"source": "ecgp-proxy", **cg},
    }


def test_run_files_select_it_and_may_not_contradict_what_is_compiled_in(
    tmp_path: Path,
) -> None:
    cfg = parse_run(_run(fps=30, min_mbit=0.5), "r.yaml", tmp_path)
    assert cfg.cg.source == "ecgp-proxy" and cfg.default_labels()["system"] == "ecgp-proxy"
    for key, value in (
        ("ecn", "none"),
        ("rate_mbit", 1.5),
        ("max_mbit", 45),
        ("port", 30001),
        ("cc", "tfrc"),
    ):
        with pytest.raises(ConfigError, match=rf"r\.yaml: key cg\.{key}: .*compiled in"):
            parse_run(_run(**{key: value}), "r.yaml", tmp_path)
    with pytest.raises(ConfigError, match=r"cg\.sender_args"):
        parse_run(_run(sender_args=["-x"]), "r.yaml", tmp_path)


def test_the_proxies_tcp_connection_is_not_the_competitor(tmp_path: Path) -> None:
    rules = rules_from_mapping(roles(parse_run(_run(), "r.yaml", tmp_path)))
    packets = pl.DataFrame(
        {"proto": [17, 6, 6], "sport": [30002, 29999, 40000], "dport": [30002, 41000, 5201]}
    )
    assert assign_roles(packets, rules)["role"].to_list() == ["cg", "other", "competitor"]
    plain = parse_run({**_run(), "cg": {"source": "rtp-cbr"}}, "r.yaml", tmp_path)
    assert "other" not in roles(plain)


def test_the_clients_race_is_flagged(tmp_path: Path) -> None:
    cfg = parse_run(_run(), "r.yaml", tmp_path)
    (tmp_path / ecgp.GAME_SUMMARY_NAME).write_text('{"frames": 2700}\n')
    log = tmp_path / ecgp.SERVER_LOG_NAME
    log.write_text((FIXTURES / ecgp.SERVER_LOG_NAME).read_text())
    info: dict[str, object] = {}
    (flag,) = cg_flags(cfg, info, tmp_path)
    assert "7.0 s of queue delay" in flag and "race" in flag
    assert info["qdelay_avg_max_ms"] == 7028.0 and info["rtp_queue_discarded_packets"] == 216
    calm = [ln for ln in log.read_text().splitlines() if "Queue delay = 0.0" in ln]
    log.write_text("\n".join(calm) + "\n")
    assert cg_flags(cfg, {}, tmp_path) == []
    # A race that SCReAM's 20 s reset cleared soon peaked at 0.614 s (a DualPI2 run); a
    # 150 ms drop-tail queue (pfifo 250 at 20 Mbit/s) stays below the threshold.
    for qdelay, flagged in (("0.614", 1), ("0.150", 0)):
        log.write_text(calm[0].replace("0.020s", f"{qdelay}s") + "\n")
        assert len(cg_flags(cfg, {}, tmp_path)) == flagged, qdelay


def test_a_campaign_factor_selects_it_on_a_base_that_agrees(tmp_path: Path) -> None:
    from cganalysis.experiment.campaign import load_campaign

    repo = Path(__file__).resolve().parents[2]
    base = "base.yaml"  # configs/runs/quick-pfifo.yaml (cg.rate_mbit 1.5), beside the campaign
    (tmp_path / base).write_text((repo / "configs/runs/quick-pfifo.yaml").read_text())
    factors = {
        "cg": {"ours": {"cg": {"source": "cga-cg"}}, "ecgp": {"cg": {"source": "ecgp-proxy"}}}
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"campaign": "e", "base": base, "factors": factors}))
    with pytest.raises(ConfigError, match=r"cg\.rate_mbit: 1\.5: source ecgp-proxy has 10\.0"):
        load_campaign(path)
    factors["cg"]["ecgp"]["cg"]["rate_mbit"] = 10  # type: ignore[index]
    path.write_text(yaml.safe_dump({"campaign": "e", "base": base, "factors": factors}))
    runs = {r.levels["cg"]: r.config for r in load_campaign(path).runs}
    assert runs["ecgp"].cg.source == "ecgp-proxy" and runs["ecgp"].all_labels()["cg"] == "ecgp"


def test_a_game_server_that_did_not_finish_is_flagged_with_its_last_line(
    tmp_path: Path,
) -> None:
    cfg = parse_run(_run(), "r.yaml", tmp_path)
    (tmp_path / ecgp.GAME_LOG_NAME).write_text(
        f"{ecgp_game.READY}\n{ecgp_game.CONNECTED}\n"
        "game server: the proxy client did not connect to the server\n"
    )
    (flag,) = cg_flags(cfg, {}, tmp_path)
    assert flag.startswith("ecgp-proxy's game server did not finish (game server: the proxy")
    (tmp_path / ecgp.GAME_SUMMARY_NAME).write_text('{"frames": 2700}\n')
    assert cg_flags(cfg, {}, tmp_path) == []
