"""DVC round trips of raw campaigns with the project's own DVC files, as a lab does it.

Each test builds a scratch git repository from the project's `.gitignore`, `.dvcignore`
and `.dvc/config` (only the remote's URL changed), with the committed example run as the
project has it (a symbolic link to a fixture), and follows docs/datasets.md's commands:
`dvc add data/raw/<campaign>`, `git add data/raw/<campaign>.dvc`, `dvc push`; on a fresh
clone `dvc pull` of everything and of one campaign. Every file comes back byte for byte
(SHA-256) and read-only; nothing else in the clone (results, a campaign not yet added) is
touched. The remote is a local folder, then the loopback's OpenSSH server reached as
docs/datasets.md says (dvc-ssh through OpenSSH, which checks the host key). The project's
own cache and remote are never used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cganalysis.experiment.rundir import seal
from tests.conftest import REPO, need_root, need_tool

SSHD = "/usr/sbin/sshd"


@dataclass
class Shell:
    """Commands run as a user would, with their own HOME (git identity, ~/.ssh/config)."""

    env: dict[str, str]

    def run(self, cwd: Path, *argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, env=self.env, check=False
        )
        if ok:
            assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
        return done


def _shell(home: Path) -> Shell:
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "lab",
        "GIT_AUTHOR_EMAIL": "lab@example.org",
        "GIT_COMMITTER_NAME": "lab",
        "GIT_COMMITTER_EMAIL": "lab@example.org",
        # The interpreter running the tests has dvc (and dvc-ssh) installed.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return Shell(env)


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _writable(root: Path) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    ]


def _origin(sh: Shell, repo: Path, remote_url: str) -> None:
    """A repository with the project's DVC and git ignore files and its example run."""
    repo.mkdir()
    sh.run(repo, "git", "init", "-q", "-b", "main")
    sh.run(repo, "dvc", "init", "-q")
    for name in (".gitignore", ".dvcignore", ".dvc/config"):
        shutil.copyfile(REPO / name, repo / name)
    sh.run(repo, "dvc", "remote", "modify", "local", "url", remote_url)
    fixture = repo / "tests" / "fixtures" / "dualpoint"
    shutil.copytree(REPO / "tests" / "fixtures" / "dualpoint", fixture)
    example = repo / "data" / "raw" / "example"
    example.mkdir(parents=True)
    (example / "htb-pfifo-cubic-r01").symlink_to("../../../tests/fixtures/dualpoint")
    sh.run(repo, "git", "add", "-A")
    sh.run(repo, "git", "commit", "-q", "-m", "project")


def _campaign(repo: Path, name: str, runs: int) -> dict[str, str]:
    """A raw campaign as the testbed leaves it (runs sealed read-only); its digests."""
    campaign = repo / "data" / "raw" / name
    for i in range(1, runs + 1):
        run = campaign / f"{name}-r{i:02d}"
        shutil.copytree(REPO / "tests" / "fixtures" / "dualpoint", run)
        (run / "note.txt").write_text(f"{name} run {i}\n")  # each run its own content
        seal(run)
    return _digests(campaign)


def _add_and_push(sh: Shell, repo: Path, name: str) -> None:
    """docs/datasets.md, 'After a campaign has run'."""
    sh.run(repo, "dvc", "add", f"data/raw/{name}")
    sh.run(repo, "git", "add", f"data/raw/{name}.dvc")
    # Nothing else for git: the runs are ignored, DVC wrote no other file to commit.
    assert sh.run(repo, "git", "status", "--porcelain").stdout == f"A  data/raw/{name}.dvc\n"
    sh.run(repo, "git", "commit", "-q", "-m", f"{name} raw runs")
    pushed = sh.run(repo, "dvc", "push").stdout
    assert "pushed" in pushed, pushed


def _round_trip(sh: Shell, tmp: Path, remote_url: str, remote_files: Path) -> None:
    origin = tmp / "origin"
    _origin(sh, origin, remote_url)
    # A fresh clone of a project that tracks no campaign yet: a plain pull succeeds.
    sh.run(tmp, "git", "clone", "-q", str(origin), "empty")
    sh.run(tmp / "empty", "dvc", "pull")

    first = _campaign(origin, "camp-a", 2)
    _add_and_push(sh, origin, "camp-a")
    assert any(p.is_file() for p in remote_files.rglob("*"))
    second = _campaign(origin, "camp-b", 1)
    _add_and_push(sh, origin, "camp-b")

    # A fresh clone pulls one campaign by name, then everything.
    sh.run(tmp, "git", "clone", "-q", str(origin), "clone")
    clone = tmp / "clone"
    raw = clone / "data" / "raw"
    sh.run(clone, "dvc", "pull", "data/raw/camp-a")
    assert _digests(raw / "camp-a") == first and not (raw / "camp-b").exists()
    assert _writable(raw / "camp-a") == []  # as the testbed wrote it
    # What the user made meanwhile: results, and a campaign of their own not yet added.
    (clone / "results").mkdir()
    (clone / "results" / "table.csv").write_text("made here\n")
    mine = _campaign(clone, "mine", 1)
    sh.run(clone, "dvc", "pull")
    assert _digests(raw / "camp-a") == first and _digests(raw / "camp-b") == second
    assert _writable(raw / "camp-a") == [] and _writable(raw / "camp-b") == []
    assert (clone / "results" / "table.csv").read_text() == "made here\n"
    assert _digests(raw / "mine") == mine
    assert (raw / "example" / "htb-pfifo-cubic-r01").is_symlink()
    status = sh.run(clone, "dvc", "status").stdout
    assert "up to date" in status, status

    # The clone's own new campaign goes up with a plain push; another clone gets it.
    _add_and_push(sh, clone, "mine")
    sh.run(clone, "git", "push", "-q", "origin", "HEAD:refs/heads/from-clone")
    sh.run(tmp, "git", "clone", "-q", "-b", "from-clone", str(origin), "third")
    sh.run(tmp / "third", "dvc", "pull")
    third = tmp / "third" / "data" / "raw"
    assert (_digests(third / "camp-a"), _digests(third / "camp-b")) == (first, second)
    assert _digests(third / "mine") == mine


def test_project_has_a_default_local_remote() -> None:
    need_tool("dvc")
    sh = _shell(Path.home())
    name = sh.run(REPO, "dvc", "remote", "default").stdout.strip()
    listed = sh.run(REPO, "dvc", "remote", "list").stdout.splitlines()
    remotes = dict(line.split(None, 1) for line in listed)
    url = remotes[name].split()[0]
    assert Path(url).is_absolute() and not Path(url).is_relative_to(REPO.resolve()), url


def test_the_committed_config_turns_analytics_off() -> None:
    """DVC's analytics daemon starts with each command unless the project says no; what
    DVC itself reads from the committed config, not a text search of it."""
    need_tool("dvc")
    got = _shell(Path.home()).run(REPO, "dvc", "config", "--project", "core.analytics")
    assert got.stdout.strip() == "false"


def test_round_trip_through_a_local_remote(tmp_path: Path) -> None:
    need_tool("dvc", "git")
    remote = tmp_path / "remote"
    _round_trip(_shell(tmp_path / "home"), tmp_path, str(remote), remote)


SSHD_CONFIG = """\
ListenAddress 127.0.0.1:{port}
HostKey {tmp}/hostkey
AuthorizedKeysFile {tmp}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
Subsystem sftp internal-sftp
UsePAM no
StrictModes no
PidFile none
MaxSessions 50
MaxStartups 50
LogLevel ERROR
"""

# docs/datasets.md's ~/.ssh/config for an SSH remote, with the test's key, port and
# known-hosts file: DVC's client reaches the server's own sshd through OpenSSH's `-W`,
# and OpenSSH checks the host key. (`-F`: OpenSSH reads the account's ~/.ssh, not $HOME's.)
SSH_CONFIG = """\
Host cga-dvc-remote
    HostName 127.0.0.1
    Port {port}
    User {user}
    IdentityFile {tmp}/id
    ProxyCommand ssh -F {tmp}/home/.ssh/config -o StrictHostKeyChecking=yes -W localhost:%p %h
Host 127.0.0.1
    Port {port}
    User {user}
    IdentityFile {tmp}/id
    IdentitiesOnly yes
    UserKnownHostsFile {tmp}/known_hosts
    BatchMode yes
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def ssh_remote(tmp_path: Path) -> Iterator[tuple[Shell, str]]:
    """The loopback's sshd (Debian's openssh-server) with a key made for the test, and a
    user's ~/.ssh/config naming it; yields the shell and the remote's host alias."""
    need_root()
    need_tool("dvc", "git", "ssh", "ssh-keygen")
    if not Path(SSHD).exists():
        pytest.skip("needs Debian's openssh-server (bash scripts/install.sh installs it)")
    pytest.importorskip("dvc_ssh", reason="needs dvc-ssh (in the lock: scripts/install.sh)")
    for name in ("id", "hostkey"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
            check=True,
        )
    shutil.copyfile(tmp_path / "id.pub", tmp_path / "authorized_keys")
    port = _free_port()
    (tmp_path / "sshd_config").write_text(SSHD_CONFIG.format(port=port, tmp=tmp_path))
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    sshd = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(tmp_path / "sshd_config")], stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "sshd did not start"
                time.sleep(0.1)
        hostkey = (tmp_path / "hostkey.pub").read_text().split()
        (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{port} {hostkey[0]} {hostkey[1]}\n")
        sh = _shell(tmp_path / "home")
        dot_ssh = tmp_path / "home" / ".ssh"
        dot_ssh.mkdir(mode=0o700)
        user = os.environ.get("USER") or "root"
        (dot_ssh / "config").write_text(SSH_CONFIG.format(port=port, tmp=tmp_path, user=user))
        yield sh, "cga-dvc-remote"
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


def test_round_trip_through_an_ssh_remote(tmp_path: Path, ssh_remote: tuple[Shell, str]) -> None:
    sh, host = ssh_remote
    remote = tmp_path / "ssh-remote"
    _round_trip(sh, tmp_path, f"ssh://{host}{remote}", remote)


def test_an_ssh_remote_with_another_host_key_is_refused(
    tmp_path: Path, ssh_remote: tuple[Shell, str]
) -> None:
    """The host key is checked: a server whose key is not the known one gets nothing."""
    sh, host = ssh_remote
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = (tmp_path / "known_hosts").read_text().split()
    (tmp_path / "known_hosts").write_text(
        f"{known[0]} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n"
    )
    remote = tmp_path / "ssh-remote"
    _origin(sh, tmp_path / "origin", f"ssh://{host}{remote}")
    _campaign(tmp_path / "origin", "camp-a", 1)
    sh.run(tmp_path / "origin", "dvc", "add", "data/raw/camp-a")
    refused = sh.run(tmp_path / "origin", "dvc", "push", ok=False)
    assert refused.returncode != 0
    assert not remote.exists() or not any(p.is_file() for p in remote.rglob("*"))
