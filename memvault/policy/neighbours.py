"""Conversation neighbours in recall: what was written beside a strong hit ranks near it.

A memory is often half of an exchange: "I loved *Becoming Nicole* by Amy Ellis Nutt"
holds the words of the question "What did Caroline take away from Becoming Nicole?",
and the memory written right after it ("It taught me self-acceptance ...") holds the
answer without them. Passage retrieval has long propagated a hit's score to the text
around it for this reason. Here, each of the best ``NEIGHBOUR_SOURCES`` fused hits
lifts the memory written just before it and the one just after it (same user, project
and writing agent, created within ``NEIGHBOUR_WINDOW_S`` of each other: one
conversation) to at least ``factor`` x its own score. A lift never puts a neighbour
above the hit that lifted it (``factor`` < 1), and a memory's own evidence is kept when
it is higher. Calibrated relevance is not changed: it stays the memory's own.

Pure functions; scores are fused scores in [0, 1]; times are unix seconds.
Measured in docs/benchmarks.md ("Conversation neighbours").
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["NEIGHBOUR_SOURCES", "NEIGHBOUR_WINDOW_S", "same_conversation", "conversation_neighbours",
           "neighbour_lift"]

NEIGHBOUR_SOURCES = 10
"""How many of the best fused hits lift their neighbours."""

NEIGHBOUR_WINDOW_S = 30 * 60.0
"""Two memories written one after the other belong to one conversation when their
creation times are at most this far apart, seconds."""

Id = TypeVar("Id", bound=Hashable)


def same_conversation(created_a: float, created_b: float, window_s: float = NEIGHBOUR_WINDOW_S) -> bool:
    """Whether two memories written one after the other (creation times in unix seconds) are
    close enough in time to be one conversation."""
    return abs(created_a - created_b) <= window_s


def conversation_neighbours(beside: Mapping[Id, tuple[Id | None, Id | None]], created: Mapping[Id, float],
                            window_s: float = NEIGHBOUR_WINDOW_S) -> dict[Id, list[Id]]:
    """The neighbours ``neighbour_lift`` may use: for each memory of ``beside`` (memory ->
    (written just before, written just after), as the fact store gives them), those of the
    two that are candidates (keys of ``created``: creation time, unix seconds) and
    ``same_conversation`` with it. A memory missing from ``created`` has none."""
    out: dict[Id, list[Id]] = {}
    for hit, pair in beside.items():
        if hit in created:
            out[hit] = [n for n in pair if n is not None and n in created
                        and same_conversation(created[n], created[hit], window_s)]
    return out


def neighbour_lift(scores: Mapping[Id, float], beside: Mapping[Id, Iterable[Id]], factor: float,
                   sources: int = NEIGHBOUR_SOURCES) -> dict[Id, tuple[float, Id | None]]:
    """Each candidate's score after its neighbours' lift, and which hit lifted it.

    ``scores``: fused score per candidate (any order); ``beside``: for a candidate, the
    memories written next to it in the same conversation (the caller checks that);
    ``factor`` in [0, 1): 0 turns the lift off. The best ``sources`` candidates by score lift
    each neighbour that is itself a candidate to ``max(own score, factor x hit's score)``.
    Returns ``{id: (score, lifting hit id or None when its own score stands)}`` for every
    candidate. Raises ValueError if ``factor`` is outside [0, 1) or ``sources`` < 0.
    """
    if not 0.0 <= factor < 1.0:
        raise ValueError(f"neighbour lift factor must be in [0, 1), got {factor}")
    if sources < 0:
        raise ValueError(f"sources must be >= 0, got {sources}")
    out: dict[Id, tuple[float, Id | None]] = {i: (s, None) for i, s in scores.items()}
    if factor == 0.0 or sources == 0:
        return out
    for hit in sorted(scores, key=lambda i: -scores[i])[:sources]:
        lifted = factor * scores[hit]
        for n in beside.get(hit, ()):
            if n != hit and n in out and lifted > out[n][0]:
                out[n] = (lifted, hit)
    return out
