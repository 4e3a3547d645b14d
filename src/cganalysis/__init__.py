"""cganalysis: cloud-gaming traffic against competing TCP flows, from testbed to paper figures."""

from __future__ import annotations

__version__ = "0.1.0"
