"""SIGINT and SIGTERM during a run: raised as :class:`Interrupted` so that unwinding runs
the teardown, or ignored while a teardown must finish. Below both ``testbed`` and
``experiment``: the runner and the vm testbed's host side use the same handling."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; unwinding runs the teardown."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def _on_stop_signals(handler: Any) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` inside the block, as before after it."""
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def signals_raise() -> AbstractContextManager[None]:
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    return _on_stop_signals(handler)


def signals_ignored() -> AbstractContextManager[None]:
    """Teardown must finish: a second Ctrl-C must not leave half a testbed behind."""
    return _on_stop_signals(signal.SIG_IGN)
