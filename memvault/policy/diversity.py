"""Diversity of a result list: Maximal Marginal Relevance (Carbonell & Goldstein, "The Use
of MMR, Diversity-Based Reranking for Reordering Documents and Producing Summaries",
SIGIR 1998).

Pure functions. A memory store holds restatements ("the user prefers pnpm", "user likes
pnpm over npm") and several turns of one exchange on one topic; without a diversity term
they fill the top k with one fact while a second fact the question needs (who, and when)
sits just below. MMR takes the next item by ``lam * score - (1 - lam) * (its highest
similarity to an item already taken)``.

Similarity here is the Jaccard overlap of keyword term sets
(``memvault.policy.keywords.keyword_terms``): near-copies share most of their terms,
while two memories on one topic in different words share few, so only repetition is held
back. (Measured on LoCoMo conv-26 + conv-30, 231 questions: turn R@5 / R@10 0.547 / 0.659
-> 0.563 / 0.672 at ``lam`` 0.8; see docs/benchmarks.md.)
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["MMR_LAMBDA", "MMR_DEPTH", "jaccard", "mmr_order"]

Id = TypeVar("Id", bound=Hashable)

MMR_LAMBDA = 0.8
"""Share of the score in MMR's trade-off (the rest: novelty). 0.7-0.8 measured best."""

MMR_DEPTH = 30
"""How many of the best-ranked items MMR reorders; the rest keep their order after them."""


def jaccard(a: Collection[str], b: Collection[str]) -> float:
    """|a ∩ b| / |a ∪ b| of two term sets, in [0, 1]; two empty sets -> 0.0."""
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def mmr_order(ranked: Sequence[tuple[Id, float]], terms: Mapping[Id, Collection[str]], *,
              lam: float = MMR_LAMBDA, depth: int = MMR_DEPTH) -> list[Id]:
    """Ids of ``ranked`` (``(id, score)`` best first, scores in [0, 1]) reordered by MMR.

    The first ``depth`` items are taken greedily by ``lam * score - (1 - lam) * max
    similarity`` (:func:`jaccard` of ``terms[id]``; an id missing from ``terms`` has no
    terms) to those already taken; the first item is always the best-scored one; ties keep
    the input order. The items after ``depth`` follow in their order. ``lam`` = 1 keeps
    the input order. Raises ValueError if ``lam`` is not in [0, 1] or ``depth`` < 0.
    """
    if not (0.0 <= lam <= 1.0):
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    head, tail = list(ranked[:depth]), [i for i, _ in ranked[depth:]]
    sets = {i: set(terms.get(i, ())) for i, _ in head}
    closest = [0.0] * len(head)  # each remaining item's highest similarity to a taken one
    left = list(range(len(head)))
    out: list[Id] = []
    while left:
        best = max(left, key=lambda j: (lam * head[j][1] - (1.0 - lam) * closest[j], -j))
        left.remove(best)
        taken = head[best][0]
        out.append(taken)
        for j in left:
            closest[j] = max(closest[j], jaccard(sets[head[j][0]], sets[taken]))
    return out + tail
