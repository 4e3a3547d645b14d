"""The run file's `offloads` key: its values, YAML's reading of `off`, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run

REPO = Path(__file__).resolve().parents[2]


def _run(extra: str) -> dict[str, object]:
    doc = yaml.safe_load((REPO / "configs" / "runs" / "quick-pfifo.yaml").read_text())
    doc.update(yaml.safe_load(extra) or {})
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize(
    ("text", "mode"), [("", "off"), ("offloads: off", "off"), ("offloads: kernel", "kernel")]
)
def test_offloads_values(text: str, mode: str) -> None:
    cfg = parse_run(_run(text), "run.yaml", REPO)
    assert cfg.offloads == mode
    # the resolved configuration names it only when set (earlier runs' stay as they were)
    assert ("offloads" in cfg.to_dict()) == (mode != "off")


@pytest.mark.parametrize("text", ["offloads: on", "offloads: tso"])
def test_offloads_errors_name_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match=r"run\.yaml: key offloads: .* off, kernel"):
        parse_run(_run(text), "run.yaml", REPO)
