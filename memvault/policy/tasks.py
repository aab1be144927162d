"""Pure helpers of task state: its stored JSON form, the bounds it must keep (size and
nesting, read without walking more than the bound), the current step read from a state,
and the episode text a finished task leaves behind. No I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from memvault.policy.text import cut

STEP_CHARS = 200
APPROACH_CHARS = 800

# State members read as "the current step", in order of preference.
_STEP_KEYS = ("current_step", "step", "next_step", "now", "doing")
_STEP_LIST_KEYS = ("steps", "plan")
# State members read as "the approach" of a finished task, in order of preference.
_APPROACH_KEYS = ("approach", "plan", "decisions", "notes", "done_steps", "done", "steps")


def state_json(state: dict[str, Any] | list[Any]) -> str:
    """The stored form of a state: compact JSON, UTF-8 kept (its byte length is what the limit counts).

    Also how a list inside a state is shown. Raises ValueError / TypeError on a value JSON cannot hold.
    """
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


MAX_STATE_DEPTH = 64
"""Deepest nesting of objects and arrays a task state may have (the state object itself is 1).
Deeper JSON is refused: some clients' parsers cannot read it back."""


@dataclass(frozen=True)
class JsonOverflow:
    """Why a JSON value is out of bounds: ``what`` is "size" (``at_least`` bytes counted, more
    than the limit) or "depth" (``at_least`` levels, reached at ``where``, a path such as
    ``$.plan[0].sub``)."""

    what: Literal["size", "depth"]
    at_least: int
    where: str = "$"


def json_overflow(value: Any, *, max_bytes: int, max_depth: int = MAX_STATE_DEPTH) -> JsonOverflow | None:
    """Whether ``value`` (JSON as Python) is over ``max_bytes`` in its stored form (compact UTF-8,
    ``state_json``) or nested deeper than ``max_depth``; None when within both.

    The size counted is a lower bound of the stored size (a character counts one byte, a
    float one digit), so a value found over is over; one found within still gets its exact
    size measured. The walk is iterative and stops as soon as a bound is passed: its cost
    is that of ``max_bytes``, however big ``value`` is (every item counts at least a byte).
    """
    size = 0
    stack: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return JsonOverflow("depth", depth, where[:120])
            size += 2 + max(0, len(item) - 1)  # brackets and commas
            if size > max_bytes:
                return JsonOverflow("size", size)
            if isinstance(item, dict):
                for k, v in item.items():
                    size += len(str(k)) + 3  # quotes and colon
                    if size > max_bytes:
                        return JsonOverflow("size", size)
                    stack.append((v, depth + 1, f"{where}.{k}" if len(where) < 120 else where))
            else:
                for i, v in enumerate(item):
                    stack.append((v, depth + 1, f"{where}[{i}]" if len(where) < 120 else where))
        elif isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, bool) or item is None:
            size += 4
        elif isinstance(item, int):
            size += max(1, item.bit_length() * 3 // 10)  # decimal digits, at least
        else:
            size += 1
        if size > max_bytes:
            return JsonOverflow("size", size)
    return None


def _short(value: Any, limit: int) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        text = str(value.get("title") or value.get("name") or value.get("text") or state_json(value))
    else:
        text = state_json(value) if isinstance(value, list) else str(value)
    return cut(" ".join(text.split()), limit)[0]


def task_step(state: dict[str, Any]) -> str | None:
    """The current step of a task as one short line, read from its state; None if not found.

    Looks at ``current_step`` / ``step`` / ``next_step`` / ``now`` / ``doing``; a number
    n with a ``steps`` (or ``plan``) list gives "step n of m: <steps[n-1]>" (1-based).
    """
    for key in _STEP_KEYS:
        if key not in state or state[key] is None:
            continue
        value = state[key]
        if isinstance(value, int) and not isinstance(value, bool):
            for lk in _STEP_LIST_KEYS:
                steps = state.get(lk)
                if isinstance(steps, list) and 1 <= value <= len(steps):
                    return _short(f"step {value} of {len(steps)}: {_short(steps[value - 1], STEP_CHARS)}", STEP_CHARS)
            return f"step {value}"
        return _short(value, STEP_CHARS)
    return None


def episode_text(title: str, state: dict[str, Any], outcome: str) -> str:
    """The episode memory of a finished task: "Task: <title>. Approach: <...>. Outcome: <outcome>."

    The approach comes from the state's ``approach`` / ``plan`` / ``decisions`` /
    ``notes`` / ``done_steps`` / ``done`` / ``steps`` (first present), cut to APPROACH_CHARS.
    """
    approach = None
    for key in _APPROACH_KEYS:
        value = state.get(key)
        if value in (None, "", [], {}):
            continue
        if isinstance(value, list):
            value = "; ".join(_short(x, APPROACH_CHARS) for x in value)
        approach = _short(value, APPROACH_CHARS)
        break
    parts = [f"Task: {title.strip().rstrip('.')}."]
    if approach:
        parts.append(f"Approach: {approach.rstrip('.')}.")
    parts.append(f"Outcome: {outcome.strip().rstrip('.')}.")
    return " ".join(parts)
