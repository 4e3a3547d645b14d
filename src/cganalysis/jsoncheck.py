"""Checking a JSON (or YAML) document against its JSON schema: one message for every format.

The formats declared as JSON schemas (meta.json and the metrics JSON, derived from their
records: :mod:`cganalysis.metrics.runmeta`, :mod:`cganalysis.metrics.docschema`; the
plotting style in :mod:`cganalysis.report.style`)
are checked here, by the code that writes them and by the code that reads them, and a
document that breaks its schema gives one line naming the file and the first key at fault.
"""

from __future__ import annotations

import sys
import threading
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


#: The libraries jsonschema's format module imports, when installed, to check formats
#: (``date-time``, ``duration``, ``iri``, ...). Formats are not checked here (no format
#: checker is given), and importing them was half of importing jsonschema: isoduration
#: pulls in arrow, 0.1 s; rfc3987_syntax builds 38 lark grammars, 2-8 s.
_FORMAT_LIBRARIES: tuple[str, ...] = (
    "fqdn",
    "idna",
    "isoduration",
    "jsonpointer",
    "rfc3339_validator",
    "rfc3986_validator",
    "rfc3987",
    "rfc3987_syntax",
    "uri_template",
    "webcolors",
)
_import_lock = threading.Lock()


def _jsonschema() -> ModuleType:
    """jsonschema, imported when first needed (most commands never validate), without the
    libraries of :data:`_FORMAT_LIBRARIES` (not yet imported ones are hidden while it
    imports: its format module then leaves their checks out, and a later ``import`` of them
    works). The analysis of a campaign spent more time there than reading its captures."""
    with _import_lock:  # two threads validating at once: one import, not a half-made module
        if "jsonschema" in sys.modules:
            return sys.modules["jsonschema"]
        hidden = [m for m in _FORMAT_LIBRARIES if m not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # import: ImportError
        try:
            import jsonschema
        finally:
            for name in hidden:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
        return jsonschema
