"""SLURM accounting for the test cluster: a private MariaDB server, slurmdbd storing into
it, and the cluster, an account and the user registered with `sacctmgr`, as an
administrator sets up a cluster with accounting.

The server is the test's own: its data folder, Unix socket, pid file and log are in the
cluster's scratch folder, and it listens on no TCP port (the machine's MariaDB service,
if any, and its socket are left alone). slurmdbd reaches it through that socket:
StorageHost=localhost makes MariaDB's client library take a Unix socket, whose path it
reads from MYSQL_UNIX_PORT. slurmdbd reads slurmdbd.conf beside the slurm.conf that
SLURM_CONF names. Needs root (mariadbd --user=root, SlurmUser=root).
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.integration.foreground_daemon import foreground_daemon

ACCOUNT = "cga"
DATABASE = "slurm_acct_db"
#: The server starts in well under a second and slurmdbd creates its tables in a few;
#: still waiting after this is a configuration error worth failing on.
START_TIMEOUT_S = 60


def slurm_conf_lines(dbd_port: int, munge_socket: Path) -> list[str]:
    """What slurm.conf says to keep accounts through slurmdbd on `dbd_port`."""
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=localhost",
        f"AccountingStoragePort={dbd_port}",
        # The munge socket for connections to slurmdbd (AuthInfo's is not used for them).
        f"AccountingStoragePass={munge_socket}",
        # A job runs only under an account its user is associated with. (Registering the
        # cluster associates root with the account root; the test's jobs must show the
        # user's registered default account, ACCOUNT, instead.)
        "AccountingStorageEnforce=associations",
    ]


def slurmdbd_conf(folder: Path, munge_socket: Path, dbd_port: int) -> str:
    return "\n".join(
        [
            "AuthType=auth/munge",
            f"AuthInfo=socket={munge_socket}",
            "DbdHost=localhost",
            f"DbdPort={dbd_port}",
            "SlurmUser=root",
            f"PidFile={folder / 'slurmdbd.pid'}",
            f"LogFile={folder / 'slurmdbd.log'}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=localhost",
            "StorageUser=root",
            f"StorageLoc={DATABASE}",
            "",
        ]
    )


def _wait(ready: Callable[[], bool], what: str, daemons: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        exited = [d.args for d in daemons if d.poll() is not None]
        assert not exited, f"daemon exited at start: {exited}"
        if ready():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not ready after {START_TIMEOUT_S} s")


def _accepts(unix_socket: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(unix_socket))
        except OSError:
            return False
        return True


def _sacctmgr(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sacctmgr", "--immediate", *args], env=env, capture_output=True, text=True, check=False
    )


def _mariadbd(folder: Path, unix_socket: Path) -> list[str]:
    data = folder / "data"
    subprocess.run(
        [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={data}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ],
        capture_output=True,
        check=True,
    )
    return [
        "mariadbd",
        "--no-defaults",  # the machine's /etc/mysql is not this server's
        f"--datadir={data}",
        "--user=root",
        f"--socket={unix_socket}",
        "--skip-networking",
        f"--pid-file={folder / 'mariadbd.pid'}",
        f"--log-error={folder.parent / 'mariadbd.log'}",  # beside the cluster's logs
    ]


@contextmanager
def accounting(
    folder: Path, munge_socket: Path, dbd_port: int, cluster: str, env: dict[str, str]
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """MariaDB and slurmdbd running, `cluster`, ACCOUNT and this user registered; yields
    the two daemons. `env` names the cluster's slurm.conf (SLURM_CONF), written with
    slurm_conf_lines(dbd_port)."""
    db_folder = folder / "mariadb"
    db_folder.mkdir()
    unix_socket = db_folder / "mysqld.sock"
    conf = Path(env["SLURM_CONF"]).parent / "slurmdbd.conf"
    conf.write_text(slurmdbd_conf(folder, munge_socket, dbd_port))
    conf.chmod(0o600)  # slurmdbd refuses a configuration others can read
    with ExitStack() as stack:
        mariadbd = stack.enter_context(foreground_daemon(_mariadbd(db_folder, unix_socket), env))
        _wait(lambda: _accepts(unix_socket), "MariaDB", [mariadbd])
        slurmdbd = stack.enter_context(
            foreground_daemon(["slurmdbd", "-D"], {**env, "MYSQL_UNIX_PORT": str(unix_socket)})
        )
        daemons = [mariadbd, slurmdbd]
        _wait(lambda: _sacctmgr(env, "list", "cluster").returncode == 0, "slurmdbd", daemons)

        user = pwd.getpwuid(os.geteuid()).pw_name
        for registration in (
            ("add", "cluster", cluster),
            ("add", "account", ACCOUNT, f"Cluster={cluster}"),
            ("add", "user", user, f"Account={ACCOUNT}", f"DefaultAccount={ACCOUNT}"),
        ):
            done = _sacctmgr(env, *registration)
            assert done.returncode == 0, f"sacctmgr {' '.join(registration)}: {done.stderr}"
        yield daemons
