"""The server's clock: wall time plus a configurable offset.

Every "now" in memvault comes from here (policies take ``now`` as a parameter), so that
tests can move time by starting the server with ``MEMVAULT_CLOCK_OFFSET_S``.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import overload


class Clock:
    """Unix-seconds clock shifted by ``offset_s`` seconds."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset_s = offset_s

    def now(self) -> float:
        """Current time, unix seconds (float)."""
        return time.time() + self.offset_s


@overload
def to_iso(ts: float) -> str: ...
@overload
def to_iso(ts: None) -> None: ...
@overload
def to_iso(ts: float | None) -> str | None: ...
def to_iso(ts: float | None) -> str | None:
    """Unix seconds -> ISO 8601 UTC string (``2026-11-29T14:20:04Z``); None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_iso(value: str) -> float:
    """ISO 8601 date or datetime -> unix seconds. Naive values are taken as UTC.

    Raises ValueError with the accepted forms when the string does not parse.
    """
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(
            f"{value!r} is not a date; use ISO 8601 such as 2026-11-29 or 2026-11-29T14:20:00Z"
        ) from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()
