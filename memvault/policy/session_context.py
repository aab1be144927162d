"""The block a client hook puts into a new session: preferences, open tasks, memories, bounded in tokens.

Pure functions (no I/O). ``memvault context`` reads the store and hands the pieces here;
:func:`render_session_context` lays them out as short Markdown for an assistant's
context, at most ``max_tokens`` tokens by :func:`estimate_tokens`.

Order (what is cut first when the budget is tight: the last section): preferences
(keyed memories; a project value wins over the global one), open tasks with their
current step, this project's memories, then the user's global memories. Each section
is fitted with :func:`memvault.policy.budget.cut_to_budget`: items stay in the order
given (best first), each one cut to at most ``PER_ITEM_CHARS``, and a section stops at
the first item that no longer fits. Each section has a share of what the ones before
it left (``*_SHARE``), so that a long list of one kind cannot crowd out the others. With nothing to show the block is ``""`` (a client
gets no empty header).

Tokens are estimated, not counted with a tokenizer: about four ASCII characters per
token and one token per other character (CJK, accented letters, symbols). That is
generous for ASCII text and for most scripts, so a block fitted to the estimate stays
within the budget in practice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memvault.policy.budget import MIN_ROOM_CHARS, cut_to_budget

__all__ = ["ContextMemory", "ContextTask", "ContextPreference", "SessionContext", "estimate_tokens",
           "render_session_context", "PER_ITEM_CHARS", "ASCII_CHARS_PER_TOKEN"]

ASCII_CHARS_PER_TOKEN = 4
"""ASCII characters per token in :func:`estimate_tokens`; every other character counts as one token."""
PER_ITEM_CHARS = 400
"""Longest text of one item (a memory, a preference value, a task title with its step), characters."""
PREFERENCES_SHARE = 0.3
"""Preferences take at most this share of the block; what they leave goes to the next sections."""
TASKS_SHARE = 0.3
"""Open tasks take at most this share of what the preferences left."""
PROJECT_SHARE = 0.65
"""This project's memories take at most this share of what is left, when there are global ones to show too."""
_MIN_TOKENS = 60
_TRIES = 6


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ceil(ASCII characters / 4) + one per other character."""
    ascii_chars = sum(1 for ch in text if ch < "\x80")
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + (len(text) - ascii_chars)


@dataclass(frozen=True)
class ContextPreference:
    """A keyed memory: ``key`` (e.g. ``pref.editor``), ``value``; ``scope`` is ``project`` or ``global``."""

    key: str
    value: str
    scope: str


@dataclass(frozen=True)
class ContextTask:
    """An open task: id, title, status (``active``/``blocked``), current step (or None), last update (YYYY-MM-DD)."""

    task_id: str
    title: str
    status: str
    step: str | None
    updated: str


@dataclass(frozen=True)
class ContextMemory:
    """A memory: its content, kind and the day it was last updated (YYYY-MM-DD)."""

    content: str
    kind: str
    updated: str


@dataclass
class SessionContext:
    """What goes into the block. ``project_name``: readable project name, ``""`` for the global scope."""

    project_name: str
    preferences: Sequence[ContextPreference] = field(default_factory=list)
    tasks: Sequence[ContextTask] = field(default_factory=list)
    project_memories: Sequence[ContextMemory] = field(default_factory=list)
    global_memories: Sequence[ContextMemory] = field(default_factory=list)

    def empty(self) -> bool:
        """True when there is nothing to show."""
        return not (self.preferences or self.tasks or self.project_memories or self.global_memories)


def _pref_text(p: ContextPreference) -> str:
    return f"{p.key}: {p.value}"


def _task_text(t: ContextTask) -> str:
    step = f" — now: {t.step}" if t.step else ""
    return f"`{t.task_id}` {t.title} [{t.status}, {t.updated}]{step}"


def _memory_text(m: ContextMemory) -> str:
    return f"{m.content} ({m.kind}, {m.updated})"


def _section(title: str, items: Sequence[object], text_of: Callable[..., str], room: int, share: float,
             out: list[str]) -> int:
    """Append the section's header and the items that fit ``share`` of ``room`` characters;
    returns the room left (what the section did not use goes to the next ones)."""
    header = f"\n## {title}\n"
    mine = int(room * share)
    if not items or mine - len(header) < MIN_ROOM_CHARS:
        return room
    kept, _ = cut_to_budget(items, lambda item: "- " + " ".join(text_of(item).split()), per_item=PER_ITEM_CHARS,
                            total=mine - len(header))
    if not kept:
        return room
    out.append(header + "\n".join(f.text for f in kept) + "\n")
    return room - len(out[-1])


def _render(ctx: SessionContext, chars: int) -> str:
    where = f"project {ctx.project_name}" if ctx.project_name else "no project: global memories"
    head = (f"# memvault: remembered from earlier sessions ({where})\n"
            "Kept by the memvault MCP server. Call `recall` for more, `remember` to keep something new.\n")
    out = [head]
    room = chars - len(head)
    room = _section("Preferences", ctx.preferences, _pref_text, room, PREFERENCES_SHARE, out)
    room = _section("Open tasks", ctx.tasks, _task_text, room, TASKS_SHARE, out)
    share = PROJECT_SHARE if ctx.global_memories else 1.0
    room = _section("This project", ctx.project_memories, _memory_text, room, share, out)
    _section("Global" if ctx.project_name else "Memories", ctx.global_memories, _memory_text, room, 1.0, out)
    return "".join(out) if len(out) > 1 else ""


def render_session_context(ctx: SessionContext, max_tokens: int) -> str:
    """The block for ``ctx`` (module docstring), at most ``max_tokens`` estimated tokens.

    Returns ``""`` when ``ctx`` holds nothing or the budget leaves room for no item.
    Raises ValueError if ``max_tokens`` is under 60 (no header and item would fit).
    """
    if max_tokens < _MIN_TOKENS:
        raise ValueError(f"max_tokens must be at least {_MIN_TOKENS}, got {max_tokens}")
    if ctx.empty():
        return ""
    chars = max_tokens * ASCII_CHARS_PER_TOKEN
    for _ in range(_TRIES):  # shrink the character budget until the estimate fits
        text = _render(ctx, chars)
        tokens = estimate_tokens(text)
        if tokens <= max_tokens:
            return text
        chars = int(chars * max_tokens / tokens * 0.95)
    text = _render(ctx, max_tokens)  # one character per token: always within the estimate
    return text if estimate_tokens(text) <= max_tokens else ""
