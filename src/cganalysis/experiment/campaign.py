"""Campaigns (``configs/campaigns/*.yaml``): a base run, factors, repetitions -> run ids.

::

    campaign: tma2024            # the name: data/raw/<campaign>/<run_id>/
    base: ../runs/tma2024-base.yaml   # a run file beside this one or in ../runs/, or `run:`
    repetitions: 1
    factors:                     # every combination, in this order
      qdisc:                     # factor name; each level overlays the base (deep merge)
        droptail: {bottleneck: {qdisc: {kind: pfifo, limit: 250}}}
        htb: {bottleneck: {qdisc: {kind: htb, ...}}}
      cca:
        cubic: {competitor: {cca: cubic}}
        bbr: {competitor: {cca: bbr}}
    exclude:                     # optional: combinations not to run (any entry that
      - {qdisc: htb, cca: bbr}   # matches all its factors removes a combination; a
      - {qdisc: [pfifo, htb], cca: cubic}   # list matches any of its levels)
    run_id: "{campaign}-{qdisc}-{cca}-r{repetition:02d}"   # optional; this is the default

A campaign can also be another one's runs with an overlay on each (``variant_of``,
:func:`_variant`): the kernel data plane of a campaign, say, without repeating its factors.
A level that changes a ``kind`` replaces that mapping instead of merging into it. Each
run's labels get the factor levels (``qdisc: htb``, ``cca: bbr``), so tables and
figures group by them. Runs with the same bottleneck share one calibration
(:func:`calibration_key`).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment.campaignrules import beside, check_run_count, check_run_id_template
from cganalysis.experiment.config import RunConfig, parse_run
from cganalysis.experiment.labelkeys import canonical_system
from cganalysis.io import read_yaml
from cganalysis.testbed.spec.validate import TOKEN, Section, check_name


@dataclass(frozen=True)
class PlannedRun:
    campaign: str
    run_id: str
    repetition: int
    levels: dict[str, str]
    config: RunConfig

    @property
    def calibration_key(self) -> str:
        return calibration_key(self.config)


@dataclass(frozen=True)
class CampaignPlan:
    name: str
    path: Path
    runs: tuple[PlannedRun, ...]

    def run(self, run_id: str) -> PlannedRun:
        for r in self.runs:
            if r.run_id == run_id:
                return r
        known = ", ".join(r.run_id for r in self.runs[:6])
        raise ConfigError(f"{self.path}: no run {run_id!r} in campaign {self.name} ({known}, ...)")


def deep_merge(base: Any, over: Any) -> Any:
    """``over`` on top of ``base``; a mapping whose ``kind`` changes is replaced whole (a
    new qdisc does not inherit the old one's parameters)."""
    if (
        isinstance(base, Mapping)
        and isinstance(over, Mapping)
        and not ("kind" in over and over.get("kind") != base.get("kind"))
    ):
        out = dict(base)
        for k, v in over.items():
            out[k] = deep_merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def calibration_key(cfg: RunConfig) -> str:
    """Same bottleneck and delay -> same key (a calibration serves all those runs)."""
    doc = {
        "bottleneck": cfg.bottleneck.to_dict(),
        "propagation": cfg.propagation.to_dict(),
        "testbed": str(cfg.testbed.path or cfg.testbed.kind),
    }
    return "cal-" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:10]


#: The keys a variant campaign (``variant_of``) may give itself.
_VARIANT_KEYS = ("campaign", "variant_of", "overlay", "repetitions", "run_id")


def _variant(path: Path, data: Mapping[str, Any]) -> tuple[dict[str, Any], Any, Path]:
    """A campaign written as another one's runs with an overlay on every run::

        campaign: tma2024-kernel
        variant_of: tma2024.yaml        # its base, factors and exclude
        overlay: {testbed: uml, bottleneck: {backend: kernel}}
        repetitions: 1                  # optional: the other's otherwise; run_id too

    Returns the campaign document to read, the overlay and the folder its base's relative
    paths start from."""
    sec = Section(data, str(path))
    # Beside this file only: a shared campaign file must not read files from elsewhere.
    other_path = beside(sec, "variant_of", path.parent, "campaign file")
    other = read_yaml(other_path)
    if not isinstance(other, Mapping) or "variant_of" in other:
        raise sec.error("variant_of", f"{other_path}: not a campaign of its own")
    for key in data:
        if key not in _VARIANT_KEYS:
            raise sec.error(str(key), f"a variant campaign gives only {', '.join(_VARIANT_KEYS)}")
    doc = {k: v for k, v in other.items() if k not in ("campaign", "repetitions", "run_id")}
    doc.update({k: data[k] for k in ("campaign", "repetitions", "run_id") if k in data})
    # The other's base stays relative: load_campaign reads it from the other's folder.
    return doc, sec.raw("overlay", {}), other_path.parent


def load_campaign(path: Path, *, published: bool = False) -> CampaignPlan:
    """The campaign file at ``path``, every run checked. ``published``: the file as the
    commit of a published dataset wrote it (``dataset reproduce``), whose runs' ``system``
    labels may have the spelling of their day (``labelkeys.LEGACY_SYSTEMS``): read in
    today's, as the dataset's tables read them."""
    data = read_yaml(path)
    overlay: Any = {}
    run_dir = path.parent
    if isinstance(data, Mapping) and "variant_of" in data:
        data, overlay, run_dir = _variant(path, data)
    where = str(path)
    sec = Section(data, where)
    name = sec.string("campaign", pattern=TOKEN)
    if sec.has("base") == sec.has("run"):
        raise sec.error("base", "give either base (a run file) or run (an inline run)")
    if sec.has("base"):
        base_path = beside(sec, "base", run_dir, "run file", runs_folder=True)
        base = read_yaml(base_path)
        base_dir = base_path.parent
    else:
        base = sec.raw("run")
        base_dir = run_dir
    base = deep_merge(base, overlay) if overlay else base
    reps = sec.integer("repetitions", 1, minimum=1, maximum=1000)
    factors_sec = sec.sub("factors")
    factors: list[tuple[str, list[tuple[str, Any]]]] = []
    for fname in list(factors_sec.data):
        check_name(str(fname), f"{where}: factor name")
        levels = factors_sec.sub(str(fname))
        items = [
            (check_name(str(k), f"{where}: factors.{fname} level"), levels.raw(str(k)))
            for k in list(levels.data)
        ]
        if not items:
            raise factors_sec.error(str(fname), "a factor needs at least one level")
        factors.append((str(fname), items))
    exclude = _parse_exclude(sec, dict(factors))
    check_run_count(sec, [len(levels) for _, levels in factors], reps)
    default_id = "{campaign}" + "".join(f"-{{{f}}}" for f, _ in factors) + "-r{repetition:02d}"
    fields = ["campaign", "repetition", *(f for f, _ in factors)]
    template = check_run_id_template(sec, sec.string("run_id", default_id), fields)
    sec.finish()
    runs: list[PlannedRun] = []
    names = [f for f, _ in factors]
    for combo in itertools.product(*[levels for _, levels in factors]):
        levels_chosen = {fname: level for fname, (level, _) in zip(names, combo, strict=True)}
        if any(all(levels_chosen[f] in ok for f, ok in rule.items()) for rule in exclude):
            continue
        # Labels: the base's, then the level names, then what a level's overlay says.
        merged = deep_merge(base, {"labels": levels_chosen})
        for _, overlay in combo:
            merged = deep_merge(merged, overlay or {})
        for rep in range(1, reps + 1):
            try:
                run_id = template.format(campaign=name, repetition=rep, **levels_chosen)
            except (KeyError, IndexError, ValueError) as err:
                raise sec.error("run_id", f"{template!r}: {err}") from None
            check_name(run_id, f"{where}: run id")
            if "." in run_id:
                # The workflow names a run's files <run_id>.<what>.<ext>: a dot in the id
                # makes them ambiguous and its report rules find no input.
                raise sec.error(
                    "run_id", f"{run_id}: no '.' in a run id; name the factor level without it"
                )
            doc = deep_merge(merged, {})
            if isinstance(doc, dict):
                doc.setdefault("name", name)
                if published:
                    _todays_system_label(doc)
            cfg = parse_run(doc, f"{where} (run {run_id})", base_dir)
            runs.append(PlannedRun(name, run_id, rep, levels_chosen, cfg))
    if not runs:
        raise sec.error("exclude", "excludes every combination of the factors: nothing to run")
    ids = [r.run_id for r in runs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"{where}: run ids repeat ({dupes[0]}); put every factor in run_id")
    return CampaignPlan(name, path, tuple(runs))


def _todays_system_label(doc: dict[str, Any]) -> None:
    labels = doc.get("labels")
    if isinstance(labels, dict) and isinstance(labels.get("system"), str):
        labels["system"] = canonical_system(labels["system"])


def _parse_exclude(
    sec: Section, factors: dict[str, list[tuple[str, Any]]]
) -> list[dict[str, frozenset[str]]]:
    """``exclude``: a list of {factor: level or [levels]}; names are checked against the
    factors so that a typo cannot silently exclude nothing."""
    rules: list[dict[str, frozenset[str]]] = []
    for i, raw in enumerate(sec.items("exclude")):
        key = f"exclude[{i}]"
        if not isinstance(raw, Mapping) or not raw:
            raise sec.error(key, "give a mapping of factor: level (or [levels]), e.g. {qdisc: htb}")
        rule: dict[str, frozenset[str]] = {}
        for fname, value in raw.items():
            if fname not in factors:
                raise sec.error(f"{key}.{fname}", f"no such factor (factors: {', '.join(factors)})")
            wanted = [value] if isinstance(value, str) else value
            known = [level for level, _ in factors[fname]]
            if not isinstance(wanted, list) or not wanted:
                raise sec.error(f"{key}.{fname}", "give a level or a list of levels")
            for level in wanted:
                if level not in known:
                    raise sec.error(
                        f"{key}.{fname}",
                        f"{level!r} is not a level of {fname} ({', '.join(known)})",
                    )
            rule[str(fname)] = frozenset(wanted)
        rules.append(rule)
    return rules


def is_campaign(path: Path) -> bool:
    data = read_yaml(path)
    return isinstance(data, Mapping) and "campaign" in data
