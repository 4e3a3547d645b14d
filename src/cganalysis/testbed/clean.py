"""``cganalysis testbed clean``: undo what runs that died (SIGKILL, power loss) left behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from cganalysis.testbed.netns import userns
from cganalysis.testbed.shared import state
from cganalysis.testbed.types import TESTBED_TYPES


def clean(include_live: bool = False, dry_run: bool = False) -> Iterator[str]:
    seen: set[str] = set()
    yield from state.refused_states()
    for st in state.leftover_states(include_live):
        for ns in st.get("namespaces", []):
            if not state.is_ours(ns):
                yield f"{st['_path']}: namespace {ns!r} left alone: not a name this package makes"
                continue
            seen.add(ns)
            if "user_namespace" not in st and ns in state.list_namespaces():
                yield f"{'would remove' if dry_run else 'removing'} namespace {ns}"
                if not dry_run:
                    state.delete_namespace(ns)
        if "user_namespace" in st:
            # An ordinary user's run: its namespaces die with its user namespace's last process.
            pids = userns.leftover_processes(st)
            if pids:
                verb = "would end" if dry_run else "ending"
                yield f"{verb} {len(pids)} process(es) of run {st.get('tag')}'s user namespace"
                if not dry_run:
                    userns.kill(pids)
        bed = TESTBED_TYPES.get(str(st.get("backend")))
        if bed is not None and bed.clean is not None:
            yield from bed.clean(st, dry_run)
        if not dry_run:
            Path(st["_path"]).unlink(missing_ok=True)
    # The host's /run/netns holds root's namespaces only: an ordinary user's live and die
    # with its user namespace (above).
    for ns in state.leftover_namespaces(include_live) if os.geteuid() == 0 else []:
        if ns in seen:
            continue
        yield f"{'would remove' if dry_run else 'removing'} namespace {ns} (owner gone)"
        if not dry_run:
            state.delete_namespace(ns)
