"""Reading configuration mappings with errors that name the file, the key and the fix.

Every value that can reach a command line passes through here: names are checked against
strict patterns (no shell metacharacters, no whitespace, no leading dash that a tool could
read as an option), numbers against their ranges. Commands are run from argument vectors,
never through a local shell, and the ssh backend quotes every word, so these checks are
the first of two walls, not the only one.

Every pattern is matched whole (``fullmatch``): with ``re.match`` and ``^...$`` a trailing
newline passed (``$`` matches before it), and a campaign named ``"evil\n"`` split a shell
line of the workflow.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from cganalysis.errors import ConfigError

T = TypeVar("T")

#: Interface names: Linux allows up to 15 bytes; we also refuse anything a shell would read.
IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")
#: Host names and IPv4/IPv6 literals.
HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")
#: Unix user names.
USERNAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
#: Identifiers such as congestion-control names and labels (also used in run ids).
TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
#: File paths that reach a remote shell: no whitespace, quotes or metacharacters, and no
#: leading dash (a tool would read the path as an option).
SAFE_PATH = re.compile(r"[A-Za-z0-9_./~+][A-Za-z0-9_./~+@=:,-]{0,4095}")
#: IPv4 address.
IPV4 = re.compile(r"(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}")

SHELL_HINT = "letters, digits and . _ - only (no spaces or shell metacharacters)"


class Section:
    """A mapping being read, with the dotted key path used in error messages."""

    def __init__(self, data: Any, where: str, path: str = "") -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: key {path or '(top level)'}: expected a mapping")
        self.data: Mapping[str, Any] = data
        self.where = where
        self.path = path
        self._seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: key {self.key(name)}: {message}")

    def has(self, name: str) -> bool:
        """Whether ``name`` is given, null meaning not given. A key asked about is a known
        key: an explicit null (``stop_s: null``) is accepted, not refused as unknown."""
        self._seen.add(name)
        return name in self.data and self.data[name] is not None

    def raw(self, name: str, default: Any = None) -> Any:
        self._seen.add(name)
        value = self.data.get(name, default)
        return default if value is None else value

    def sub(self, name: str) -> Section:
        return Section(self.raw(name), self.where, self.key(name))

    def opt_sub(self, name: str) -> Section | None:
        return self.sub(name) if self.has(name) else None

    def number(
        self,
        name: str,
        default: float | None = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> float:
        value = self.raw(name, default)
        if value is None:
            raise self.error(name, "required (a number)")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"{value!r} is not a number")
        v = float(value)
        if not math.isfinite(v):
            raise self.error(name, f"{value!r} must be finite")
        if minimum is not None and (v < minimum or (exclusive_minimum and v == minimum)):
            op = ">" if exclusive_minimum else ">="
            raise self.error(name, f"{value!r} must be {op} {minimum:g}")
        if maximum is not None and v > maximum:
            raise self.error(name, f"{value!r} must be <= {maximum:g}")
        return v

    def opt_number(self, name: str, **kw: Any) -> float | None:
        return self.number(name, **kw) if self.has(name) else None

    def integer(
        self,
        name: str,
        default: int | None = None,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int:
        value = self.raw(name, default)
        if value is None:
            raise self.error(name, "required (an integer)")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"{value!r} is not an integer")
        if minimum is not None and value < minimum:
            raise self.error(name, f"{value} must be >= {minimum}")
        if maximum is not None and value > maximum:
            raise self.error(name, f"{value} must be <= {maximum}")
        return value

    def opt_integer(self, name: str, **kw: Any) -> int | None:
        return self.integer(name, **kw) if self.has(name) else None

    def boolean(self, name: str, default: bool | None = None) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise self.error(name, f"{value!r} is not true or false")
        return value

    def opt_boolean(self, name: str) -> bool | None:
        return self.boolean(name) if self.has(name) else None

    def string(
        self, name: str, default: str | None = None, *, pattern: re.Pattern[str] | None = None
    ) -> str:
        value = self.raw(name, default)
        if value is None:
            raise self.error(name, "required (a string)")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.error(name, f"{value!r} is not a string")
        text = str(value)
        if pattern is not None and not pattern.fullmatch(text):
            raise self.error(name, f"{text!r} is not allowed here: use {SHELL_HINT}")
        return text

    def opt_string(self, name: str, *, pattern: re.Pattern[str] | None = None) -> str | None:
        return self.string(name, pattern=pattern) if self.has(name) else None

    def choice(self, name: str, choices: Sequence[T], default: T | None = None) -> T:
        value = self.raw(name, default)
        if value not in choices:
            known = ", ".join(str(c) for c in choices)
            raise self.error(name, f"{value!r} is not one of: {known}")
        return choices[list(choices).index(value)]

    def items(self, name: str) -> list[Any]:
        value = self.raw(name, [])
        if not isinstance(value, list):
            raise self.error(name, "expected a list")
        return value

    def finish(self, allowed_extra: Sequence[str] = ()) -> None:
        """Refuses keys nobody read: a misspelt key must not be silently ignored."""
        unknown = sorted(set(self.data) - self._seen - set(allowed_extra))
        if unknown:
            raise self.error(
                unknown[0],
                "unknown key (misspelt? see docs/testbed.md for the keys of this section)",
            )


def check_name(value: str, what: str, pattern: re.Pattern[str] = TOKEN) -> str:
    """For values built in code (run ids, namespace names): same rules as configs."""
    if not pattern.fullmatch(value):
        raise ConfigError(f"{what} {value!r}: use {SHELL_HINT}")
    return value
