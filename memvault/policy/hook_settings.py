"""Claude Code's hook settings (``settings.json``): adding memvault's hooks and taking exactly them out again.

Pure functions on the parsed JSON (no I/O). The format::

    {"hooks": {"SessionStart": [{"matcher": "startup|clear|compact",
                                 "hooks": [{"type": "command", "command": "...", "timeout": 10}]}],
               "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "..."}]}]}}

Each event holds a list of matcher groups, each group a list of hooks. memvault's hooks
are recognised by their command (:func:`is_memvault_command`: ``memvault hook
session-start`` / ``memvault hook prompt-submit``, with any path to the executable or as
``python -m memvault``), so an entry installed from another virtual environment is
found too. Everything else in the file is kept as it is, in its order.
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = ["MalformedSettings", "is_memvault_command", "with_hooks", "without_hooks", "HOOK_NAMES"]

HOOK_NAMES = ("session-start", "prompt-submit")
"""The ``memvault hook <name>`` sub-commands a settings file may run."""

_OURS = re.compile(r"memvault(?:\.exe)?['\"]?\s+hook\s+(?:" + "|".join(HOOK_NAMES) + r")(?:\s|$)")


class MalformedSettings(ValueError):
    """The settings do not have the shape Claude Code reads; the message says where and what was found."""


def is_memvault_command(command: object) -> bool:
    """True for a command string that runs ``memvault hook session-start`` or ``... prompt-submit``."""
    return isinstance(command, str) and _OURS.search(command) is not None


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _check(settings: object) -> dict[str, Any]:
    """``settings`` as a dict after checking the parts this module reads; raises MalformedSettings."""
    if not isinstance(settings, dict):
        raise MalformedSettings(f"the file holds {_kind(settings)}, not a JSON object")
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise MalformedSettings(f'"hooks" is {_kind(hooks)}, not an object of events')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise MalformedSettings(f'"hooks"."{event}" is {_kind(groups)}, not a list of matcher groups')
        for i, group in enumerate(groups):
            if not isinstance(group, dict):
                raise MalformedSettings(f'"hooks"."{event}"[{i}] is {_kind(group)}, not an object')
            inner = group.get("hooks", [])
            if not isinstance(inner, list) or not all(isinstance(h, dict) for h in inner):
                raise MalformedSettings(f'"hooks"."{event}"[{i}]."hooks" is not a list of objects')
    return settings


def _strip(hooks: dict[str, Any], event: str) -> None:
    """Take memvault's hooks out of ``hooks[event]``, and the groups and the event they leave empty."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return
    kept_groups = []
    for group in groups:
        inner = group.get("hooks", [])
        kept = [h for h in inner if not is_memvault_command(h.get("command"))]
        if len(kept) == len(inner):
            kept_groups.append(group)
        elif kept:
            kept_groups.append({**group, "hooks": kept})
    if kept_groups:
        hooks[event] = kept_groups
    elif len(kept_groups) != len(groups):  # emptied by us
        del hooks[event]


def with_hooks(settings: object, groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``settings`` with memvault's ``groups`` (event -> one matcher group) installed.

    An event that already holds exactly that group of memvault's is left as it is (so
    installing twice changes nothing); otherwise memvault's hooks of that event are
    replaced by the group, appended after the other groups. Other events and hooks are
    kept. Returns a new dict; raises MalformedSettings when ``settings`` is not shaped as
    Claude Code's settings.
    """
    out = copy.deepcopy(_check(settings))
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        current = [g for g in hooks.get(event, []) if any(is_memvault_command(h.get("command"))
                                                          for h in g.get("hooks", []))]
        if current == [group]:
            continue
        _strip(hooks, event)
        hooks.setdefault(event, []).append(copy.deepcopy(group))
    return out


def without_hooks(settings: object) -> dict[str, Any]:
    """``settings`` without any memvault hook, and without the groups, events and ``"hooks"``
    object that only held memvault's. Returns a new dict; raises MalformedSettings as :func:`with_hooks`."""
    out = copy.deepcopy(_check(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    had = bool(hooks)
    for event in list(hooks):
        _strip(hooks, event)
    if had and not hooks:
        del out["hooks"]
    return out
