"""A mahimahi link as an ``mm-delay`` / ``mm-link`` command line (hosts that have mahimahi).

mahimahi nests shells: ``mm-delay MS mm-link UP DOWN [options] -- CMD`` runs CMD inside a
namespace whose traffic to the outside crosses the link. The client side runs inside, so
server -> client is mahimahi's *downlink*. Trace format: docs/testbed.md
(Trace-driven links). mahimahi is not packaged for Debian 12, so here this is rendered (and
golden-tested) but only runs on hosts that have ``mm-link``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cganalysis.testbed.config import Mahimahi


def render_mahimahi(m: Mahimahi, downlink_log: str, inner: Sequence[str]) -> list[str]:
    link = ["mm-link", m.uplink_trace, m.downlink_trace]
    link.append(f"--downlink-queue={m.queue}")
    if m.queue_args:
        link.append(f"--downlink-queue-args={m.queue_args}")
    link.append(f"--downlink-log={downlink_log}")
    link += ["--", *inner]
    return (["mm-delay", str(m.delay_ms)] if m.delay_ms > 0 else []) + link
