"""Pure helpers of task state: its stored JSON form, the current step read from a state,
and the episode text a finished task leaves behind. No I/O.
"""

from __future__ import annotations

import json
from typing import Any

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
