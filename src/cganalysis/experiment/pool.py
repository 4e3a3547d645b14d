"""A testbed pool: a run takes the first free testbed of several (``--testbed`` given more
than once, or ``experiments.testbeds`` in the workflow), holding it for the whole run.

The pool replaces the run file's own ``testbed``. Choosing and holding are one step (the
testbeds' own locks, :func:`cganalysis.testbed.shared.lock.hold_one_of`), so two runs started
together never pick the same free testbed; the runner's lock on the chosen testbed then
re-enters the one held here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import RunConfig, TestbedRef, parse_testbed_ref
from cganalysis.testbed.shared.lock import hold_one_of
from cganalysis.testbed.spec.validate import Section


def parse_pool(values: Sequence[str], where: str = "--testbed") -> tuple[TestbedRef, ...]:
    """``netns``, ``vm`` or testbed files (relative to the working folder), each once."""
    refs = tuple(parse_testbed_ref(Section({"testbed": v}, where), Path.cwd()) for v in values)
    locks = [r.lock_name() for r in refs]
    for i, lock in enumerate(locks):
        if lock in locks[:i]:
            raise ConfigError(
                f"{where} {values[i]}: the same testbed as {values[locks.index(lock)]}; "
                "a pool lists each testbed once (two netns testbeds on one machine need "
                "different `name`s in their files)"
            )
    return refs


@contextmanager
def on_a_free_testbed(
    cfg: RunConfig, pool: Sequence[TestbedRef], what: str, progress: Callable[[str], None]
) -> Iterator[RunConfig]:
    """``cfg`` on the first free testbed of ``pool``, held for the block (without a pool:
    ``cfg`` as it is; the runner takes its testbed's lock itself)."""
    if not pool:
        yield cfg
        return
    labels = tuple(r.label for r in pool)
    with hold_one_of([r.lock_name() for r in pool], what, progress) as got:
        chosen = replace(pool[got], pool=labels)
        if len(pool) > 1:
            progress(f"testbed pool: {chosen.label} (of {', '.join(labels)})")
        yield replace(cfg, testbed=chosen)
