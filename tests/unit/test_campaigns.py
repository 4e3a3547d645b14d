"""The papers' campaigns (configs/campaigns/) plan what the papers ran, and the workflow's
DAG over them has the right counts (a Snakemake dry run, no root needed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.workflow import WorkflowPlan

REPO = Path(__file__).resolve().parents[2]
CAMPAIGNS = REPO / "configs" / "campaigns"


def test_tma2024_plans_three_queues_by_two_ccas() -> None:
    c = load_campaign(CAMPAIGNS / "tma2024.yaml")
    assert c.name == "tma2024"
    assert {(r.levels["qdisc"], r.levels["cca"]) for r in c.runs} == {
        (q, cca) for q in ("pfifo", "htb", "dualpi2") for cca in ("cubic", "bbr")
    }
    by_q = {r.levels["qdisc"]: r.config for r in c.runs}
    for cfg in by_q.values():
        assert cfg.bottleneck.forward.rate_mbit == 50
        assert (cfg.propagation.forward_ms, cfg.propagation.reverse_ms) == (15, 15)
        assert (cfg.cg.source, cfg.cg.cc, cfg.cg.ecn) == ("cga-cg", "scream", "ect1")
        assert (cfg.cg.min_mbit, cfg.cg.rate_mbit, cfg.cg.max_mbit) == (0.5, 10, 30)
        assert cfg.schedule.duration_s == 360 and not cfg.competitor.ecn
    pfifo = by_q["pfifo"].bottleneck.forward.qdisc.to_dict()
    assert pfifo == {"kind": "pfifo", "limit": 250}
    htb = by_q["htb"].bottleneck.forward.qdisc.to_dict()
    cg_class, be_class = htb["classes"]
    assert cg_class["rate_mbit"] == 10 and cg_class["leaf"] == {"kind": "sfq", "limit": 63}
    assert be_class["leaf"] == {"kind": "pfifo", "limit": 250}
    # The paper's most likely set-up (docs/results.md, "Factor table"): best effort
    # guaranteed less than the CG flow leaves (so the CG class borrows first) and capped at
    # 20 Mbit/s, constant-size frames.
    assert (be_class["rate_mbit"], be_class["ceil_mbit"]) == (10, 20)
    assert cg_class["prio"] < be_class["prio"]
    assert {cfg.cg.encoder for cfg in by_q.values()} == {"constant"}
    assert by_q["dualpi2"].bottleneck.forward.qdisc.to_dict() == {"kind": "dualpi2", "limit": 1000}
    # One calibration per bottleneck, shared by the two CCAs.
    assert len({r.calibration_key for r in c.runs}) == 3


def test_the_kernel_variant_is_tma2024_on_the_uml_router() -> None:
    """tma2024-kernel.yaml is tma2024.yaml's runs (variant_of) with the uml testbed and the
    kernel data plane: every other setting the same, run ids under its own name."""
    base = {
        r.run_id.removeprefix("tma2024-"): r for r in load_campaign(CAMPAIGNS / "tma2024.yaml").runs
    }
    kernel = load_campaign(CAMPAIGNS / "tma2024-kernel.yaml")
    assert kernel.name == "tma2024-kernel"
    assert sorted(r.run_id.removeprefix("tma2024-kernel-") for r in kernel.runs) == sorted(base)
    for r in kernel.runs:
        other = base[r.run_id.removeprefix("tma2024-kernel-")]
        assert (r.config.testbed.kind, r.config.bottleneck.backend) == ("uml", "kernel")
        assert r.levels == other.levels and r.config.labels == other.config.labels
        assert r.config.bottleneck.forward == other.config.bottleneck.forward
        assert r.config.schedule == other.config.schedule and r.config.cg == other.config.cg
        # The uml router shares this machine: one lock with the netns testbed.
        assert r.config.testbed.lock_name() == "netns"


def test_a_variant_gives_only_its_own_keys(tmp_path: Path) -> None:
    other = _campaign(tmp_path)
    variant = tmp_path / "v.yaml"
    overlay = {"labels": {"plane": "k"}}
    doc = {"campaign": "v", "variant_of": other.name, "overlay": overlay, "repetitions": 2}
    variant.write_text(yaml.safe_dump(doc))
    runs = load_campaign(variant).runs
    assert len(runs) == 12 and {r.config.labels["plane"] for r in runs} == {"k"}
    assert runs[0].run_id.startswith("v-")
    variant.write_text(yaml.safe_dump({"campaign": "v", "variant_of": other.name, "factors": {}}))
    with pytest.raises(ConfigError, match=r"key factors.*variant campaign gives only"):
        load_campaign(variant)
    variant.write_text(yaml.safe_dump({"campaign": "v", "variant_of": "nothing.yaml"}))
    with pytest.raises(ConfigError, match=r"key variant_of.*nothing.yaml: no such campaign"):
        load_campaign(variant)


def test_xu2022_plans_capacities_queues_ccas_and_repetitions() -> None:
    c = load_campaign(CAMPAIGNS / "xu2022.yaml")
    assert len(c.runs) == 3 * 3 * 2 * 15
    cells = {
        (r.config.bottleneck.forward.rate_mbit, r.config.labels["queue"], r.levels["cca"])
        for r in c.runs
    }
    assert len(cells) == 18
    run = next(r for r in c.runs if r.run_id == "xu2022-25-0p5x-bbr-r07")
    assert run.repetition == 7 and run.config.labels["queue"] == "0.5x"
    # 0.5 x 25 Mbit/s x 15 ms in 1500-byte packets.
    assert run.config.bottleneck.forward.qdisc.to_dict()["limit"] == 16
    assert run.config.schedule.duration_s == 540
    assert all("." not in r.run_id for r in c.runs)  # the figure rules split on dots


def test_extensions_and_cellular() -> None:
    ext = load_campaign(CAMPAIGNS / "extensions.yaml")
    # Fixed link: pfifo, htb, dualpi2, sqf, drr; cellular: pfifo, htb, dualpi2; each with
    # SCReAM and gTFRC, plus SCReAM with the older l4s_alpha filter under DualPI2.
    assert len(ext.runs) == ((5 + 3) * 2 + 2) * 2
    g16 = [r for r in ext.runs if r.levels["cg"] == "scream-g16"]
    assert {r.levels["qdisc"] for r in g16} == {"dualpi2"} and len(g16) == 4
    assert all(r.config.cg.sender_args == ("--l4s-alpha-gain", "0.0625") for r in g16)
    cellular = [r for r in ext.runs if r.levels["link"] == "cellular"]
    assert {r.levels["qdisc"] for r in cellular} == {"pfifo", "htbtrace", "dualpi2"}
    for r in cellular:
        fwd = r.config.bottleneck.forward
        assert fwd.trace is not None and fwd.trace.endswith("/cga-lte-s1-360s.down")
        assert Path(fwd.trace).is_file() and fwd.rate_mbit is None and fwd.trace_scale == 2.5
    htb_run = next(r for r in cellular if r.levels["qdisc"] == "htbtrace")
    assert htb_run.config.labels["qdisc"] == "htb"  # the htb column of the tables
    htb = htb_run.config.bottleneck.forward.qdisc
    assert [c.rate_mbit for c in htb.classes] == [10, 20]  # type: ignore[union-attr]
    # Buckets that hold a trace opportunity's burst (a default one holds one packet).
    assert all(c.cburst_bytes and c.cburst_bytes >= 100_000 for c in htb.classes)  # type: ignore[union-attr]
    fixed = [r for r in ext.runs if r.levels["link"] == "fixed"]
    assert all(r.config.bottleneck.forward.rate_mbit == 50 for r in fixed)
    gtfrc = [r.config.cg for r in ext.runs if r.levels["cg"] == "gtfrc"]
    # gTFRC's guarantee g (cga-cg: the encoder minimum) is the HTB class's 10 Mbit/s.
    assert gtfrc and all(cg.cc == "gtfrc" and cg.min_mbit == 10 for cg in gtfrc)
    cell = load_campaign(CAMPAIGNS / "tma2024-cellular.yaml")
    cgs = {r.config.labels["system"]: r.config.cg for r in cell.runs}
    assert cgs["cga-cg-none"].cc == "none" and cgs["cga-cg-none"].rate_mbit == 30
    assert cgs["cga-cg-scream"].cc == "scream" and cgs["cga-cg-scream"].ecn == "ect1"


def _campaign(tmp_path: Path, **extra: object) -> Path:
    doc = {
        "campaign": "c",
        "run": {
            "schedule": {"preset": "custom", "duration_s": 5, "competitor": []},
            "bottleneck": {"rate_mbit": 10, "qdisc": {"kind": "pfifo", "limit": 10}},
        },
        "factors": {
            "q": {"a": {}, "b": {}, "c": {}},
            "cca": {"cubic": {}, "bbr": {}},
        },
        **extra,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_exclude_removes_the_matching_combinations(tmp_path: Path) -> None:
    everything = load_campaign(_campaign(tmp_path))
    assert len(everything.runs) == 6
    c = load_campaign(_campaign(tmp_path, exclude=[{"q": ["a", "b"], "cca": "bbr"}, {"q": "c"}]))
    assert [(r.levels["q"], r.levels["cca"]) for r in c.runs] == [("a", "cubic"), ("b", "cubic")]


@pytest.mark.parametrize(
    ("exclude", "key", "words"),
    [
        ([{"qq": "a"}], "exclude[0].qq", "no such factor"),
        ([{"q": "z"}], "exclude[0].q", "'z' is not a level of q"),
        ([{"q": []}], "exclude[0].q", "a level or a list"),
        (["q"], "exclude[0]", "mapping"),
        ([{"q": ["a", "b", "c"]}], "exclude", "nothing to run"),
    ],
)
def test_exclude_errors_name_the_key(tmp_path: Path, exclude: object, key: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"key {key}")) as e:
        load_campaign(_campaign(tmp_path, exclude=exclude))
    assert words in str(e.value)


def test_default_config_plans_tma2024() -> None:
    config = yaml.safe_load((REPO / "configs" / "config.yaml").read_text())
    plan = WorkflowPlan.from_config(config)
    assert {c for c, _ in plan.runs()} == {"tma2024", "tma2024-cellular"}
    assert len(plan.runs()) == 6 + 2
    # A trace link has nothing to calibrate.
    assert plan.calibration_file("tma2024-cellular", "tma2024-cellular-cga-cg-none-r01") == []
    assert config["artefacts"]["tma2024"] == [
        "tma_table2",
        "tma_paper_cells",
        "tma_claims",
        "tma_figures",
    ]
    assert config["artefacts"]["tma2024-cellular"] == ["tma_table1", "tma_claims", "tma_fig4"]
    profile = REPO / "profiles"
    for name in ("default", "quick"):
        assert yaml.safe_load((profile / name / "config.yaml").read_text())["keep-going"]


def test_a_short_form_keeps_the_design_with_fewer_repetitions_and_shorter_runs() -> None:
    config = yaml.safe_load((REPO / "configs" / "config.yaml").read_text())
    short = yaml.safe_load((REPO / "profiles" / "xu-short" / "experiments.yaml").read_text())
    plan = WorkflowPlan.from_config({**config, **short})
    full = load_campaign(CAMPAIGNS / "xu2022.yaml")
    assert {c for c, _ in plan.runs()} == {"xu2022-short"}
    reps = {r.repetition for r in full.runs}
    assert max(reps) > 2, "the full campaign has more repetitions than the short form"
    assert {r for _, r in plan.runs()} == {r.run_id for r in full.runs if r.repetition <= 2}
    # 9 minutes -> 3: the TCP flow from 60 s to 120 s, in the middle minute.
    assert plan.experiment_flags([]) == ["--max-duration-s", "180"]
    schedule = full.runs[0].config.schedule.fit(180)
    assert schedule.competitor_span() == pytest.approx((60.0, 120.0))


def _job_counts(out: str) -> dict[str, int]:
    """Jobs per rule of a dry run; the rules made per campaign (``metrics_<campaign>``,
    ``run_figure_<figure>_<campaign>``) also summed under ``metrics`` and ``run_figure``."""
    stats = out[out.index("Job stats:") :]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^([\w-]+)\s+(\d+)$", stats, re.M)}
    for prefix in ("metrics", "run_figure"):
        mine = [n for k, n in counts.items() if k.startswith(f"{prefix}_")]
        if mine:
            counts[prefix] = sum(mine)
    return counts


def _campaigns(out: str) -> set[str]:
    """The campaigns a dry run's jobs name in their wildcards."""
    return set(re.findall(r"wildcards: campaign=([^,\s]+)", out))


@pytest.mark.parametrize(
    ("profile", "experiments", "calibrations", "tables"),
    [
        # tma2024: Table II, its 24 cells against the paper's, the claims, Figs. 6-11;
        # tma2024-cellular: Table I, its claims, Fig. 4.
        ("quick", 8, 3, {"table": 3 + 2, "figure": 6 + 1}),
        # ... and extensions: Table II; xu2022: Tables 2-6, the claims and Figs. 3-5.
        ("all", 314, 17, {"table": 3 + 1 + 2 + 6, "figure": 6 + 1 + 3}),
        # Xu's design in short form: 3 x 3 x 2 combinations, 2 repetitions, 9 bottlenecks.
        ("xu-short", 36, 9, {"table": 5 + 1, "figure": 3}),
    ],
)
def test_dry_run_counts(
    tmp_path: Path, profile: str, experiments: int, calibrations: int, tables: dict[str, int]
) -> None:
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake not installed")
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    done = subprocess.run(
        ["snakemake", "--profile", f"profiles/{profile}", "-n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = _job_counts(done.stdout + done.stderr)
    assert counts["experiment"] == counts["packets"] == experiments
    # One metrics job and one time-series job per campaign, each for all its runs.
    campaigns = _campaigns(done.stdout + done.stderr)
    assert counts["metrics"] == counts["run_figure"] == len(campaigns) >= 1
    assert all(counts[f"metrics_{c}"] == 1 for c in campaigns)
    assert counts["calibrate"] == calibrations
    for rule, n in tables.items():
        assert counts[rule] == n


def test_raw_runs_and_calibrations_that_exist_are_never_remade(tmp_path: Path) -> None:
    """Raw data is source data: even a forced rerun of the rules that make it (as a change
    of their code or params would trigger, deleting the outputs first) leaves it alone."""
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake not installed")
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    config = yaml.safe_load((REPO / "configs" / "config.yaml").read_text())
    quick = yaml.safe_load((REPO / "profiles" / "quick" / "experiments.yaml").read_text())
    plan = WorkflowPlan.from_config(
        {**config, "experiments": {**config["experiments"], **quick["experiments"]}}
    )
    # A run with a bottleneck to calibrate (a trace link has none).
    campaign, run_id = next(r for r in plan.runs() if plan.job(*r).calibration_key)
    run_dir = tmp_path / "data" / "raw" / campaign / run_id
    run_dir.mkdir(parents=True)
    for name in ("meta.json", "ingress.pcap", "egress.pcap"):
        (run_dir / name).write_text("")
    key = plan.job(campaign, run_id).calibration_key
    (tmp_path / "data" / "raw" / campaign / "_calibration" / key).mkdir(parents=True)
    (tmp_path / "data" / "raw" / campaign / "_calibration" / key / "calibration.json").write_text(
        "{}"
    )
    done = subprocess.run(
        ["snakemake", "--profile", "profiles/quick", "-n", "--forcerun", "experiment", "calibrate"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    counts = _job_counts(out)
    assert counts["experiment"] == len(plan.runs()) - 1
    assert counts["calibrate"] == 3 - 1
    assert f"output: data/raw/{campaign}/{run_id}/ingress.pcap" not in out
    assert f"output: data/raw/{campaign}/_calibration/{key}/calibration.json" not in out
    assert counts["packets"] == len(plan.runs())  # the existing run is still analysed


def test_snakemake_applies_the_default_profile(tmp_path: Path) -> None:
    """`snakemake --cores 4` must find profiles/default (testbed=1, keep-going): Snakemake
    looks for it next to the Snakefile, so a profile elsewhere would be silently ignored
    and the experiments would run side by side."""
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake not installed")
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    done = subprocess.run(
        ["snakemake", "--cores", "4", "-n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "Using workflow specific profile profiles/default" in out


def test_the_cluster_profile_submits_the_analysis_and_keeps_experiments_local(
    tmp_path: Path,
) -> None:
    """profiles/slurm: packets, metrics, tables and figures become SLURM jobs; experiments
    (planned here by adding the default campaigns back) stay local rules."""
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake not installed")
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    # The committed raw run and the traces only: what a developer's workflow already ran or
    # processed in the repository (data/raw/<campaign>, data/processed) must not hide the
    # plan.
    (tmp_path / "data" / "raw").mkdir(parents=True)
    (tmp_path / "data" / "raw" / "example").symlink_to(REPO / "data" / "raw" / "example")
    (tmp_path / "data" / "traces").symlink_to(REPO / "data" / "traces")
    dry = ["snakemake", "--profile", "profiles/slurm", "-n"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(dry, cwd=tmp_path, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    counts = _job_counts(out)
    assert "experiment" not in counts  # analysis only: the raw runs come from the testbed
    assert counts["packets"] == counts["metrics"] == counts["table"] >= 1
    assert re.search(r"^rule packets:", out, re.M)
    # Experiments planned too (the default campaigns added back): still a valid plan, and
    # the rules that need the testbed are local ones (a dry run does not say which are).
    with_runs = [*dry, "--configfiles", "configs/config.yaml"]
    done = subprocess.run(
        with_runs, cwd=tmp_path, capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _job_counts(done.stdout + done.stderr)["experiment"] >= 1
    block = (REPO / "Snakefile").read_text().split("localrules:")[1].split("\n\n")[0]
    assert {"experiment", "calibrate", "all"} <= {w.strip(" ,") for w in block.split()}


def test_the_earlier_default_is_kept_as_a_named_variant() -> None:
    """tma2024-ceil50-model.yaml: the TMA campaign as run before 2026-11-27, the same runs
    with the best effort borrowing up to the link and the model encoder."""
    now = {
        r.run_id.removeprefix("tma2024-"): r for r in load_campaign(CAMPAIGNS / "tma2024.yaml").runs
    }
    old = load_campaign(CAMPAIGNS / "tma2024-ceil50-model.yaml")
    assert sorted(r.run_id.removeprefix("tma2024-ceil50-model-") for r in old.runs) == sorted(now)
    for r in old.runs:
        other = now[r.run_id.removeprefix("tma2024-ceil50-model-")]
        assert r.config.cg.encoder == "model" and other.config.cg.encoder == "constant"
        assert r.config.schedule == other.config.schedule
        assert r.config.competitor == other.config.competitor
        qdisc, other_qdisc = (
            c.bottleneck.forward.qdisc.to_dict() for c in (r.config, other.config)
        )
        if qdisc["kind"] == "htb":
            assert qdisc["classes"][1]["ceil_mbit"] == 50
            assert other_qdisc["classes"][1]["ceil_mbit"] == 20
        else:
            assert qdisc == other_qdisc
