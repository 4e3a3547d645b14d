"""Ericsson's SCReAM as a CG source (cganalysis.cg.reference): command lines, finding the
programs, reading their sender log (real lines, tests/fixtures/scream_reference), the run
file keys and the flags of meta.json."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
import yaml

from cganalysis.cg import reference
from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run
from cganalysis.experiment.sources import SOURCES

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "scream_reference" / "tx-fixed.log"


def _argv(ecn: str) -> list[str]:
    return reference.sender_argv(
        "/x/scream_bw_test_tx",
        dest_ip="10.0.2.1",
        port=30002,
        ecn=ecn,
        start_mbps=10,
        min_mbps=None,
        max_mbps=45,
        fps=60,
        duration_s=12.5,
        log_path="cg-reference-tx.log",
        extra=["-key", "2", "4"],
    )


def test_sender_argv_carries_the_runs_settings_in_their_units() -> None:
    argv = _argv("none")
    assert argv[0] == "/x/scream_bw_test_tx"
    assert "-ect" not in argv  # not-ECT: their default (aca6556 refuses `-ect -1`)
    assert argv[argv.index("-initrate") + 1] == "10000"  # kbit/s
    assert argv[argv.index("-minrate") + 1] == "500"  # cga-cg's default minimum
    assert argv[argv.index("-maxrate") + 1] == "45000"
    assert argv[argv.index("-time") + 1] == "12.500"
    assert "-ntp" in argv  # epoch times, as the captures
    assert argv[-5:] == ["-key", "2", "4", "10.0.2.1", "30002"]
    assert reference.ect_option("ect1") == "1" and reference.ect_option("ect0") == "0"
    assert _argv("ect1")[1:3] == ["-ect", "1"]
    assert reference.receiver_argv("rx", sender_ip="10.0.1.1", port=30002) == [
        "rx",
        "10.0.1.1",
        "30002",
    ]


def test_the_log_reads_as_controller_columns() -> None:
    df = reference.read_log(FIXTURE)
    assert df.height == 7
    first, last = df.row(0, named=True), df.row(-1, named=True)
    assert first["t_ns"] == 1795468745384820000
    assert first["ref_wnd_bytes"] == 125000
    assert first["target_bps"] == 17535940
    assert last["rtt_sample_ms"] == pytest.approx(31.2)
    assert last["qdelay_ms"] == pytest.approx(5.8)
    assert last["srtt_ms"] == pytest.approx(36.99)
    assert last["qdelay_avg_ms"] == pytest.approx(3.56)
    assert last["latency_diff_cwnd_scale"] == 0.0
    assert last["pace_bps"] == 27989356
    assert df["t_ns"].is_sorted()
    assert reference.log_is_extended(FIXTURE) is True


def test_a_stock_log_has_twenty_columns(tmp_path: Path) -> None:
    stock = tmp_path / "stock.log"
    lines = FIXTURE.read_text().splitlines()
    stock.write_text("".join(",".join(ln.split(",")[:20]) + "\n" for ln in lines))
    df = reference.read_log(stock)
    assert "l4s_alpha" not in df.columns and df["target_bps"][-1] == 18812262
    assert reference.log_is_extended(stock) is False


def test_a_foreign_log_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.log"
    bad.write_text("1,2,3\n4,5,6\n")
    with pytest.raises(reference.ReferenceLogError, match=r"x\.log:1: 3 columns"):
        reference.read_log(bad)


def test_programs_come_from_the_environment_or_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (reference.TX_NAME, reference.RX_NAME):
        p = tmp_path / name
        p.write_bytes(b"#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(reference.TX_ENV, raising=False)
    monkeypatch.delenv(reference.RX_ENV, raising=False)
    ref = reference.find_reference()
    assert ref.tx == tmp_path / reference.TX_NAME
    assert ref.describe()["tx_sha256"] == hashlib.sha256(ref.tx.read_bytes()).hexdigest()
    monkeypatch.setenv(reference.RX_ENV, str(tmp_path / "missing"))
    with pytest.raises(reference.ReferenceNotFoundError, match=r"CGA_SCREAM_RX_BIN.*docs/cg\.md"):
        reference.find_reference()
    monkeypatch.delenv(reference.RX_ENV)
    monkeypatch.setenv("PATH", os.devnull)
    with pytest.raises(reference.ReferenceNotFoundError, match="not on the PATH"):
        reference.find_reference()


def _run(**cg: object) -> dict[str, object]:
    return {
        "name": "r",
        "schedule": {"preset": "custom", "duration_s": 120, "competitor": []},
        "bottleneck": {"rate_mbit": 20, "qdisc": {"kind": "pfifo", "limit": 250}},
        "cg": {"source": "scream-reference", **cg},
    }


def test_run_files_select_it(tmp_path: Path) -> None:
    cfg = parse_run(_run(sender_args=["-key", 2, 4]), "r.yaml", tmp_path)
    assert cfg.cg.source == "scream-reference"
    assert cfg.cg.sender_args == ("-key", "2", "4")
    assert cfg.default_labels()["system"] == "scream-reference"
    with pytest.raises(ConfigError, match=r"r\.yaml: key cg\.cc: 'tfrc'.*SCReAM only"):
        parse_run(_run(cc="tfrc"), "r.yaml", tmp_path)


def test_long_runs_of_a_build_not_known_to_be_fixed_are_flagged(tmp_path: Path) -> None:
    cfg = parse_run(_run(), "r.yaml", tmp_path)
    log = tmp_path / reference.LOG_NAME
    log.write_text("".join(",".join(ln.split(",")[:20]) + "\n" for ln in FIXTURE.open()))
    info: dict[str, object] = {"duration_s": 120.0}
    (flag,) = SOURCES[cfg.cg.source].post_run_flags(info, tmp_path)
    assert "maxPolicedCwnd" in flag and info["overflow_fix"] == "unknown"
    log.write_text(FIXTURE.read_text())
    info = {"duration_s": 120.0}
    assert SOURCES[cfg.cg.source].post_run_flags(info, tmp_path) == []
    assert str(info["overflow_fix"]).startswith("yes")
    log.write_text("".join(",".join(ln.split(",")[:20]) + "\n" for ln in FIXTURE.open()))
    source = SOURCES[cfg.cg.source]
    assert source.post_run_flags({"duration_s": 60.0}, tmp_path) == []  # shorter: no overflow
    # A 2023 program (its version line) has no maxPolicedCwnd to overflow.
    old: dict[str, object] = {"duration_s": 120.0, "program_version": "2023-09-18"}
    assert source.post_run_flags(old, tmp_path) == []
    assert str(old["overflow_fix"]).startswith("not needed")
    newer: dict[str, object] = {"duration_s": 120.0, "program_version": "2024-05-02"}
    assert len(source.post_run_flags(newer, tmp_path)) == 1
    unknown: dict[str, object] = {"duration_s": 120.0, "program_version": "unknown"}
    assert len(source.post_run_flags(unknown, tmp_path)) == 1


def test_a_campaign_factor_selects_it(tmp_path: Path) -> None:
    from cganalysis.experiment.campaign import load_campaign

    repo = Path(__file__).resolve().parents[2]
    doc = {
        "campaign": "refcmp",
        "base": "base.yaml",  # beside the campaign file (no absolute paths)
        "factors": {
            "cg": {
                "ours": {"cg": {"source": "cga-cg"}},
                "reference": {"cg": {"source": "scream-reference"}},
            }
        },
    }
    (tmp_path / "base.yaml").write_text((repo / "configs/runs/quick-pfifo.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    runs = {r.levels["cg"]: r.config for r in load_campaign(path).runs}
    assert runs["reference"].cg.source == "scream-reference"
    assert runs["reference"].all_labels()["cg"] == "reference"
    assert runs["ours"].cg.source == "cga-cg"


# The first line of each build's usage text (aca6556 without and with V2 defined).
V1_BANNER = "SCReAM V1 BW test tool, sender. Ericsson AB. Version 2023-02-10"
V2_BANNER = "SCReAM V2 BW test tool, sender. Ericsson AB. Version 2023-09-18"


def _program(path: Path, first_line: str) -> Path:
    """A stand-in for the user's build that prints its usage as theirs does (to stderr,
    exit status 255)."""
    path.write_text(f"#!/bin/sh\necho '{first_line}' >&2\necho 'Usage : ' >&2\nexit 255\n")
    path.chmod(0o755)
    return path


def test_the_banner_names_the_controller_class() -> None:
    assert reference.parse_banner(V1_BANNER + "\nUsage :") == reference.Banner("v1", "2023-02-10")
    assert reference.parse_banner("x\n" + V2_BANNER) == reference.Banner("v2", "2023-09-18")
    assert reference.parse_banner("SCReAM V3 BW test tool, sender. Ericsson AB.") is None
    assert reference.parse_banner("") is None
    assert reference.controller_refusal("v2", reference.Banner("v2", "2023-09-18"), "tx") is None
    refusal = reference.controller_refusal("v2", reference.Banner("v1", "2023-02-10"), "/b/tx")
    assert refusal is not None and "/b/tx runs SCReAM V1" in refusal and "-DV2" in refusal
    unknown = reference.controller_refusal("v1", None, "tx")
    assert unknown is not None and "does not say" in unknown


def test_meta_records_the_controller_the_build_runs(tmp_path: Path) -> None:
    tx = _program(tmp_path / reference.TX_NAME, V1_BANNER)
    rx = _program(tmp_path / reference.RX_NAME, "receiver")
    info = reference.Reference(tx, rx).describe()
    assert (info["controller"], info["program_version"]) == ("v1", "2023-02-10")
    _program(tx, "something else")
    assert reference.Reference(tx, rx).describe()["controller"] == "unknown"


def test_a_run_that_names_a_controller_refuses_a_build_of_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError

    tx = _program(tmp_path / reference.TX_NAME, V1_BANNER)
    rx = _program(tmp_path / reference.RX_NAME, "receiver")
    monkeypatch.setenv(reference.TX_ENV, str(tx))
    monkeypatch.setenv(reference.RX_ENV, str(rx))
    here = NetnsHost("this host", None, tmp_path)
    source = SOURCES["scream-reference"]
    wants_v2 = parse_run(_run(reference_controller="v2"), "r.yaml", tmp_path)
    assert wants_v2.cg.to_dict()["reference_controller"] == "v2"
    with pytest.raises(TestbedError, match=r"scream_bw_test_tx runs SCReAM V1 .*-DV2"):
        source.check(here, wants_v2.cg)
    source.check(here, parse_run(_run(reference_controller="v1"), "r.yaml", tmp_path).cg)
    any_build = parse_run(_run(), "r.yaml", tmp_path)
    source.check(here, any_build.cg)  # no controller asked: any build runs
    assert "reference_controller" not in any_build.cg.to_dict()  # earlier runs' configs stay
    _program(tx, V2_BANNER)
    source.check(here, wants_v2.cg)


def test_the_controller_key_belongs_to_scream_reference(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cg\.reference_controller: 'v3'"):
        parse_run(_run(reference_controller="v3"), "r.yaml", tmp_path)
    doc = _run(reference_controller="v2")
    doc["cg"] = {"source": "cga-cg", "reference_controller": "v2"}
    with pytest.raises(ConfigError, match=r"cg\.reference_controller: only with source"):
        parse_run(doc, "r.yaml", tmp_path)


def test_a_2023_log_reads_without_the_later_columns(tmp_path: Path) -> None:
    old = tmp_path / "aca6556.log"
    lines = FIXTURE.read_text().splitlines()
    old.write_text("".join(",".join(ln.split(",")[:17]) + "\n" for ln in lines))
    df = reference.read_log(old)
    assert df.height == 7 and "target_bps" not in df.columns
    assert df["ref_wnd_bytes"][0] == 125000 and reference.log_is_extended(old) is False
    old.write_text(old.read_text() + ",".join(["1"] * 20) + "\n" + "1,2\n")
    with pytest.raises(
        reference.ReferenceLogError, match=r"aca6556\.log:8: 20 columns, expected 17"
    ):
        reference.read_log(old)


def test_a_sender_that_logged_nothing_is_flagged_with_its_words(tmp_path: Path) -> None:
    cfg = parse_run(_run(), "r.yaml", tmp_path)
    (tmp_path / "cg-reference-tx.out").write_text("ect must be -1, 0, 1 or 3 \x1b[31m\n")
    (flag,) = SOURCES[cfg.cg.source].post_run_flags({"duration_s": 40.0}, tmp_path)
    assert flag == (
        "scream-reference: its sender logged no feedback (it said: ect must be -1, 0, 1 or 3 [31m)"
    )
