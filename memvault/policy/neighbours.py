"""Conversation neighbours in recall: what was written beside a strong hit ranks near it.

A memory is often half of an exchange: "I loved *Becoming Nicole* by Amy Ellis Nutt"
holds the words of the question "What did Caroline take away from Becoming Nicole?",
and the memory written right after it ("It taught me self-acceptance ...") holds the
answer without them. Passage retrieval has long propagated a hit's score to the text
around it for this reason. Here, each of the best ``NEIGHBOUR_SOURCES`` fused hits
lifts the short memories (``NEIGHBOUR_MAX_CHARS``) written up to ``NEIGHBOUR_REACH``
places before and after it (same user, project and writing agent, each created within
``NEIGHBOUR_WINDOW_S`` of the hit: one conversation) to at least ``factor ** distance``
x its own score, and a memory's own evidence is kept when it is higher. Then, on the
final scores (which add importance and recency), ``cap_lifted`` keeps a lifted memory
below the hit that lifted it, and below every candidate that is a likely answer on its
own when it is not one: a neighbour is context, and never displaces a memory that
answers the query by itself (assistants often store several unrelated facts within
minutes; the memory written next to the best hit is then unrelated to the query).
Calibrated relevance is not changed: it stays the memory's own.

Pure functions; scores are fused scores in [0, 1]; times are unix seconds.
Measured in docs/benchmarks.md ("Conversation neighbours").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["NEIGHBOUR_SOURCES", "NEIGHBOUR_REACH", "NEIGHBOUR_MAX_CHARS", "NEIGHBOUR_WINDOW_S", "same_conversation",
           "conversation_neighbours", "neighbour_lift", "cap_lifted", "final_scores_with_neighbours"]

_BELOW = 1e-9  # a capped memory goes 1-2 x this under the score it must not pass (less for a higher lift)

NEIGHBOUR_SOURCES = 10
"""How many of the best fused hits lift their neighbours."""

NEIGHBOUR_REACH = 2
"""How many places away, on each side of a hit, a memory is still its neighbour."""

NEIGHBOUR_MAX_CHARS = 150
"""Only memories of at most this many characters are lifted: a short memory (a chat line, a
one-line reply) is the kind whose meaning depends on what was said around it; a longer one
carries its own context, and lifting it crowds the top with one conversation."""

NEIGHBOUR_WINDOW_S = 30 * 60.0
"""A memory written near a hit belongs to the hit's conversation when their creation
times are at most this far apart, seconds."""

NEIGHBOUR_LIFT = 0.7
"""Share of a hit's score a conversation neighbour ranks at least (squared two places away; 0:
off): measured on LoCoMo, LongMemEval and the bilingual probe (docs/benchmarks.md,
"Conversation neighbours")."""

Id = TypeVar("Id", bound=Hashable)


def same_conversation(created_a: float, created_b: float, window_s: float = NEIGHBOUR_WINDOW_S) -> bool:
    """Whether two memories written close together (creation times in unix seconds) are close
    enough in time to be one conversation."""
    return abs(created_a - created_b) <= window_s


def conversation_neighbours(beside: Mapping[Id, tuple[Id | None, Id | None]], created: Mapping[Id, float],
                            lengths: Mapping[Id, int], *, reach: int = NEIGHBOUR_REACH,
                            window_s: float = NEIGHBOUR_WINDOW_S,
                            max_chars: int = NEIGHBOUR_MAX_CHARS) -> dict[Id, list[tuple[Id, int]]]:
    """The neighbours ``neighbour_lift`` may use, with their distance (1 = written right next
    to it).

    ``beside``: memory -> (written just before, written just after), as the fact store gives
    them, for the hits and for the memories on the way out to ``reach`` places;
    ``created``: creation time (unix seconds) of each candidate; ``lengths``: its text's length
    in characters. For each candidate of ``beside``, walking out on each side up to ``reach``
    places: the memories met that are candidates, ``same_conversation`` with it and at most
    ``max_chars`` long. The walk passes through the others and stops where ``beside`` does
    not go on.
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
                if (cur in created and same_conversation(created[cur], created[hit], window_s)
                        and lengths.get(cur, max_chars + 1) <= max_chars):
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


def cap_lifted(final: Mapping[Id, float], own: Mapping[Id, float], lifted_by: Mapping[Id, Id | None],
               relevance: Mapping[Id, float], likely: float) -> dict[Id, float]:
    """Final scores with the caps on lifted memories.

    ``final``: each candidate's final score with its lifted fused score; ``own``: its final
    score without the lift; ``lifted_by``: the hit that lifted it (None: not lifted), as
    ``neighbour_lift`` gives it; ``relevance``: each candidate's own calibrated relevance in
    [0, 1]; ``likely``: the relevance from which a memory is a likely answer on its own.
    A lifted memory's score is at most just under its lifting hit's own final score and,
    unless it is a likely answer itself, just under the lowest own final score of the likely
    answers it would otherwise pass (memories capped under one score keep the order of their
    lifts); it never falls below its own final score. Returns ``{id: score}`` for every
    candidate of ``final``.
    """
    likely_scores = sorted(own[i] for i in final if relevance.get(i, 0.0) >= likely)
    out = dict(final)
    for i, hit in lifted_by.items():
        if hit is None or i not in out:
            continue
        lifted = out[i]
        under = _BELOW * (2.0 - min(max(lifted, 0.0), 1.0))  # memories capped under one score keep their lifts' order
        score = min(lifted, own[hit] - under)
        if relevance.get(i, 0.0) < likely:
            passed = [s for s in likely_scores if s < score]
            if passed:
                score = min(score, passed[0] - under)
        out[i] = max(own[i], score)
    return out


def final_scores_with_neighbours(fused: Mapping[Id, float], near: Mapping[Id, Iterable[tuple[Id, int]]],
                                 factor: float, final: Callable[[Id, float], float],
                                 relevance: Mapping[Id, float], likely: float) -> dict[Id, tuple[float, Id | None]]:
    """Each candidate's final score with the neighbour lift and its caps, and the hit it ranks
    as context of (None when its own score stands).

    ``fused``: fused score per candidate; ``near``: ``conversation_neighbours``; ``factor``:
    the lift (``neighbour_lift``); ``final(id, fused score)``: the caller's final score
    (relevance, importance, recency, ...); ``relevance`` and ``likely``: as ``cap_lifted``.
    """
    lifted = neighbour_lift(fused, near, factor)
    own = {i: final(i, s) for i, s in fused.items()}
    by = {i: hit for i, (_, hit) in lifted.items()}
    capped = cap_lifted({i: final(i, lifted[i][0]) if by[i] is not None else own[i] for i in fused}, own, by,
                        relevance, likely)
    return {i: (capped[i], by[i] if capped[i] > own[i] else None) for i in fused}
