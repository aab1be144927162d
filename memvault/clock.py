"""The server's clock: wall time plus a configurable offset.

Every "now" in memvault comes from here (policies take ``now`` as a parameter), so that
tests can move time by giving the server a ``Clock(offset_s)`` (``Runtime.open(clock=...)``,
``build_server(clock=...)``).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
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
    """ISO 8601 date or datetime -> unix seconds (its start: ``2026-11-29`` is midnight UTC).
    Naive values are taken as UTC.

    Raises ValueError with the accepted forms when the string does not parse.
    """
    return parse_iso_span(value)[0]


_OFFSET = re.compile(r"(?:Z|[+-]\d{2}(?::?\d{2})?)$", re.IGNORECASE)
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_YEAR = re.compile(r"^(\d{4})$")
_UNIT = {1: timedelta(hours=1), 2: timedelta(minutes=1), 3: timedelta(seconds=1)}


def parse_iso_span(value: str) -> tuple[float, float]:
    """The span an ISO 8601 date or time names, at its own precision: (start, end), unix seconds.

    ``2026-11-29`` is that whole day (end = the next midnight), ``2026-11-29T14`` the hour,
    ``2026-11-29T14:20`` the minute, ``2026-11-29T14:20:05`` the second, ``2026-11`` the
    month, ``2026`` the year; a value with a fraction of a second is an instant (end ==
    start). ``end`` is exclusive. Values without an offset (and every date alone) are
    UTC. Raises ValueError with the accepted forms when the string does not parse.
    """
    text = value.strip()
    try:
        return _span(text)
    except (ValueError, IndexError, OverflowError) as exc:
        raise ValueError(
            f"{value!r} is not a date; use ISO 8601 such as 2026-11-29 (the whole day), 2026-11-29T14:20 "
            "or 2026-11-29T14:20:00Z (times without an offset are UTC)"
        ) from exc


def _span(text: str) -> tuple[float, float]:
    if m := _YEAR.match(text):
        first = datetime(int(m[1]), 1, 1, tzinfo=timezone.utc)
        return first.timestamp(), first.replace(year=first.year + 1).timestamp()
    if m := _MONTH.match(text):
        first = datetime(int(m[1]), int(m[2]), 1, tzinfo=timezone.utc)
        nxt = first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)
        return first.timestamp(), nxt.timestamp()
    dt = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    start = dt.timestamp()
    sep = max(text.find("T"), text.find("t"), text.find(" "))
    if sep < 0:
        return start, (dt + timedelta(days=1)).timestamp()  # a date alone: the whole day
    clock = _OFFSET.sub("", text[sep + 1:])
    if "." in clock or "," in clock:
        return start, start  # a fraction of a second: an instant
    digits = len(clock.replace(":", ""))
    parts = {2: 1, 4: 2, 6: 3}.get(digits, 3)
    return start, (dt + _UNIT[parts]).timestamp()
