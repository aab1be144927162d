"""Reply budgets: how many items of a ranked list fit a reply, and how much of each.

Pure functions. Sizes are in characters (``str`` code points), the unit of every
``*_chars`` setting. Two rules, one per kind of item:

* :func:`cut_to_budget` for text that may be cut (memory contents, document chunks):
  each text is cut to the smaller of a per-item budget and what is left of the total.
* :func:`whole_within_budget` for items that must stay whole (JSON task states).

Both keep the order given (best first) and stop at the first item that does not fit,
so a reply never skips a better item to show a worse one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from memvault.policy.text import cut

__all__ = ["MIN_ROOM_CHARS", "Fitted", "cut_to_budget", "whole_within_budget"]

T = TypeVar("T")

CONTENT_BUDGET_CHARS = 2_000
"""Per-memory content cut in recall, history and consolidate replies, characters: about 500
tokens, longer than nearly every memory a client writes."""
REPLY_BUDGET_CHARS = 16_000
"""Total content characters in one reply (recall, search_docs, history, task versions): about
4,000 tokens, what a client can take into its context without crowding it."""
MIN_ROOM_CHARS = 80
"""Characters an item gets at least; with less left of the total, the reply stops there
(a shorter snippet, mostly the truncation marker, tells the reader nothing)."""


@dataclass(frozen=True)
class Fitted(Generic[T]):
    """One kept item: ``text`` is its text as it fits the reply; ``cut`` says it was shortened."""

    item: T
    text: str
    cut: bool


def cut_to_budget(items: Iterable[T], text_of: Callable[[T], str], *, per_item: int, total: int,
                  min_room: int = MIN_ROOM_CHARS) -> tuple[list[Fitted[T]], bool]:
    """Fit the texts of ``items`` (in order) into ``total`` characters, each at most ``per_item``.

    Each text is cut with :func:`memvault.policy.text.cut` (marker included) to
    ``min(per_item, total - used)``, where ``used`` is the length of the texts kept
    before it. Before an item whose room would be under ``min_room`` the list stops.
    Returns ``(kept, truncated)``: ``truncated`` is True when a text was cut or items
    were left out; the kept texts' lengths sum to at most ``total``.

    Raises ValueError if ``min_room < 1``, ``per_item < min_room`` (no item could ever
    fit) or ``total < 0``.
    """
    if min_room < 1 or per_item < min_room or total < 0:
        raise ValueError(f"need 1 <= min_room <= per_item and total >= 0; got min_room={min_room}, "
                         f"per_item={per_item}, total={total}")
    kept: list[Fitted[T]] = []
    used, truncated = 0, False
    for item in items:
        room = min(per_item, total - used)
        if room < min_room:
            truncated = True
            break
        text, was_cut = cut(text_of(item), room)
        truncated |= was_cut
        used += len(text)
        kept.append(Fitted(item, text, was_cut))
    return kept, truncated


def whole_within_budget(items: Iterable[T], size_of: Callable[[T], int], *, total: int) -> tuple[list[T], bool]:
    """The leading ``items`` whose sizes (``size_of``, characters) sum to at most ``total``.

    Items are never cut: the list stops at the first item that does not fit whole.
    Returns ``(kept, truncated)``; ``truncated`` is True when items were left out.
    Raises ValueError if ``total < 0``.
    """
    if total < 0:
        raise ValueError(f"total must be 0 or more characters, got {total}")
    kept: list[T] = []
    used = 0
    for item in items:
        size = size_of(item)
        if used + size > total:
            return kept, True
        used += size
        kept.append(item)
    return kept, False
