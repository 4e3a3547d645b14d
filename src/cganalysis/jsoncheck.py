"""Checking a JSON (or YAML) document against its JSON schema: one message for every format.

The formats declared as JSON schemas (meta.json and the metrics JSON in
:mod:`cganalysis.metrics.docschema`, the plotting style in :mod:`cganalysis.report.style`)
are checked here, by the code that writes them and by the code that reads them, and a
document that breaks its schema gives one line naming the file and the first key at fault.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from cganalysis.errors import CganalysisError, ConfigError


def check_document(
    doc: Any,
    schema: Mapping[str, Any],
    where: str,
    *,
    error: type[CganalysisError] = ConfigError,
    hint: str = "",
) -> None:
    """Raises ``error`` as ``WHERE: key KEY: WHAT[ (HINT)]`` for the first key (in key
    order) that breaks ``schema``; a missing required key is named itself, not its parent."""
    validator = _jsonschema().Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    err = errors[0]
    path = [str(p) for p in err.absolute_path]
    if err.validator == "required" and isinstance(err.instance, Mapping):
        path += [next(str(k) for k in err.validator_value if k not in err.instance)]
    key = ".".join(path) or "(top level)"
    raise error(f"{where}: key {key}: {err.message}" + (f" ({hint})" if hint else ""))


def _jsonschema() -> ModuleType:
    """jsonschema, imported when first needed (most commands never validate) and without
    ``rfc3987_syntax``: when that is installed, jsonschema's format module builds its 38
    lark grammars on import, 2-8 seconds of every process that validates a document (the
    analysis of a campaign spent more time there than reading its captures). Formats are
    not checked here (no format checker is given), so the "iri" check it would register
    is never used."""
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    blocked = "rfc3987_syntax" not in sys.modules
    if blocked:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import: ImportError
    try:
        import jsonschema
    finally:
        if blocked and sys.modules.get("rfc3987_syntax", ...) is None:
            del sys.modules["rfc3987_syntax"]
    return jsonschema
