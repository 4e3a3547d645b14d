# Helpers shared by every stage: configuration validation and raw-run discovery.

from pathlib import Path

from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")

RAW = Path("data/raw")
PROCESSED = Path("data/processed")
CAPTURE_SUFFIXES = (".pcap", ".pcapng")


def raw_runs():
    """(campaign, run_id) of every raw run with both captures, in a stable order."""
    runs = []
    for campaign in config["campaigns"]:
        for run_dir in sorted((RAW / campaign).glob("*/")):
            if find_capture(run_dir, "ingress") and find_capture(run_dir, "egress"):
                runs.append((campaign, run_dir.name))
    return runs


def find_capture(run_dir, point):
    """The run's capture file for `point` (ingress or egress), or None."""
    found = sorted(
        p
        for p in Path(run_dir).glob(f"{point}*")
        if p.suffix in CAPTURE_SUFFIXES and p.is_file()
    )
    return found[0] if found else None


def capture_input(point):
    def _input(wildcards):
        run_dir = RAW / wildcards.campaign / wildcards.run_id
        path = find_capture(run_dir, point)
        if path is None:
            raise ValueError(
                f"{run_dir}: no {point}*.pcap or {point}*.pcapng capture in this run"
            )
        return ancient(str(path))

    return _input


def processed_outputs():
    return [
        str(PROCESSED / campaign / run_id / "packets.parquet")
        for campaign, run_id in raw_runs()
    ]


def campaign_metrics(campaign):
    """The metrics files of every raw run of `campaign`."""
    return [f"results/metrics/{c}/{r}.json" for c, r in raw_runs() if c == campaign]


# The files each artefact of a campaign makes (see workflow/rules/figures.smk).
ARTEFACT_FILES = {
    "tma_table1": ["results/tables/{c}/tma_table1.md"],
    "tma_table2": ["results/tables/{c}/tma_table2.md"],
    "xu_tables": ["results/tables/{c}/xu_table2.md"],
    "xu_figures": ["results/figures/{c}/xu_fig3_fairness.pdf"],
}


def result_outputs():
    """Per run: metrics and the time-series figure; per campaign: its artefacts."""
    runs = raw_runs()
    out = [f"results/metrics/{c}/{r}.json" for c, r in runs]
    out += [f"results/figures/{c}/{r}.timeseries.pdf" for c, r in runs]
    for campaign in {c for c, _ in runs}:
        for artefact in config.get("artefacts", {}).get(campaign, []):
            out += [f.format(c=campaign) for f in ARTEFACT_FILES[artefact]]
    return sorted(out)
