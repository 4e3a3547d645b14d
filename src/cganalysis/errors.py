"""Exceptions that the command line turns into a one-line message and a non-zero exit."""

from __future__ import annotations

from pathlib import Path


class CganalysisError(Exception):
    """Base of every error the user can act on; its message says what to do."""


class SchemaError(CganalysisError):
    """A table does not have the declared columns or types."""


class CaptureError(CganalysisError):
    """A capture file cannot be read; names the file and, when known, the byte offset."""

    def __init__(self, path: Path | str, message: str, offset: int | None = None) -> None:
        self.path = Path(path)
        self.offset = offset
        where = f"{self.path}" if offset is None else f"{self.path} at byte offset {offset}"
        super().__init__(f"{where}: {message}")


class MatchError(CganalysisError):
    """Two captures cannot be matched as ingress and egress of one bottleneck."""


class ConfigError(CganalysisError):
    """A configuration file or option is invalid; names the key and the expected value."""
