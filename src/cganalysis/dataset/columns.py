"""Column documentation for the datasheet: the records :mod:`cganalysis.schemas` declares
(type, unit from the name's suffix, description), so the two never drift apart."""

from __future__ import annotations

from cganalysis import schemas
from cganalysis.schemas import Column, unit_of

__all__ = ["Column", "describe", "unit_of"]


def describe(schema_name: str) -> list[Column]:
    """Every column of the named table (e.g. ``"PACKETS"``), in order."""
    return list(schemas.TABLES[schema_name])
