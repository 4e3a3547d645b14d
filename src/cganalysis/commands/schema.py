"""``cganalysis schema metrics|meta``: the JSON schema of a run's documents, as JSON.

Both are derived from the typed records the code writes (:mod:`cganalysis.jsonrecord`):
the metrics document (:class:`cganalysis.metrics.document.MetricsDocument`) and meta.json
(:class:`cganalysis.metrics.runmeta.RunMeta`). Keys: docs/metrics.md.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.metrics.docschema import METRICS_JSON_SCHEMA
from cganalysis.metrics.runmeta import META_SCHEMA

HELP = COMMANDS["schema"]
DOCUMENTS = ("metrics", "meta")


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema",
        help=HELP,
        description=HELP + ": `metrics` for the metrics JSON of a run, `meta` for meta.json.",
    )
    p.add_argument("document", choices=DOCUMENTS, help="which document")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    schema = METRICS_JSON_SCHEMA if args.document == "metrics" else META_SCHEMA
    print(json.dumps(schema, indent=2))
    return 0
