"""``cganalysis dataset raw-check CAMPAIGN``: are a published campaign's raw runs here?

DVC tracks a campaign's raw runs by ``data/raw/<campaign>.dvc`` (``dvc add``,
docs/datasets.md); only a testbed makes them. With the runs present the check succeeds; on
a clone that has the published dataset but not the runs it fails with one message naming
the folder, the runs the published dataset lists and the two ways to get them: ``dvc
pull`` from a remote that holds them, or the campaign run again (its profile).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from cganalysis.errors import ConfigError
from cganalysis.io import read_json_object
from cganalysis.repolayout import DATASETS_DIR


def campaign_command(root: Path, campaign: str) -> str:
    """The workflow command that plans ``campaign``: a profile whose experiments.yaml (or
    the default configuration) lists its campaign file (its name, plus the profile's
    campaign_suffix)."""
    candidates = [(p, p.parent.name) for p in sorted(root.glob("profiles/*/experiments.yaml"))]
    candidates.append((root / "configs" / "config.yaml", ""))
    for path, profile in candidates:
        if not path.is_file():
            continue
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        experiments = doc.get("experiments") or {}
        suffix = str(experiments.get("campaign_suffix") or "")
        for name in experiments.get("campaign_files") or []:
            if Path(str(name)).stem + suffix == campaign:
                how = f"--profile profiles/{profile}" if profile else "--cores 4"
                return f"sudo .venv/bin/snakemake {how}"
    return f"a campaign file naming `{campaign}`, run by the workflow (docs/testbed.md)"


def published_runs(root: Path, campaign: str) -> dict[str, list[str]]:
    """The runs of ``campaign`` each published dataset of it lists, by dataset name."""
    out: dict[str, list[str]] = {}
    for sheet in sorted((root / DATASETS_DIR).glob("*/datasheet.json")):
        doc = read_json_object(sheet, "datasheet")
        if doc.get("campaign") == campaign:
            out[sheet.parent.name] = [str(r) for r in doc.get("runs", [])]
    return out


def check_raw(root: Path, campaign: str) -> list[str]:
    """The run ids present in ``data/raw/<campaign>``; a ConfigError saying what is missing
    and how to get it otherwise (the folder, or runs a published dataset of it lists)."""
    raw = root / "data" / "raw" / campaign
    present = sorted(
        p.parent.name for p in raw.glob("*/meta.json") if not p.parent.name.startswith(("_", "."))
    )
    wanted = published_runs(root, campaign)
    missing = sorted({r for runs in wanted.values() for r in runs} - set(present))
    if present and not missing:
        return present
    what = (
        f"data/raw/{campaign}/: missing"
        if not present
        else f"data/raw/{campaign}/: {len(missing)} runs missing ({', '.join(missing)})"
    )
    behind = (
        f", the raw runs behind {', '.join(f'{DATASETS_DIR}/{n}' for n in wanted)}"
        if wanted
        else ""
    )
    raise ConfigError(
        f"{what}{behind}. Get them with `dvc pull data/raw/{campaign}` from a DVC remote that "
        "holds them (docs/datasets.md, 'Other remotes'; `dvc remote list`), or run the campaign "
        f"again: {campaign_command(root, campaign)}"
    )
