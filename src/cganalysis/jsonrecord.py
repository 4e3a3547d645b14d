"""Typed JSON documents: frozen dataclasses whose fields are a document's keys, in order.

A document (the metrics JSON, meta.json) is declared once, as dataclasses: :func:`to_json`
turns a record into the document (keys in field order, values as given, so the bytes
written depend on the values alone) and :func:`json_schema` derives its JSON schema from the
same fields and type hints, so the schema cannot drift from what the code writes.

How a field is read:

- its type gives the schema: ``int``, ``float``, ``str``, ``bool``, ``None``, unions,
  ``Literal``, ``list[T]`` / ``tuple[T, ...]`` (arrays), ``tuple[A, B]`` (a pair),
  ``dict[str, T]`` (an object of ``T``), a nested record, ``Any`` (anything);
  ``Annotated[T, Json({...})]`` adds keywords (a range, a description) to ``T``'s schema;
- a field without a default is required; one with a default may be absent (documents
  written by hand or by older versions): give it with :func:`absent` or :func:`optional`;
- :func:`absent`: the key may be missing, and ``None`` leaves it out instead of writing
  ``null`` (a key present only when it applies), so the schema refuses ``null``;
  :func:`optional`: the key may be missing, and ``None`` is written as ``null``;
- :func:`spread`: a mapping whose entries are written at the field's place in the parent,
  for keys named at run time (a run's labels); the parent then admits other keys of that
  mapping's value type (of one of them, with several spread fields), and only those.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

_OMIT = "json_omit_none"
_SPREAD = "json_spread"
_DOC = "json_description"


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes Annotated's metadata
class Json:
    """JSON-schema keywords added to a type's derived schema:
    ``Annotated[float, Json({"minimum": 0})]``."""

    schema: Mapping[str, Any]


def absent(doc: str = "") -> Any:
    """A field a document may lack: None leaves its key out (never ``null``), and the schema
    refuses ``null``. ``doc``: the schema's description of the key (why it may be absent)."""
    return dataclasses.field(default=None, metadata={_OMIT: True, _DOC: doc})


def optional(doc: str = "") -> Any:
    """A field a document may lack, or hold as ``null`` (None is written as ``null``)."""
    return dataclasses.field(default=None, metadata={_DOC: doc})


def spread(doc: str = "") -> Any:
    """A mapping field written as its entries, at its place in the parent."""
    return dataclasses.field(default_factory=dict, metadata={_SPREAD: True, _DOC: doc})


def to_json(value: Any) -> Any:
    """The JSON value of a record (a dict, keys in field order), recursively; tuples become
    lists, other values are kept as they are (no number is converted or rounded)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.metadata.get(_SPREAD):
                out.update({str(k): to_json(x) for k, x in v.items()})
            elif not (v is None and f.metadata.get(_OMIT)):
                out[f.name] = to_json(v)
        return out
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def from_json(tp: Any, value: Any) -> Any:
    """The record of type ``tp`` a document holds (nested records, tuples and lists as
    declared), for readers that want the typed record back; a key the record does not
    declare goes to its spread field (else it is dropped: check the document first)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return from_json(args[0], value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
        hints = get_type_hints(tp, include_extras=True)
        fields = dataclasses.fields(tp)
        spreads = [f for f in fields if f.metadata.get(_SPREAD)]
        kwargs: dict[str, Any] = {f.name: {} for f in spreads}
        declared = {f.name: f for f in fields if not f.metadata.get(_SPREAD)}
        for key, v in value.items():
            if key in declared:
                kwargs[key] = from_json(hints[key], v)
                continue
            # The first spread field whose values it fits (a label, else provenance).
            home = next((f for f in spreads if _fits(get_args(hints[f.name])[1], v)), None)
            if home is not None:
                kwargs[home.name][key] = v
        return tp(**kwargs)
    if origin is Union or origin is types.UnionType:
        fits = [a for a in args if _fits(a, value)]
        return from_json(fits[0], value) if fits else value
    if origin in (list, tuple, Sequence) and isinstance(value, list):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return tuple(from_json(a, v) for a, v in zip(args, value, strict=False))
        items = [from_json(args[0], v) for v in value]
        return items if origin is list else tuple(items)
    if origin in (dict, Mapping) and isinstance(value, Mapping):
        return {k: from_json(args[1], v) for k, v in value.items()}
    return value


def _fits(tp: Any, value: Any) -> bool:
    """Whether ``value`` has the JSON shape of ``tp`` (to pick a union's member)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _fits(args[0], value)
    if tp is Any:
        return True
    if origin is Union or origin is types.UnionType:
        return any(_fits(a, value) for a in args)
    if value is None or tp is type(None):
        return value is None and tp is type(None)
    if (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or origin in (dict, Mapping):
        return isinstance(value, Mapping)
    if origin in (list, tuple, Sequence):
        return isinstance(value, list)
    if tp in _SCALARS:  # JSON has no bool among its numbers, Python does
        return isinstance(value, tp) and (tp is bool or not isinstance(value, bool))
    return origin is Literal and value in args


def json_schema(record: type, title: str) -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of documents of the record type ``record``."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        **schema_of(record),
    }


def schema_of(tp: Any) -> dict[str, Any]:
    """The JSON schema of one type hint (see the module's docstring for those known)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        extra = {k: v for a in args[1:] if isinstance(a, Json) for k, v in a.schema.items()}
        return {**schema_of(args[0]), **extra}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record_schema(tp)
    if tp is Any:
        return {}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        return _union(args)
    if origin in (list, tuple, Sequence):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            items = [schema_of(a) for a in args]
            return {
                "type": "array",
                "prefixItems": items,
                "minItems": len(items),
                "maxItems": len(items),
            }
        return {"type": "array", "items": schema_of(args[0])}
    if origin in (dict, Mapping):
        return {"type": "object", "additionalProperties": schema_of(args[1])}
    raise TypeError(f"no JSON schema for the type {tp!r}")


_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _union(args: tuple[Any, ...]) -> dict[str, Any]:
    subs = [schema_of(a) for a in args if a is not type(None)]
    if all(set(s) == {"type"} for s in subs):
        names: list[str] = []
        for s in subs:
            for name in s["type"] if isinstance(s["type"], list) else [s["type"]]:
                if name not in names:
                    names.append(name)
        merged: dict[str, Any] = {"type": names[0] if len(names) == 1 else names}
    else:
        merged = subs[0] if len(subs) == 1 else {"anyOf": subs}
    return _nullable(merged) if type(None) in args else merged


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also admits ``null``."""
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return {**schema, "type": [*names, "null"]}
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    if "const" in schema:
        return {"enum": [schema["const"], None]}
    return {"anyOf": [schema, {"type": "null"}]}


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without ``null`` (a key that is left out rather than null)."""
    out = dict(schema)
    if isinstance(out.get("type"), list):
        names = [n for n in out["type"] if n != "null"]
        out["type"] = names[0] if len(names) == 1 else names
    if "enum" in out:
        values = [v for v in out.pop("enum") if v is not None]
        out.update({"const": values[0]} if len(values) == 1 else {"enum": values})
    if "anyOf" in out:
        subs = [s for s in out["anyOf"] if s != {"type": "null"}]
        del out["anyOf"]
        out.update(subs[0] if len(subs) == 1 else {"anyOf": subs})
    return out


def _record_schema(record: type) -> dict[str, Any]:
    hints = get_type_hints(record, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    spread_values: list[dict[str, Any]] = []  # the schemas of undeclared keys' values
    for f in dataclasses.fields(record):
        hint = hints[f.name]
        if f.metadata.get(_SPREAD):
            spread_values.append(schema_of(hint)["additionalProperties"])
            continue
        schema = schema_of(hint)
        if f.metadata.get(_OMIT):
            schema = _not_null(schema)
        if f.metadata.get(_DOC):
            schema = {**schema, "description": f.metadata[_DOC]}
        properties[f.name] = schema
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object"}
    doc = record.__doc__ or ""
    if doc and not doc.startswith(f"{record.__name__}("):  # not dataclass's own signature
        out["description"] = " ".join(doc.split())
    out["properties"] = properties
    if required:
        out["required"] = required
    # Keys not declared: refused, unless a spread field holds them.
    others: Any = False
    if spread_values:
        others = {} if {} in spread_values else _union_of(spread_values)
    return {**out, "additionalProperties": others}


def _union_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
