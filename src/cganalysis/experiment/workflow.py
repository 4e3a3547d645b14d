"""What the Snakemake workflow plans from ``config["experiments"]`` (experiments.smk).

Kept in the package, not in the rule file, so the rules stay declarations and the
planning is testable: which runs the configured campaigns plan, under which raw
directory, and which calibration each needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment.campaign import load_campaign
from cganalysis.rawnames import check_name


@dataclass(frozen=True)
class PlannedJob:
    campaign_file: str
    run_id: str
    calibration_key: str


@dataclass
class WorkflowPlan:
    """(campaign dir, run id) -> job; campaign dir = campaign name + suffix."""

    jobs: dict[tuple[str, str], PlannedJob] = field(default_factory=dict)
    calibrate: bool = True
    max_duration_s: float | None = None
    #: A testbed pool (experiments.testbeds): each run takes the first free one.
    testbeds: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> WorkflowPlan:
        exp = config.get("experiments") or {}
        plan = cls(
            calibrate=bool(exp.get("calibrate", True)),
            max_duration_s=exp.get("max_duration_s"),
            testbeds=tuple(exp.get("testbeds") or ()),
        )
        suffix = exp.get("campaign_suffix", "")
        # A short form of a campaign keeps its design and runs fewer repetitions of it.
        max_reps = exp.get("max_repetitions")
        for file in exp.get("campaign_files", []):
            campaign = load_campaign(Path(file))
            for run in campaign.runs:
                if max_reps is not None and run.repetition > max_reps:
                    continue
                # A trace link's capacity varies: nothing to calibrate ("" = no calibration).
                key = "" if run.config.bottleneck.forward.trace else run.calibration_key
                # Both become folder names and words of the experiment's command line.
                check_name(campaign.name + suffix, file, "campaign (with its campaign_suffix)")
                check_name(run.run_id, file, "run id")
                plan.jobs[(campaign.name + suffix, run.run_id)] = PlannedJob(file, run.run_id, key)
        return plan

    def runs(self) -> list[tuple[str, str]]:
        return sorted(self.jobs)

    def meta_files(self) -> list[str]:
        return [f"data/raw/{c}/{r}/meta.json" for c, r in self.runs()]

    def packet_files(self) -> list[str]:
        return [f"data/processed/{c}/{r}/packets.parquet" for c, r in self.runs()]

    def job(self, campaign: str, run_id: str) -> PlannedJob:
        try:
            return self.jobs[(campaign, run_id)]
        except KeyError:
            raise ConfigError(
                f"data/raw/{campaign}/{run_id}: no configured campaign plans this run "
                "(experiments.campaign_files in configs/config.yaml)"
            ) from None

    def calibration_file(self, campaign: str, run_id: str) -> list[str]:
        key = self.job(campaign, run_id).calibration_key
        if not self.calibrate or not key:
            return []
        return [f"data/raw/{campaign}/_calibration/{key}/calibration.json"]

    def calibration_job(self, campaign: str, key: str) -> PlannedJob:
        """The first planned run with this bottleneck: calibrate its configuration."""
        for (c, _), job in sorted(self.jobs.items()):
            if c == campaign and job.calibration_key == key:
                return job
        raise ConfigError(f"data/raw/{campaign}/_calibration/{key}: no planned run needs it")

    # The flags are argv words, one per item: the rules quote each (``{params.flags:q}``),
    # so a testbed file or calibration path with a space or `$(...)` stays one word.

    def testbed_flags(self) -> list[str]:
        """``--testbed`` per testbed of the pool (none: the run files' own testbed)."""
        return [word for t in self.testbeds for word in ("--testbed", t)]

    def experiment_flags(self, calibration: list[str] | str) -> list[str]:
        flags = self.testbed_flags()
        if self.max_duration_s:
            flags += ["--max-duration-s", f"{self.max_duration_s:g}"]
        files = [calibration] if isinstance(calibration, str) else list(calibration)
        if files:
            flags += ["--calibration", files[0]]
        return flags
