"""Command lines of cga-cg built from options, and their validation (cganalysis.cg)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cganalysis.cg.binary import BINARY_ENV, GeneratorNotFoundError, find_binary
from cganalysis.cg.options import ReceiveOptions, SendOptions, parse_endpoint
from cganalysis.cli import main
from cganalysis.errors import ConfigError

BIN = Path("/opt/cga-cg")


def test_send_argv_has_the_options_given() -> None:
    o = SendOptions(dest="10.0.2.1:30002", cc="none", rate_mbps=30.0, duration_s=20.0)
    argv = o.argv(BIN, Path("/tmp/logs"))
    assert argv[:5] == ["/opt/cga-cg", "send", "10.0.2.1:30002", "--cc", "none"]
    pairs = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert pairs["--rate-mbps"] == "30"
    assert pairs["--duration"] == "20"
    assert pairs["--log"] == "/tmp/logs"
    assert pairs["--num-reports"] == "count"
    assert "--ecn" not in pairs  # the binary picks the controller's default


def test_extra_options_pass_through() -> None:
    o = SendOptions(dest="[fd00::1]:5000", extra=("--spin-us", "20"))
    assert o.argv(BIN)[-2:] == ["--spin-us", "20"]
    r = ReceiveOptions(listen="0.0.0.0:30002", num_reports="count-minus-one", duration_s=5.0)
    assert r.argv(BIN, Path("/l")) == [
        "/opt/cga-cg",
        "receive",
        "0.0.0.0:30002",
        "--num-reports",
        "count-minus-one",
        "--duration",
        "5",
        "--log",
        "/l",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dest": "10.0.2.1"}, "IP:PORT"),
        ({"dest": "host:80"}, "IP:PORT"),
        ({"dest": "10.0.2.1:70000"}, "IP:PORT"),
        ({"dest": "10.0.2.1:1", "cc": "bbr"}, "--cc"),
        ({"dest": "10.0.2.1:1", "ecn": "ce"}, "--ecn"),
        ({"dest": "10.0.2.1:1", "max_mbps": 0.0}, "--max-mbps"),
        ({"dest": "10.0.2.1:1", "min_mbps": 40.0}, "--min-mbps 40.0 is above"),
        ({"dest": "10.0.2.1:1", "frames": Path("/nonexistent.csv")}, "--frames"),
        ({"dest": "10.0.2.1:1", "num_reports": "all"}, "--num-reports"),
    ],
)
def test_bad_send_options_name_the_option(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SendOptions(**kwargs)  # type: ignore[arg-type]


def test_endpoints() -> None:
    assert parse_endpoint("[fd00::1]:30002", "x") == ("fd00::1", 30002)
    assert parse_endpoint("10.0.0.1:1", "x") == ("10.0.0.1", 1)


def test_binary_lookup_errors_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BINARY_ENV, str(tmp_path / "missing"))
    with pytest.raises(GeneratorNotFoundError, match=BINARY_ENV):
        find_binary()
    monkeypatch.delenv(BINARY_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GeneratorNotFoundError, match=r"scripts/install\.sh"):
        find_binary()
    fake = tmp_path / "cga-cg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert find_binary() == fake
    monkeypatch.setenv(BINARY_ENV, str(fake))
    assert find_binary() == fake
    assert os.access(find_binary(), os.X_OK)


def test_command_line_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cg", "send", "10.0.2.1", "--log", "/tmp/x"]) == 2
    err = capsys.readouterr().err
    assert "cganalysis cg: error: destination '10.0.2.1'" in err
    assert len(err.strip().splitlines()) == 1
