"""Run files are validated before anything is touched: errors name the file and the key."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import load_run, parse_run
from cganalysis.testbed.qdisc import Htb

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "configs" / "runs"


def base() -> dict[str, Any]:
    return dict(yaml.safe_load((RUNS / "quick-pfifo.yaml").read_text()))


def parse(doc: dict[str, Any]):  # type: ignore[no-untyped-def]
    return parse_run(doc, "run.yaml", RUNS)


def with_(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base())
    node = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return doc


@pytest.mark.parametrize("name", ["quick-pfifo", "quick-htb", "quick-dualpi2"])
def test_shipped_runs_parse_and_fit_in_30_s(name: str) -> None:
    cfg = load_run(RUNS / f"{name}.yaml")
    assert cfg.schedule.duration_s <= 30
    assert cfg.bottleneck.forward.rate_mbit is not None
    assert cfg.all_labels()["cca"] == "cubic"


def test_quick_htb_has_classes_with_pfifo_leaves() -> None:
    q = load_run(RUNS / "quick-htb.yaml").bottleneck.forward.qdisc
    assert isinstance(q, Htb)
    assert {c.leaf.kind for c in q.classes} == {"pfifo"}


@pytest.mark.parametrize(
    ("path", "value", "key", "words"),
    [
        ("bottleneck.qdisc.kind", "fq_pie2", "bottleneck.qdisc.kind", "is not one of"),
        ("bottleneck.qdisc.limit", 0, "bottleneck.qdisc.limit", ">= 1"),
        ("bottleneck.qdisc.limti", 5, "bottleneck.qdisc.limti", "unknown key"),
        ("bottleneck.rate_mbit", -3, "bottleneck.rate_mbit", "> 0"),
        ("bottleneck.backend", "dpdk", "bottleneck.backend", "auto, kernel, emulator"),
        ("competitor.cca", "cubic; rm -rf /", "competitor.cca", "shell metacharacters"),
        ("competitor.cca", "$(reboot)", "competitor.cca", "shell metacharacters"),
        ("cg.source", "rtp`id`", "cg.source", "shell metacharacters"),
        ("cg.source", "ffmpeg", "cg.source", "unknown CG source"),
        ("labels", {"qdisc": "a b"}, "labels.qdisc", "letters, digits"),
        ("name", "x|y", "name", "shell metacharacters"),
        ("testbed", "../x;y.yaml", "testbed", "not allowed"),
        ("capture.snaplen", 64, "capture.snaplen", ">= 128"),
        ("propagation.loss", 2, "propagation.loss", "<= 1"),
        ("schedule.competitor", [{"t_s": 30, "rate_mbit": 5}], "schedule.competitor", "before"),
        ("schedule.competitor", [{"t_s": 1, "rate_mbit": "fast"}], "rate_mbit", "'bulk' or 'off'"),
    ],
)
def test_bad_values_are_refused_with_the_key(path: str, value: Any, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(with_(path, value))
    assert "run.yaml" in str(err.value)
    assert key in str(err.value)
    assert words in str(err.value)


def test_htb_class_errors() -> None:
    doc = with_(
        "bottleneck.qdisc",
        {
            "kind": "htb",
            "classes": [
                {"classid": "10", "rate_mbit": 6, "match": {"proto": "udp", "port": 1}},
                {"classid": "10", "rate_mbit": 1},
            ],
        },
    )
    with pytest.raises(ConfigError, match="must be distinct"):
        parse(doc)
    doc["bottleneck"]["qdisc"]["classes"][1]["classid"] = "1"
    with pytest.raises(ConfigError, match="minor ids 0 and 1"):
        parse(doc)
    doc["bottleneck"]["qdisc"]["classes"][1]["classid"] = "zz"
    with pytest.raises(ConfigError, match="hexadecimal"):
        parse(doc)
    doc["bottleneck"]["qdisc"]["classes"][1] = {"classid": "20", "rate_mbit": 5}
    with pytest.raises(ConfigError, match="add up to more than 8"):
        parse(doc)
    doc["bottleneck"]["qdisc"]["classes"][1] = {"classid": "20", "rate_mbit": 1, "ceil_mbit": 9}
    with pytest.raises(ConfigError, match="ceil_mbit"):
        parse(doc)


def test_htb_cannot_take_a_tbf_shaper_and_needs_a_rate() -> None:
    doc = with_("bottleneck.qdisc", {"kind": "htb", "classes": [{"classid": "2", "rate_mbit": 1}]})
    doc["bottleneck"]["shaper"] = "tbf"
    with pytest.raises(ConfigError, match="its own shaper"):
        parse(doc)
    del doc["bottleneck"]["shaper"]
    del doc["bottleneck"]["rate_mbit"]
    with pytest.raises(ConfigError, match=r"needs bottleneck\.rate_mbit"):
        parse(doc)


def test_limit_bdp_needs_an_rtt_and_resolves_to_packets() -> None:
    doc = with_("bottleneck.qdisc", {"kind": "pfifo", "limit_bdp": 7})
    with pytest.raises(ConfigError, match="round-trip time"):
        parse(doc)
    doc["propagation"] = {"forward_ms": 7.5, "reverse_ms": 7.5}
    q = parse(doc).bottleneck.forward.qdisc
    # 8 Mbit/s x 15 ms = 15 kB; x7 = 105 kB = 70 packets of 1500 B.
    assert q.params["limit"] == 70
    assert q.limit_bdp == 7


def test_dualpi2_conflicting_parameters() -> None:
    doc = with_("bottleneck.qdisc", {"kind": "dualpi2", "step_thresh_ms": 1})
    doc["bottleneck"]["qdisc"]["step_thresh_packets"] = 3
    with pytest.raises(ConfigError, match="step_thresh_ms or step_thresh_packets"):
        parse(doc)
    doc = with_("bottleneck.qdisc", {"kind": "dualpi2", "max_rtt_ms": 10, "typical_rtt_ms": 20})
    with pytest.raises(ConfigError, match="max_rtt_ms"):
        parse(doc)
    doc = with_("bottleneck.qdisc", {"kind": "dualpi2", "classic_protection": 101})
    with pytest.raises(ConfigError, match="<= 100"):
        parse(doc)


def test_same_port_for_cg_and_competitor_is_refused() -> None:
    doc = with_("cg.port", 5201)
    with pytest.raises(ConfigError, match=r"competitor\.port"):
        parse(doc)


def test_labels_default_from_the_configuration() -> None:
    cfg = parse(base())
    assert cfg.all_labels() == {
        "qdisc": "pfifo",
        "cca": "cubic",
        "system": "rtp-cbr",
        "queue": "100p",
    }
    assert load_run(RUNS / "quick-htb.yaml").all_labels()["qdisc"] == "htb"


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        load_run(bad)


def test_testbed_files() -> None:
    from cganalysis.testbed.sshbed import load_testbed, parse_testbed

    lab = load_testbed(REPO / "configs" / "testbeds" / "lab-example.yaml")
    assert lab.hosts["router"].devs == {"in_dev": "eth1", "out_dev": "eth2"}
    assert lab.hosts["client"].data_ip == "10.0.2.1"
    good = yaml.safe_load((REPO / "configs" / "testbeds" / "lab-example.yaml").read_text())
    for path, value, words in [
        ("hosts.server.address", "a.b;reboot", "hosts.server.address"),
        ("ssh.user", "Root$", "ssh.user"),
        ("hosts.client.data_ip", "10.0.2", "hosts.client.data_ip"),
        ("hosts.router.out_dev", "averyveryverylongname", "hosts.router.out_dev"),
        ("hosts.router.bogus", 1, "unknown key"),
        ("ssh.become", "doas", "none, sudo"),
        ("workdir", "/tmp/$(x)", "workdir"),
    ]:
        doc = copy.deepcopy(good)
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_testbed(doc, "lab.yaml")
    del good["hosts"]["client"]
    with pytest.raises(ConfigError, match=r"hosts\.client: required"):
        parse_testbed(good, "lab.yaml")


def test_run_may_name_a_netns_testbed_file() -> None:
    doc = with_("testbed", "../testbeds/netns.yaml")
    assert parse(doc).testbed.kind == "netns"
    doc = with_("testbed", "../testbeds/lab-example.yaml")
    ref = parse(doc).testbed
    assert ref.kind == "ssh" and ref.path is not None and ref.path.name == "lab-example.yaml"
