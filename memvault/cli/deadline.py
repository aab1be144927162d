"""A bound on a command's time in its main thread: ``within(seconds)`` raises ``OutOfTime`` when it is up."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class OutOfTime(Exception):
    pass


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Raise OutOfTime in this (main) thread after ``seconds``; a no-op where there is no SIGALRM."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(_signum: int, _frame: object) -> None:
        raise OutOfTime

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
