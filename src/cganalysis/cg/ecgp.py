"""eCGP's SCReAM proxy as a CG source (``cg.source: ecgp-proxy``).

eCGP's proxy (github.com/Nayald/game-stream-scream-proxy, GPL-3; the code of TMA 2024's
platform, with Ericsson's SCReAM V2 as a submodule) is built by the user (docs/cg.md) and
found through ``$CGA_ECGP_SERVER_BIN`` / ``$CGA_ECGP_CLIENT_BIN`` or the ``PATH``; nothing
of theirs is in the project. Its proxy server wraps a game server's RTP video with SCReAM
and its proxy client returns SCReAM's feedback; the game server and game client are ours
(``cganalysis/cg/ecgp_game.py`` and a UDP sink). This module builds their command lines,
describes the binaries for ``meta.json`` and reads what the chain logs.

Everything of the proxy is fixed at compile time: its ports (below), SCReAM's settings
(L4S, so ECT(1); 0.5 / 10 / 30 Mbit/s minimum / start / maximum), SSRC 100 in its feedback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.errors import CganalysisError
from cganalysis.io import sha256_file

SERVER_NAME = "scream_server"
CLIENT_NAME = "scream_client"
SERVER_ENV = "CGA_ECGP_SERVER_BIN"
CLIENT_ENV = "CGA_ECGP_CLIENT_BIN"
#: The proxies' video port on both hosts (main_server.cpp / main_client.cpp): SCReAM's RTP
#: leaves the server from it to the client's, and the feedback comes back between them.
VIDEO_PORT = 30002
#: The proxy client's TCP connection to the proxy server (the game's command channel; idle
#: here). It crosses the bottleneck, so the run's role rules keep it out of ``competitor``.
CONTROL_TCP_PORT = 29999
#: Their SCReAM's settings (main_server.cpp), which the run file must not contradict.
START_MBPS, MIN_MBPS, MAX_MBPS = 10.0, 0.5, 30.0
ECN = "ect1"
#: Files in the run directory.
COMMANDS_NAME = "cg-ecgp-commands.csv"
FRAMES_NAME = "cg-ecgp-frames.csv"
SERVER_LOG_NAME = "cg-ecgp-server.log"
CLIENT_LOG_NAME = "cg-ecgp-client.log"
GAME_SUMMARY_NAME = "cg-ecgp-game.json"
GAME_LOG_NAME = "cg-ecgp-game.log"
#: A summary queue delay beyond this is, on the shipped bottlenecks (the largest fixed-rate
#: queue holds 150 ms), the client's feedback-clock race (docs/cg.md): its feedback claims
#: arrivals ~8 s early. The race's summaries peaked at 0.61-8.1 s, the other runs' at
#: 0.14 s; a slow trace-driven link with a long queue may reach it too (the flag says so).
RACE_QDELAY_MS = 500.0

_SUMMARY = re.compile(
    r"summary\s+(?P<t>[\d.]+)\s+Transmit rate =\s*(?P<rate>[\d.]+)kbps, "
    r"PLR =\s*(?P<plr>[\d.]+)%\(\s*(?P<plr_long>[\d.]+)%\), RTT =\s*(?P<rtt>[\d.]+)s, "
    r"Queue delay =\s*(?P<qd>[\d.]+)s"
)
#: SCReAM's RTP queue discarding what waited longer than 0.2 s (ScreamV2Tx.cpp's message).
_DISCARD = re.compile(r"RTP queue (?P<n>\d+) packets discarded")


class ProxyNotFoundError(CganalysisError):
    """eCGP's proxy is not built or not found."""


class ProxyLogError(CganalysisError):
    """The proxy chain's logs cannot be read."""


@dataclass(frozen=True)
class Proxy:
    server: Path
    client: Path

    def describe(self) -> dict[str, Any]:
        """For meta.json: which build ran (paths, checksums, and the commits of the checkout
        it was built in, when it sits in one; the client's too, prefixed ``client_``, when
        it was built in another checkout or state)."""
        server, client = checkout_commits(self.server), checkout_commits(self.client)
        return {
            "server_path": str(self.server),
            "client_path": str(self.client),
            "server_sha256": sha256_file(self.server),
            "client_sha256": sha256_file(self.client),
            **server,
            **({f"client_{k}": v for k, v in client.items()} if client != server else {}),
        }


def _find(name: str, env_var: str) -> Path:
    """``$env_var`` if set (an executable file), else the ``PATH``: the user's build, so the
    error says where the project looks and where to read how to get it (not install.sh)."""
    where = "docs/cg.md, 'eCGP's SCReAM proxy as a CG source'"
    override = os.environ.get(env_var)
    if override:
        path = Path(override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise ProxyNotFoundError(
            f"cg.source ecgp-proxy: ${env_var} names {path}, which is not an executable "
            f"file: point it at your build of eCGP's {name} ({where})"
        )
    found = shutil.which(name)
    if found is None:
        raise ProxyNotFoundError(
            f"cg.source ecgp-proxy: {name} is not on the PATH and ${env_var} is not set: "
            f"build eCGP's proxy ({where}) and name its {name} in ${env_var}"
        )
    return Path(found)


def find_proxy() -> Proxy:
    return Proxy(_find(SERVER_NAME, SERVER_ENV), _find(CLIENT_NAME, CLIENT_ENV))


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def checkout_commits(binary: Path) -> dict[str, str]:
    """``proxy_commit`` (and ``scream_commit``, its SCReAM submodule) when the binary was
    built inside a git checkout of the proxy (e.g. its ``build/`` folder), and
    ``proxy_local_changes``, the tracked files changed since that commit, if any (a build
    of a locally changed proxy must not pass for the commit's); else nothing."""
    top = _git(binary.resolve().parent, "rev-parse", "--show-toplevel")
    if top is None or not (Path(top) / "scream_v2_server_single.cpp").exists():
        return {}
    out = {"proxy_commit": _git(Path(top), "rev-parse", "HEAD") or ""}
    status = _git(Path(top), "status", "--porcelain", "--untracked-files=no") or ""
    # `XY path` lines (the output comes stripped: the first line may lose its X)
    out["proxy_local_changes"] = " ".join(line.split(None, 1)[-1] for line in status.splitlines())
    scream = _git(Path(top) / "scream", "rev-parse", "HEAD")
    if scream and (Path(top) / "scream" / "code").is_dir():
        out["scream_commit"] = scream
    return {k: v for k, v in out.items() if v}


def server_argv(server: Path | str, *, client_ip: str, server_ip: str) -> list[str]:
    """The proxy server: game side on loopback, SCReAM from ``server_ip`` to the client.
    Its optional arguments are read one place off (``argc >= 4 ? argv[4]``), so both are
    given, after a placeholder in argv[3]."""
    return [str(server), "127.0.0.1", client_ip, "-", "127.0.0.1", server_ip]


def client_argv(client: Path | str, *, server_ip: str, client_ip: str) -> list[str]:
    """The proxy client: SCReAM's side on ``client_ip``, the game client on loopback."""
    return [str(client), server_ip, "127.0.0.1", "-", client_ip, "127.0.0.1"]


def game_argv(
    game: str,
    *,
    duration_s: float,
    fps: float,
    ssrc: int,
    commands: str,
    frames: str,
    proxy_log: str,
    proxy: list[str],
    encoder: list[str] | None = None,
) -> list[str]:
    """Our game server (``ecgp_game.py``, run by the host's ``python3``), which starts the
    proxy server (``proxy``) itself; the encoder's limits are the proxy's."""
    return [
        "python3",
        game,
        "--duration",
        f"{duration_s:.3f}",
        "--fps",
        f"{fps:g}",
        "--ssrc",
        f"{ssrc:#x}",
        "--start-bps",
        f"{START_MBPS * 1e6:.0f}",
        "--min-bps",
        f"{MIN_MBPS * 1e6:.0f}",
        "--max-bps",
        f"{MAX_MBPS * 1e6:.0f}",
        "--commands",
        commands,
        "--frames",
        frames,
        "--proxy-log",
        proxy_log,
        *(encoder or []),
        "--",
        *proxy,
    ]


def read_commands(path: Path) -> pl.DataFrame:
    """The proxy's bitrate commands as the game server received them: ``t_ns`` (epoch),
    ``target_bps`` (one per SCReAM feedback; -1 would be an I-frame request)."""
    try:
        df = pl.read_csv(path, schema={"t_ns": pl.Int64, "target_bps": pl.Float64})
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ProxyLogError(f"{path}: not a command log (t_ns,target_bps): {err}") from None
    return df


def read_summaries(path: Path) -> pl.DataFrame:
    """The proxy server's SCReAM summaries (one every 2 s; EWMAs of SCReAM's Statistics,
    gain 0.02 per rate update): ``t_ns`` when the line arrived, ``transmit_bps``,
    ``srtt_ms``, ``qdelay_avg_ms``, ``loss_pct`` (recent) and ``loss_long_pct`` (all)."""
    rows: list[tuple[int, float, float, float, float, float]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ProxyLogError(f"{path}: cannot read: {err.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        stamp, tab, rest = line.partition("\t")
        m = _SUMMARY.search(rest if tab else line)
        if m is None:
            continue
        if not tab or not stamp.isdigit():
            raise ProxyLogError(f"{path}:{number}: no arrival time before the proxy's line")
        rows.append(
            (
                int(stamp),
                float(m["rate"]) * 1e3,
                float(m["rtt"]) * 1e3,
                float(m["qd"]) * 1e3,
                float(m["plr"]),
                float(m["plr_long"]),
            )
        )
    names = ["t_ns", "transmit_bps", "srtt_ms", "qdelay_avg_ms", "loss_pct", "loss_long_pct"]
    schema = {n: pl.Int64 if n == "t_ns" else pl.Float64 for n in names}
    return pl.DataFrame(rows, schema=schema, orient="row")


def count_discarded(path: Path) -> int:
    """Packets SCReAM's RTP queue discarded in the proxy (sent by the game server, never
    on the wire): the sum over the server log's discard lines."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return sum(int(m["n"]) for m in _DISCARD.finditer(text))


def read_log(workdir: Path) -> pl.DataFrame:
    """A run's controller view, in cga-cg's controller column names: the commands
    (``target_bps``) and the summaries, one table sorted by ``t_ns`` (a row has one or the
    other)."""
    commands = read_commands(workdir / COMMANDS_NAME)
    summaries = read_summaries(workdir / SERVER_LOG_NAME)
    return pl.concat([commands, summaries], how="diagonal").sort("t_ns")


def game_failure(workdir: Path) -> str | None:
    """The flag for a run whose game server did not finish (no summary on its stdout): the
    proxy did not start or connect, or exited; its last line says which."""
    if (workdir / GAME_SUMMARY_NAME).is_file() and (workdir / GAME_SUMMARY_NAME).stat().st_size:
        return None
    log = workdir / GAME_LOG_NAME
    lines = log.read_text(errors="replace").strip().splitlines() if log.is_file() else []
    last = lines[-1] if lines else "no output"
    return f"ecgp-proxy's game server did not finish ({last}): the CG flow is not the run's"


def race_flag(summaries: pl.DataFrame) -> str | None:
    """The flag for a run in which SCReAM read an impossible queue delay, else None."""
    if summaries.is_empty():
        return None
    worst = summaries.sort("qdelay_avg_ms").row(-1, named=True)
    if worst["qdelay_avg_ms"] <= RACE_QDELAY_MS:
        return None
    return (
        f"ecgp-proxy's SCReAM averaged {worst['qdelay_avg_ms'] / 1e3:.1f} s of queue delay: "
        "its client's feedback-clock race (docs/cg.md), unless the bottleneck queues that "
        "long; its rate then is not the bottleneck's answer"
    )
