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
