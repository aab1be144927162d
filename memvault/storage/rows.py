"""Reading stored values back as the types memvault wrote, and leaving out rows that cannot be read.

SQLite keeps whatever it is given: a REAL column holds text if text is written into it,
a JSON column any text. A row edited by hand, written by a faulty program or damaged on
disk can therefore hold a value memvault never writes. Every store decodes its rows with
the functions here, which raise BadValue (naming the column and what is wrong) on a
value of the wrong type; ``readable`` then leaves that row out of the read and logs one
line (table, row id, what is wrong), so that one unreadable row never fails a read of a
whole scope.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class BadValue(ValueError):
    """A stored value is not of the type its column holds. ``column``: its name; ``problem``: what is wrong."""

    def __init__(self, column: str, problem: str) -> None:
        super().__init__(f"{column} {problem}")
        self.column = column
        self.problem = problem


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def text(value: Any, column: str) -> str:
    """A TEXT value."""
    if not isinstance(value, str):
        raise BadValue(column, f"is {_shown(value)}, not text")
    return value


def opt_text(value: Any, column: str) -> str | None:
    """A TEXT value or NULL."""
    return None if value is None else text(value, column)


def number(value: Any, column: str) -> float:
    """A finite REAL (an INTEGER is taken as well), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadValue(column, f"is {_shown(value)}, not a number")
    return float(value)


def opt_number(value: Any, column: str) -> float | None:
    """A finite REAL or NULL."""
    return None if value is None else number(value, column)


def integer(value: Any, column: str) -> int:
    """An INTEGER."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(column, f"is {_shown(value)}, not a whole number")
    return value


def opt_integer(value: Any, column: str) -> int | None:
    """An INTEGER or NULL."""
    return None if value is None else integer(value, column)


def choice(value: Any, column: str, allowed: Sequence[str]) -> str:
    """A TEXT value that is one of ``allowed``."""
    if value not in allowed or not isinstance(value, str):
        raise BadValue(column, f"is {_shown(value)}, not one of {', '.join(allowed)}")
    return value


def json_value(value: Any, column: str) -> Any:
    """A TEXT value holding JSON, decoded."""
    try:
        return json.loads(text(value, column))
    except json.JSONDecodeError as exc:
        raise BadValue(column, f"is not valid JSON ({exc})") from None


def json_strings(value: Any, column: str) -> list[str]:
    """A JSON array of strings."""
    got = json_value(value, column)
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        raise BadValue(column, f"is {_shown(got)}, not a JSON array of strings")
    return got


def json_object(value: Any, column: str) -> dict[str, Any]:
    """A JSON object."""
    got = json_value(value, column)
    if not isinstance(got, dict):
        raise BadValue(column, f"is {_shown(got)}, not a JSON object")
    return got


def decode_or_none(row: R, decode: Callable[[R], T], table: str, key: Callable[[R], Any]) -> T | None:
    """``decode(row)``, or None after logging one line when the row cannot be read."""
    try:
        return decode(row)
    except BadValue as exc:
        log.warning("unreadable row left out: table %s, %s: %s", table, key(row), exc)
        return None


def by_id(row: Sequence[Any]) -> str:
    """How a row whose first column is its id is named in a log line."""
    return f"id {row[0]!r}"


def readable(rows: Iterable[R], decode: Callable[[R], T], table: str, key: Callable[[R], Any]) -> list[T]:
    """``decode`` of every row that can be read, in order; each row that cannot is left out
    with one log line naming ``table``, the row (``key(row)``, e.g. ``by_id``) and what is wrong."""
    out = []
    for row in rows:
        got = decode_or_none(row, decode, table, key)
        if got is not None:
            out.append(got)
    return out
