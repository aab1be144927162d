"""Conversation neighbours in recall: what was written beside a strong hit ranks near it.

A memory is often half of an exchange: "I loved *Becoming Nicole* by Amy Ellis Nutt"
holds the words of the question "What did Caroline take away from Becoming Nicole?",
and the memory written right after it ("It taught me self-acceptance ...") holds the
answer without them. Passage retrieval has long propagated a hit's score to the text
around it for this reason. Here, each of the best ``NEIGHBOUR_SOURCES`` fused hits
lifts the memories written up to ``NEIGHBOUR_REACH`` places before and after it (same
user, project and writing agent, each created within ``NEIGHBOUR_WINDOW_S`` of the hit:
one conversation) to at least ``factor ** distance`` x its own score. A lift never puts
a neighbour above the hit that lifted it (``factor`` < 1), and a memory's own evidence
is kept when it is higher. Calibrated relevance is not changed: it stays the memory's own.

Pure functions; scores are fused scores in [0, 1]; times are unix seconds.
Measured in docs/benchmarks.md ("Conversation neighbours").
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["NEIGHBOUR_SOURCES", "NEIGHBOUR_REACH", "NEIGHBOUR_WINDOW_S", "same_conversation",
           "conversation_neighbours", "neighbour_lift"]

NEIGHBOUR_SOURCES = 10
"""How many of the best fused hits lift their neighbours."""

NEIGHBOUR_REACH = 2
"""How many places away, on each side of a hit, a memory is still its neighbour."""

NEIGHBOUR_WINDOW_S = 30 * 60.0
"""A memory written near a hit belongs to the hit's conversation when their creation
times are at most this far apart, seconds."""

Id = TypeVar("Id", bound=Hashable)


def same_conversation(created_a: float, created_b: float, window_s: float = NEIGHBOUR_WINDOW_S) -> bool:
    """Whether two memories written close together (creation times in unix seconds) are close
    enough in time to be one conversation."""
    return abs(created_a - created_b) <= window_s


def conversation_neighbours(beside: Mapping[Id, tuple[Id | None, Id | None]], created: Mapping[Id, float], *,
                            reach: int = NEIGHBOUR_REACH,
                            window_s: float = NEIGHBOUR_WINDOW_S) -> dict[Id, list[tuple[Id, int]]]:
    """The neighbours ``neighbour_lift`` may use, with their distance (1 = written right next
    to it).

    ``beside``: memory -> (written just before, written just after), as the fact store gives
    them, for the hits and for the memories on the way out to ``reach`` places;
    ``created``: creation time (unix seconds) of each candidate. For each candidate of
    ``beside``, walking out on each side up to ``reach`` places: the memories met that are
    candidates and ``same_conversation`` with it. The walk passes through memories that are
    not candidates and stops where ``beside`` does not go on.
    """
    out: dict[Id, list[tuple[Id, int]]] = {}
    for hit in beside:
        if hit not in created:
            continue
        found: list[tuple[Id, int]] = []
        for side in (0, 1):
            cur: Id | None = hit
            for d in range(1, reach + 1):
                pair = beside.get(cur) if cur is not None else None
                cur = pair[side] if pair is not None else None
                if cur is None or cur == hit:
                    break
                if cur in created and same_conversation(created[cur], created[hit], window_s):
                    found.append((cur, d))
        out[hit] = found
    return out


def neighbour_lift(scores: Mapping[Id, float], beside: Mapping[Id, Iterable[tuple[Id, int]]], factor: float,
                   sources: int = NEIGHBOUR_SOURCES) -> dict[Id, tuple[float, Id | None]]:
    """Each candidate's score after its neighbours' lift, and which hit lifted it.

    ``scores``: fused score per candidate (any order); ``beside``: for a candidate, the
    memories written near it in the same conversation with their distance (>= 1; from
    ``conversation_neighbours``); ``factor`` in [0, 1): 0 turns the lift off. The best
    ``sources`` candidates by score lift each neighbour that is itself a candidate to
    ``max(own score, factor ** distance x hit's score)``. Returns ``{id: (score, lifting hit
    id or None when its own score stands)}`` for every candidate. Raises ValueError if
    ``factor`` is outside [0, 1), ``sources`` < 0 or a distance < 1.
    """
    if not 0.0 <= factor < 1.0:
        raise ValueError(f"neighbour lift factor must be in [0, 1), got {factor}")
    if sources < 0:
        raise ValueError(f"sources must be >= 0, got {sources}")
    out: dict[Id, tuple[float, Id | None]] = {i: (s, None) for i, s in scores.items()}
    if factor == 0.0 or sources == 0:
        return out
    for hit in sorted(scores, key=lambda i: -scores[i])[:sources]:
        for n, distance in beside.get(hit, ()):
            if distance < 1:
                raise ValueError(f"a neighbour's distance is at least 1, got {distance}")
            lifted = factor ** distance * scores[hit]
            if n != hit and n in out and lifted > out[n][0]:
                out[n] = (lifted, hit)
    return out
