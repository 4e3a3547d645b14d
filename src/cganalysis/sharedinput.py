"""Reading files that come from other labs (run, campaign and testbed files, meta.json)
without letting a small file take the machine: size, alias expansion, nesting depth and
integer size are capped before anything is built from the text.

A YAML alias costs nothing to parse but every use of the result (a ``str()`` of the
description, a deep merge of a campaign level) walks it expanded: nine levels of nine
aliases are 9**9 nodes from an 837-byte file. The expansion is measured on the composed
node graph, shared nodes counted at each use, before a Python object exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from cganalysis.errors import ConfigError

#: Larger than any configuration file of the project by two orders of magnitude.
MAX_FILE_BYTES = 1 << 20
#: Nodes of a document with every alias expanded (the largest campaign has ~2,000).
MAX_EXPANDED_NODES = 200_000
#: Mappings and lists inside each other (the deepest configuration nests 7).
MAX_DEPTH = 32
#: Integers beyond 64 bits name no setting (a seed is at most 2**64 - 1); larger ones
#: would overflow float() in the checks that follow.
MAX_INT_BITS = 64
#: A JSON document (meta.json, a metrics document) is larger than a configuration.
MAX_JSON_BYTES = 64 << 20


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses integers wider than 64 bits."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        value = super().construct_yaml_int(node)
        if not isinstance(value, int) or abs(value) >= 1 << MAX_INT_BITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of more than {MAX_INT_BITS} bits", node.start_mark
            )
        return value


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def _expanded_size(node: Node, depth: int, sizes: dict[int, int], where: str) -> int:
    """Nodes under ``node`` with aliases expanded; a shared node's size is computed once."""
    if depth > MAX_DEPTH:
        raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels; flatten it")
    known = sizes.get(id(node))
    if known is not None:
        return known
    total = 1
    if isinstance(node, SequenceNode):
        children: list[Node] = list(node.value)
    elif isinstance(node, MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        children = []
    for child in children:
        total += _expanded_size(child, depth + 1, sizes, where)
        if total > MAX_EXPANDED_NODES:
            raise ConfigError(
                f"{where}: more than {MAX_EXPANDED_NODES} values once its aliases (*name) "
                "are expanded; write the values out or use fewer aliases"
            )
    sizes[id(node)] = total
    return total


def read_capped(path: Path, cap: int, where: str) -> bytes:
    """At most ``cap`` bytes of ``path``; a larger file or a read error is one ConfigError
    line naming ``where``."""
    try:
        with path.open("rb") as fh:
            data = fh.read(cap + 1)
    except OSError as err:
        raise ConfigError(f"{where}: cannot read: {err.strerror}") from None
    if len(data) > cap:
        raise ConfigError(f"{where}: larger than {cap // 1024} KiB; not a file this reads")
    return data


def load_yaml_text(text: str, where: str) -> Any:
    """One YAML document, checked as :func:`load_yaml` does (``where`` names it)."""
    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_FILE_BYTES // 1024} KiB")
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, 0, {}, where)
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        reason = " ".join(str(err).split())  # one line, whatever the parser's layout
        raise ConfigError(f"{where}: not valid YAML: {reason[:300]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to read; flatten it") from None
    finally:
        loader.dispose()


def load_yaml(path: Path) -> Any:
    """A configuration file: at most 1 MiB, aliases and nesting bounded, integers of at
    most 64 bits; anything else is one :class:`ConfigError` line naming the file."""
    data = read_capped(path, MAX_FILE_BYTES, str(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start})") from None
    return load_yaml_text(text, str(path))


def load_json(path: Path, what: str) -> Any:
    """A JSON file from elsewhere: size capped, deep nesting one error line, not a crash."""
    where = f"{what} {path}"
    data = read_capped(path, MAX_JSON_BYTES, where)
    try:
        return json.loads(data)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where}: not valid JSON ({err})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to read") from None
