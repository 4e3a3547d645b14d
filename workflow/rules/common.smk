# Helpers shared by every stage: configuration validation and raw-run discovery.

import re
from pathlib import Path

from snakemake.utils import validate

from cganalysis.binaries import put_interpreter_bin_first
from cganalysis.capture.fingerprint import made_from
from cganalysis.cli import note_root
from cganalysis.experiment.workflow import WorkflowPlan
from cganalysis.progress import silence as silence_progress
from cganalysis.rawnames import NAME, check_name, find_capture, run_folders
from cganalysis.report import artefacts, runfigures

validate(config, schema="../schemas/config.schema.yaml")


# Names from data/raw/ and datasets/ reach the rules' shell lines (quoted there too, {x:q}):
# a wildcard is only ever a plain name (cganalysis.rawnames: letters, digits, ._-, never a
# leading - or ., no newline); raw_runs() refuses a folder or capture outside that grammar.
wildcard_constraints:
    campaign=NAME,
    run_id=NAME,
    dataset=NAME,


# `sudo .venv/bin/snakemake` runs without the environment activated: the rules' shell
# commands (`cganalysis ...`) must find the programs of the interpreter running Snakemake.
put_interpreter_bin_first()
# No progress lines from the rules' commands (cganalysis.progress): their stderr is a log,
# or Snakemake's terminal, which parallel jobs share; Snakemake counts the jobs done.
silence_progress()
# As root: said once here rather than in every analysis job's log (docs/security.md).
note_root("snakemake")

# The runs the campaign files plan (experiments.campaign_files), made by rule experiment.
EXPERIMENT_PLAN = WorkflowPlan.from_config(config)

RAW = Path("data/raw")
PROCESSED = Path("data/processed")


def planned_campaigns_regex():
    """Wildcard constraint for rules that make raw runs: only the campaigns the plan has,
    and never a run or calibration that is already in data/raw. Raw data is source data:
    a rule that could make it would also remake it (Snakemake deletes a job's outputs
    before rerunning it when its code or params changed, and `protected` does not stop
    root, who runs the experiments). The lookahead sees the rest of the path after the
    campaign (`<campaign>/<run_id>/...`, `<campaign>/_calibration/<key>/...`)."""
    names = sorted({c for c, _ in EXPERIMENT_PLAN.runs()})
    if not names:
        return "(?!)"
    made = [p.parent for p in RAW.glob("*/*/meta.json")]
    made += [p.parent for p in RAW.glob("*/_calibration/*/calibration.json")]
    done = sorted(re.escape(f"{d.relative_to(RAW).as_posix()}/") for d in made)
    guard = f"(?!{'|'.join(done)})" if done else ""
    planned = "|".join(re.escape(n) for n in names)
    return f"{guard}(?:{planned})"


def processed_campaigns():
    """The campaigns whose raw runs are processed: `campaigns`, and with
    `all_raw_campaigns` every campaign folder in data/raw (what a `dvc pull` brought:
    profiles/analyse), once each. Folders starting with . or _ are not campaigns."""
    names = list(config["campaigns"])
    if config.get("all_raw_campaigns", False) and RAW.is_dir():
        names += sorted(
            p.name
            for p in RAW.iterdir()
            if p.is_dir() and not p.name.startswith((".", "_"))
        )
    for campaign in names:
        check_name(campaign, "data/raw or configs/config.yaml: campaigns", "campaign")
    return list(dict.fromkeys(names))


def raw_runs():
    """(campaign, run_id) of every run: planned by a campaign file, or already in data/raw
    with both captures (for the processed campaigns), in a stable order. A run folder or
    capture named outside the grammar stops the workflow, naming it."""
    runs = set(EXPERIMENT_PLAN.runs())
    for campaign in processed_campaigns():
        if not (RAW / campaign).is_dir():
            continue
        for run_dir in run_folders(RAW / campaign):
            if find_capture(run_dir, "ingress") and find_capture(run_dir, "egress"):
                runs.add((campaign, run_dir.name))
    return sorted(runs)


def capture_input(point):
    def _input(wildcards):
        run_dir = RAW / wildcards.campaign / wildcards.run_id
        path = find_capture(run_dir, point)
        if (
            path is None
            and (wildcards.campaign, wildcards.run_id) in EXPERIMENT_PLAN.jobs
        ):
            return f"{run_dir}/{point}.pcap"  # made by rule experiment
        if path is None:
            raise ValueError(
                f"{run_dir}: no {point}*.pcap or {point}*.pcapng capture in this run"
            )
        # Ancient (a dvc pull's new file times redo nothing) only while the tables were
        # made from this very file: a run made again under its id is analysed again.
        summary = PROCESSED / wildcards.campaign / wildcards.run_id / "match.json"
        return ancient(str(path)) if made_from(summary, point, path) else str(path)

    return _input


def processed_outputs():
    return [
        str(PROCESSED / campaign / run_id / "packets.parquet")
        for campaign, run_id in raw_runs()
    ]


def campaign_runs():
    """{campaign: [run_id, ...]} of every raw run (raw_runs), in a stable order."""
    out = {}
    for campaign, run_id in raw_runs():
        out.setdefault(campaign, []).append(run_id)
    return out


def campaign_metrics(campaign):
    """The metrics files of every raw run of `campaign`."""
    return [f"results/metrics/{c}/{r}.json" for c, r in raw_runs() if c == campaign]


def campaign_timeseries(campaign, name):
    """The time series of every raw run of `campaign`, for an artefact drawn from them
    (the registry's `timeseries`), else none."""
    if not artefacts.by_name(name).timeseries:
        return []
    return [
        f"results/metrics/{c}/{r}.timeseries.parquet"
        for c, r in raw_runs()
        if c == campaign
    ]


def names_regex(names):
    return "|".join(re.escape(n) for n in names)


# The papers' tables and figures: the registry's names, for the rules' wildcards.
TABLE_NAMES = names_regex(a.name for a in artefacts.of_kind("table"))
FIGURE_NAMES = names_regex(a.name for a in artefacts.of_kind("figure"))
RUN_FIGURE_NAMES = names_regex(f.name for f in runfigures.RUN_FIGURES)
# The report's categories (rules/report.smk): one rule, caption and category per paper and
# kind of artefact.
TMA_TABLES_REPORT = names_regex(
    a.name for a in artefacts.of_kind("table") if a.paper == "TMA 2024"
)
XU_TABLES_REPORT = names_regex(
    a.name for a in artefacts.of_kind("table") if a.paper == "Xu & Claypool 2022"
)
XU_FIGURES_REPORT = names_regex(
    a.name for a in artefacts.of_kind("figure") if a.paper == "Xu & Claypool 2022"
)
TMA_FIGURES_REPORT = names_regex(
    a.name for a in artefacts.of_kind("figure") if a.paper == "TMA 2024"
)


def artefact_label(wildcards):
    """A table's or figure's label in the report: the paper's name for it (Table II)."""
    name = wildcards.get("table") or wildcards.get("figure")
    return {"artefact": artefacts.by_name(name).title}


unknown = {g for gs in config.get("artefacts", {}).values() for g in gs} - set(
    artefacts.GROUPS
)
if unknown:
    raise ValueError(
        f"configs/config.yaml: artefacts: unknown {', '.join(sorted(unknown))}; "
        f"known: {', '.join(artefacts.GROUPS)}"
    )


def result_outputs():
    """Per run: metrics and the registry's per-run figures; per campaign: its artefacts,
    and their copies for the report (rules/report.smk)."""
    runs = raw_runs()
    out = [f"results/metrics/{c}/{r}.json" for c, r in runs]
    for figure in runfigures.RUN_FIGURES:
        for c, r in runs:
            out += runfigures.run_output_files(figure, c, r)
            out.append(runfigures.run_report_file(figure, c, r))
    wanted = config.get("artefacts", {})
    suffix = config.get("experiments", {}).get("campaign_suffix", "")
    for campaign in {c for c, _ in runs}:
        # A quick profile's campaign (<name>-quick) renders what <name> renders.
        groups = wanted.get(campaign, wanted.get(campaign.removesuffix(suffix), []))
        for artefact in (a for g in groups for a in artefacts.in_group(g)):
            out += artefacts.output_files(artefact, campaign)
            out.append(artefacts.report_file(artefact, campaign))
    return sorted(out)


# Published datasets (rules/published.smk): datasets/<campaign>-<YYYY-MM-DD>/.
DATASETS = Path("datasets")


def published_names():
    wanted = config.get("published", [])
    present = sorted(p.parent.name for p in DATASETS.glob("*/datasheet.json"))
    for name in present:
        check_name(name, DATASETS / name, "dataset folder")
    if "all" in wanted:
        return present
    missing = sorted(set(wanted) - set(present))
    if missing:
        raise ValueError(
            f"configs: published: {', '.join(missing)}: no such folder with a datasheet "
            f"in datasets/ (there: {', '.join(present) or 'none'})"
        )
    return sorted(wanted)


def published_campaign(name):
    import json

    return json.loads((DATASETS / name / "datasheet.json").read_text())["campaign"]


def published_metrics(name):
    return sorted(str(p) for p in (DATASETS / name / "metrics").glob("*.json"))


def published_timeseries(name, artefact):
    """A dataset's time series, for an artefact drawn from them, else none."""
    if not artefacts.by_name(artefact).timeseries:
        return []
    return sorted(str(p) for p in (DATASETS / name / "timeseries").glob("*.parquet"))


def published_outputs():
    out = []
    wanted = config.get("artefacts", {})
    for name in published_names():
        for group in wanted.get(published_campaign(name), []):
            for artefact in artefacts.in_group(group):
                exts = (
                    ("csv", "md", "tex", "html")
                    if artefact.kind == "table"
                    else ("pdf", "png")
                )
                out += [
                    f"results/published/{name}/{artefact.name}.{ext}" for ext in exts
                ]
    if out:
        out.append("results/published/printed-numbers.txt")
    return out
