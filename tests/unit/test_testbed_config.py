"""Run files are validated before anything is touched: errors name the file and the key."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import load_run, parse_run
from cganalysis.testbed.spec.qdisc import Htb
from cganalysis.traces.find import find_trace

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "configs" / "runs"
#: A trace on the search path (generated into the session's $CGA_TRACES on first use).
T = "cga-lte-s1-10s.down"


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
        ("competitor.burst_blocks", 0, "competitor.burst_blocks", ">= 1"),
        ("competitor.burst_blocks", 2.5, "competitor.burst_blocks", "not an integer"),
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


@pytest.mark.parametrize("system", ["ecgp", "ecgp-scream", "rtp", "cga-cg", "stadia"])
def test_a_system_label_naming_another_sender_is_refused(system: str) -> None:
    """A run is labelled with the sender it ran (cg.source rtp-cbr here), never another
    (cga-cg's runs were labelled ``ecgp`` before 2026-11-29)."""
    doc = with_("labels", {"system": system})
    with pytest.raises(ConfigError, match=r"key labels\.system: .*cg\.source is 'rtp-cbr'"):
        parse(doc)


@pytest.mark.parametrize("system", ["rtp-cbr", "rtp-cbr-paced", "rtp-cbr-2"])
def test_a_system_label_of_the_sender_or_its_variant_is_kept(system: str) -> None:
    assert parse(with_("labels", {"system": system})).all_labels()["system"] == system


def test_every_shipped_campaign_labels_its_runs_with_their_sender() -> None:
    from cganalysis.experiment.campaign import load_campaign
    from cganalysis.experiment.labelkeys import system_label_error

    systems = set()
    for path in sorted((RUNS.parent / "campaigns").glob("*.yaml")):
        for run in load_campaign(path).runs:
            system = str(run.config.all_labels()["system"])
            assert system_label_error(system, run.config.cg.source) is None, run.run_id
            systems.add(system)
    assert not systems & {"ecgp", "ecgp-none", "ecgp-scream", "gtfrc"}


def test_a_published_commits_campaign_reads_its_days_system_label(tmp_path: Path) -> None:
    """``dataset reproduce`` reads the campaign file of the commit that made a dataset:
    ``ecgp`` (cga-cg's label before 2026-11-29) is read as today's ``cga-cg`` there, and
    refused in a campaign of today's."""
    from cganalysis.experiment.campaign import load_campaign

    doc = yaml.safe_load((RUNS.parent / "campaigns" / "tma2024-sim-bbr3.yaml").read_text())
    assert doc["run"]["cg"]["source"] == "cga-cg"
    doc["run"].update(testbed="sim", labels={"system": "ecgp"}, competitor={"cca": "cubic"})
    doc.update(
        factors={"qdisc": {"pfifo": {}}},
        run_id="{campaign}-{qdisc}-r{repetition:02d}",
        repetitions=1,
    )
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"key labels\.system: 'ecgp' does not name"):
        load_campaign(path)
    (old,) = load_campaign(path, published=True).runs
    assert old.config.all_labels()["system"] == "cga-cg"


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        load_run(bad)


def test_testbed_files() -> None:
    from cganalysis.testbed.ssh.testbed import load_testbed, parse_testbed

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


# --- Emulator-only disciplines (SQF, per-flow DRR) and trace-driven links ---------------


def test_sqf_and_drr_parse_with_their_parameters() -> None:
    sqf = parse(with_("bottleneck.qdisc", {"kind": "sqf", "limit": 250, "flows": 64}))
    assert sqf.bottleneck.forward.qdisc.to_dict() == {"kind": "sqf", "limit": 250, "flows": 64}
    drr = parse(with_("bottleneck.qdisc", {"kind": "drr", "limit": 250, "quantum": 1514}))
    assert drr.bottleneck.forward.qdisc.params == {"limit": 250, "quantum": 1514}


@pytest.mark.parametrize(
    ("qdisc", "key", "words"),
    [
        ({"kind": "sqf", "limit": 0}, "bottleneck.qdisc.limit", ">= 1"),
        ({"kind": "sqf", "flows": 70000}, "bottleneck.qdisc.flows", "<= 65536"),
        ({"kind": "sqf", "quantum": 1514}, "bottleneck.qdisc.quantum", "unknown key"),
        ({"kind": "drr", "quantum": 10}, "bottleneck.qdisc.quantum", ">= 64"),
        ({"kind": "drr", "flows": 0}, "bottleneck.qdisc.flows", ">= 1"),
        ({"kind": "drr", "limit_bdp": 2}, "bottleneck.qdisc.limit_bdp", "only pfifo and bfifo"),
    ],
)
def test_sqf_drr_bad_parameters(qdisc: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(key)) as e:
        parse(with_("bottleneck.qdisc", qdisc))
    assert words in str(e.value)


def test_sqf_drr_leaves_of_htb_classes_parse() -> None:
    doc = with_(
        "bottleneck.qdisc",
        {
            "kind": "htb",
            "classes": [{"classid": "10", "rate_mbit": 8, "leaf": {"kind": "sqf", "limit": 50}}],
        },
    )
    q = parse(doc).bottleneck.forward.qdisc
    assert isinstance(q, Htb) and q.classes[0].leaf.kind == "sqf"


def _trace_doc(**bottleneck: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base())
    doc["bottleneck"] = {"qdisc": {"kind": "pfifo", "limit": 250}, **bottleneck}
    return doc


def test_trace_paths_resolve_against_the_file_folder(tmp_path: Path) -> None:
    (tmp_path / "c" / "traces").mkdir(parents=True)
    (tmp_path / "c" / "traces" / "x.down").write_text("1\n2\n")
    b = parse_run(_trace_doc(trace="traces/x.down", trace_scale=2), "r.yaml", tmp_path / "c")
    assert b.bottleneck.forward.trace == str((tmp_path / "c" / "traces" / "x.down").resolve())
    assert b.bottleneck.forward.trace_scale == 2.0
    assert b.bottleneck.forward.rate_mbit is None
    assert b.bottleneck.forward.to_dict()["trace_scale"] == 2.0
    named = parse(_trace_doc(trace=T)).bottleneck.forward
    assert named.trace == str(find_trace(T, RUNS)) and named.trace_scale == 1.0
    # Without a trace the direction's dict is unchanged (calibrations compare it).
    assert "trace" not in parse(base()).bottleneck.forward.to_dict()


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        ({"trace": T, "rate_mbit": 8}, "bottleneck.rate_mbit", "rate_mbit or trace"),
        ({"trace": T, "shaper": "tbf"}, "bottleneck.shaper", "shapes by itself"),
        ({"trace_scale": 2}, "bottleneck.trace_scale", "give trace as well"),
        ({"trace": T, "trace_scale": 0}, "bottleneck.trace_scale", "> 0"),
        ({"trace": "/t down;rm"}, "bottleneck.trace", ""),
    ],
)
def test_trace_errors_name_the_key(extra: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(key)) as e:
        parse(_trace_doc(**extra))
    assert words in str(e.value)


def test_htb_over_a_trace_keeps_its_classes_and_the_emulator_gets_them() -> None:
    from cganalysis.testbed.rendering.emuconf import bottleneck_pipeline

    doc = _trace_doc(trace=T, trace_scale=3)
    doc["bottleneck"]["qdisc"] = {
        "kind": "htb",
        "default": "20",
        "classes": [
            {"classid": "10", "rate_mbit": 10, "ceil_mbit": 50, "prio": 0},
            {"classid": "20", "rate_mbit": 20, "ceil_mbit": 50, "prio": 1},
        ],
    }
    fwd = parse(doc).bottleneck.forward
    assert isinstance(fwd.qdisc, Htb) and fwd.rate_mbit is None
    pipe = bottleneck_pipeline(fwd)
    # The trace paces the tree; the classes keep their nominal rates and ceils.
    assert pipe["rate"] == {"trace": str(find_trace(T, RUNS)), "scale": 3.0}
    assert [(c["rate_mbit"], c["ceil_mbit"]) for c in pipe["qdisc"]["classes"]] == [
        (10, 50),
        (20, 50),
    ]
    # Guarantees are checked against the largest ceil when there is no fixed rate.
    doc["bottleneck"]["qdisc"]["classes"][1]["rate_mbit"] = 45
    with pytest.raises(ConfigError, match=re.escape("bottleneck.qdisc.classes")) as e:
        parse(doc)
    assert "more than 50 Mbit/s (the largest ceil" in str(e.value)


def test_htb_without_rate_or_trace_is_refused() -> None:
    doc = copy.deepcopy(base())
    doc["bottleneck"] = {"qdisc": {"kind": "htb", "classes": [{"classid": "10", "rate_mbit": 8}]}}
    with pytest.raises(ConfigError, match=re.escape("bottleneck.qdisc.kind")) as e:
        parse(doc)
    assert "rate_mbit" in str(e.value)


@pytest.mark.parametrize(
    ("bottleneck", "words"),
    [
        ({"qdisc": {"kind": "sqf"}}, "the kernel has no SQF"),
        ({"qdisc": {"kind": "drr"}}, "Linux's drr is classful"),
        ({"trace": T, "qdisc": {"kind": "pfifo"}}, "cannot follow a trace"),
    ],
)
def test_emulator_only_links_refuse_backend_kernel(bottleneck: dict[str, Any], words: str) -> None:
    from cganalysis.testbed.dataplane.resolve import emulator_only, resolve
    from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError

    b = parse(_trace_doc(backend="kernel", **bottleneck)).bottleneck
    assert emulator_only(b)
    p = parse(base()).propagation
    with pytest.raises(TestbedError, match=re.escape("bottleneck.backend kernel")) as e:
        resolve(b, p, NetnsHost("this host", None, Path("/")))
    assert words in str(e.value) and "backend: emulator or auto" in str(e.value)
    auto = parse(_trace_doc(**bottleneck)).bottleneck
    assert auto.backend == "auto" and emulator_only(auto) == emulator_only(b)


def test_shipped_cellular_campaign_plans_trace_runs() -> None:
    from cganalysis.experiment.campaign import load_campaign

    runs = load_campaign(REPO / "configs" / "campaigns" / "tma2024-cellular.yaml").runs
    assert len(runs) == 2
    for run in runs:
        fwd = run.config.bottleneck.forward
        assert fwd.trace is not None and fwd.trace.endswith("/cga-lte-s1-360s.down")
        assert Path(fwd.trace).is_absolute() and fwd.rate_mbit is None


def test_competitor_burst_reaches_iperf3s_rate_option() -> None:
    from cganalysis.experiment.competitor import client_argv

    plain = parse(base()).competitor
    bursty = parse(with_("competitor.burst_blocks", 8)).competitor
    assert (plain.burst_blocks, bursty.burst_blocks) == (None, 8)
    argv = client_argv("10.0.0.1", 5201, 60, 20.0, "cubic", bursty.burst_blocks)
    assert argv[argv.index("-b") + 1] == "20M/8"
    argv = client_argv("10.0.0.1", 5201, 60, 20.0, "cubic", plain.burst_blocks)
    assert argv[argv.index("-b") + 1] == "20M"
    # a bulk step has no rate, so nothing to burst against
    assert "-b" not in client_argv("10.0.0.1", 5201, 60, None, "cubic", 8)


def test_cg_sender_args_reach_the_cga_cg_command_line() -> None:
    from cganalysis.experiment.sources import CgaCg

    doc = with_("cg", {"source": "cga-cg", "cc": "scream"})
    doc["cg"]["sender_args"] = ["--l4s-alpha-gain", 0.0625, "--seed", "7"]
    cg = parse(doc).cg
    assert cg.sender_args == ("--l4s-alpha-gain", "0.0625", "--seed", "7")
    argv = CgaCg.send_options(cg, "10.0.0.2:30002", "10.0.0.1:30001", 60.0, "/tmp/x")
    extra = [a for a in argv if a.startswith("--cga-cg-args=")]
    assert extra == ["--cga-cg-args=--l4s-alpha-gain 0.0625 --seed 7"]
    assert "--cga-cg-args" not in " ".join(
        CgaCg.send_options(parse(with_("cg", {"source": "cga-cg"})).cg, "a:1", "b:2", 1, "l")
    )


@pytest.mark.parametrize(
    ("cg", "key", "words"),
    [
        ({"source": "rtp-cbr", "sender_args": ["--seed", "1"]}, "cg.sender_args", "cga-cg"),
        ({"source": "cga-cg", "sender_args": "--seed 1"}, "cg.sender_args", "a list"),
        ({"source": "cga-cg", "sender_args": [["x"]]}, "cg.sender_args[0]", "words"),
    ],
)
def test_cg_sender_args_errors_name_the_key(cg: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(key)) as e:
        parse(with_("cg", cg))
    assert words in str(e.value)


@pytest.mark.parametrize(
    ("bottleneck", "propagation", "words"),
    [
        ({"trace": T, "trace_scale": 2}, {}, "bottleneck.trace_scale: mahimahi replays"),
        ({"trace": T}, {"forward_ms": 10, "reverse_ms": 5}, "must be equal integers"),
        ({"trace": T}, {"forward_ms": 7.5, "reverse_ms": 7.5}, "equal integers"),
        ({"trace": T}, {"jitter_ms": 2}, "no jitter or loss"),
        ({"trace": T, "qdisc": {"kind": "sfq"}}, {}, "sfq has no mahimahi queue"),
        (
            {"trace": T, "qdisc": {"kind": "codel", "target_ms": 2.5}},
            {},
            "whole milliseconds",
        ),
    ],
)
def test_what_mahimahi_cannot_do_is_refused_naming_the_key(
    bottleneck: dict[str, Any], propagation: dict[str, Any], words: str
) -> None:
    from cganalysis.testbed.rendering.mahimahi import link_of

    doc = _trace_doc(backend="mahimahi", **bottleneck)
    doc["propagation"] = {"forward_ms": 0, "reverse_ms": 0, **propagation}
    cfg = parse(doc)
    with pytest.raises(ConfigError, match=re.escape(words)):
        link_of(cfg.bottleneck, cfg.propagation)


def test_mahimahi_missing_is_refused_naming_the_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cganalysis.testbed.dataplane.resolve import resolve
    from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError

    for tool in ("sh", "cat"):  # a PATH with a shell but no mahimahi
        (tmp_path / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    monkeypatch.setenv("PATH", str(tmp_path))
    cfg = parse(_trace_doc(backend="mahimahi", trace=T))
    with pytest.raises(TestbedError) as e:
        resolve(cfg.bottleneck, cfg.propagation, NetnsHost("this host", None, Path("/")))
    assert "mm-link, mm-delay not found" in str(e.value)
    assert "mahimahi not installed" in str(e.value) and "backend: emulator" in str(e.value)


def test_mahimahi_user_is_configurable_and_never_root(monkeypatch: pytest.MonkeyPatch) -> None:
    from cganalysis.testbed.rendering.mahimahi import USER_ENV, unprivileged_user

    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.delenv(USER_ENV, raising=False)
    assert unprivileged_user() == "nobody"
    monkeypatch.setenv("SUDO_USER", "root")  # sudo from root: still nobody
    assert unprivileged_user() == "nobody"
    monkeypatch.setenv(USER_ENV, "root")
    with pytest.raises(ConfigError, match="refuses to run as root"):
        unprivileged_user()
    monkeypatch.setenv(USER_ENV, "no-such-user-cga")
    with pytest.raises(ConfigError, match="no user 'no-such-user-cga'"):
        unprivileged_user()


def test_the_htb_class_a_flow_enters() -> None:
    htb = load_run(RUNS / "quick-htb.yaml").bottleneck.forward.qdisc
    assert isinstance(htb, Htb)
    assert htb.class_of("udp", 30002).classid == "10"  # the CG class's match
    assert htb.class_of("udp", 5299).classid == "20"  # else the default
    assert htb.class_of("tcp", 30002).classid == "20"  # its match is UDP only
