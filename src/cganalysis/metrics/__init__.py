"""Metrics of the two papers over per-packet tables: pure functions over polars frames.

One module per role: :mod:`.roles` (which flow is which), :mod:`.runfacts` (what the run was),
:mod:`.runmeta` (meta.json, typed), :mod:`.steps` (the competitor's schedule),
:mod:`.timebase` (roles and relative times), :mod:`.bitrate`, :mod:`.delay`, :mod:`.loss`,
:mod:`.capacity` (constant or mahimahi trace), :mod:`.fairness`, :mod:`.response`,
:mod:`.adaptiveness`, :mod:`.single` (RTP jitter), :mod:`.aggregate` (repetitions),
:mod:`.timeseries` (figure series), :mod:`.registry` (every metric of the document, once),
:mod:`.rolestats` (a role's block, family by family), :mod:`.compute` (one run's document),
:mod:`.document` (its typed records), :mod:`.docschema` (its derived schema), :mod:`.rows`
(JSON to tables) and :mod:`.io` (the only module that opens files). Definitions:
docs/metrics.md.
"""

from __future__ import annotations

from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.roles import RoleRule, parse_rule, parse_rules
from cganalysis.metrics.runfacts import (
    Capacity,
    RunFacts,
    Window,
    choose_capacity,
    facts_from_meta,
    facts_from_values,
)
from cganalysis.metrics.steps import ResponseSettings, Step
from cganalysis.metrics.timebase import Prepared, prepare

__all__ = [
    "Capacity",
    "Prepared",
    "ResponseSettings",
    "RoleRule",
    "RunFacts",
    "Step",
    "Window",
    "choose_capacity",
    "facts_from_meta",
    "facts_from_values",
    "parse_rule",
    "parse_rules",
    "prepare",
    "run_metrics",
]
