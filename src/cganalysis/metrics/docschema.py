"""JSON schema of the metrics document, derived from its records (:mod:`.document`).

Checked by the code that writes the document and by every reader, with
:func:`cganalysis.jsoncheck.check_document`; ``cganalysis schema metrics`` prints it. It pins
the keys the tables and figures read and the ranges promised: percentages in [0, 100], loss
and CE rates in [0, 1], the fairness ratio in [-1, 1], Jain's index in [0, 1]. Utilisation
is in [0, 1] for a correct capacity; above 1 it is kept (with a warning in the document)
because it says the capacity given is wrong. meta.json's schema: :mod:`.runmeta`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cganalysis.errors import SchemaError
from cganalysis.jsoncheck import check_document
from cganalysis.jsonrecord import json_schema
from cganalysis.metrics.document import MetricsDocument

#: JSON schema of the metrics document, derived from :class:`MetricsDocument`.
METRICS_JSON_SCHEMA: dict[str, Any] = json_schema(MetricsDocument, "metrics document")


def validate_metrics(doc: Mapping[str, Any], where: str = "metrics document") -> None:
    """Raises :class:`SchemaError` naming the first key that breaks the schema."""
    check_document(doc, METRICS_JSON_SCHEMA, where, error=SchemaError)
