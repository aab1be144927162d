"""Ranking policy: fuse retrieval channels, weigh relevance/importance/recency, evict.

Pure functions. Times are unix seconds (float); half-lives are in days.

Sources: weighted Reciprocal Rank Fusion after Cormack, Clarke & Büttcher, "Reciprocal
Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009
(score(d) = sum over channels of 1 / (k + rank), k = 60, rank 1-based); the weights
multiply each channel's term.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Sequence
from typing import TypeVar

from memvault.policy.units import SECONDS_PER_DAY

__all__ = [
    "rrf_fuse",
    "normalise_rrf",
    "recency",
    "final_score",
    "retention_score",
    "pick_evictions",
]

# The smallest positive normal float: recency never reaches 0, however old the access.
_MIN_RECENCY = sys.float_info.min

Id = TypeVar("Id", bound=Hashable)


def _check_weights(weights: Sequence[float], what: str) -> list[float]:
    out = []
    for w in weights:
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"{what} must be finite and >= 0, got {w}")
        out.append(w)
    return out


def _check_k(k: int) -> None:
    if k < 0:
        raise ValueError(f"RRF constant k must be >= 0, got {k}")


def rrf_fuse(channels: Sequence[Sequence[Id]], weights: Sequence[float], k: int = 60) -> dict[Id, float]:
    """Weighted Reciprocal Rank Fusion of ranked id lists.

    ``channels[c]`` is channel c's ids, best first (rank 1 = index 0); ``weights[c]`` its
    weight (>= 0). Returns ``{id: sum_c weights[c] / (k + rank_c(id))}`` over every id in
    any channel, ordered by score descending (ties keep first-seen order). An id listed
    twice in one channel counts once, at its best rank.

    Raises ValueError if ``len(channels) != len(weights)``, a weight is negative or not
    finite, or ``k < 0``.
    """
    if len(channels) != len(weights):
        raise ValueError(f"got {len(channels)} channels but {len(weights)} weights")
    ws = _check_weights(weights, "channel weights")
    _check_k(k)
    scores: dict[Id, float] = {}
    for ids, w in zip(channels, ws, strict=True):
        seen: set[Id] = set()
        for rank, id_ in enumerate(ids, start=1):
            if id_ in seen:
                continue
            seen.add(id_)
            scores[id_] = scores.get(id_, 0.0) + w / (k + rank)
    order = sorted(scores, key=lambda i: -scores[i])  # sorted() is stable
    return {i: scores[i] for i in order}


def normalise_rrf(score: float, weights: Sequence[float], k: int = 60) -> float:
    """RRF score divided by the best possible one (rank 1 in every channel), in [0, 1].

    Best possible = ``sum(weights) / (k + 1)``. Returns 0.0 when all weights are 0.
    Raises ValueError on negative/non-finite weights or ``k < 0``.
    """
    ws = _check_weights(weights, "channel weights")
    _check_k(k)
    best = sum(ws) / (k + 1)
    if best <= 0:
        return 0.0
    return min(1.0, max(0.0, score / best))


def recency(last_access: float, now: float, half_life_days: float) -> float:
    """Exponential freshness of a record: ``0.5 ** (age_days / half_life_days)``.

    ``age = now - last_access`` in seconds (a future ``last_access``, e.g. clock skew,
    counts as age 0 -> 1.0). Result in (0, 1]: 0.5 at one half-life, 0.25 at two; it
    never underflows to 0 (floored at the smallest positive normal float).
    Raises ValueError if ``half_life_days`` is not a positive finite number.
    """
    if not (math.isfinite(half_life_days) and half_life_days > 0):
        raise ValueError(f"half_life_days must be a positive finite number, got {half_life_days}")
    age_days = max(0.0, now - last_access) / SECONDS_PER_DAY
    return max(_MIN_RECENCY, 0.5 ** (age_days / half_life_days))


def final_score(
    relevance: float,
    importance: float,
    recency: float,
    w_rel: float,
    w_imp: float,
    w_rec: float,
) -> float:
    """Weighted mean ``(w_rel*relevance + w_imp*importance + w_rec*recency) / (w_rel+w_imp+w_rec)``.

    Inputs are expected in [0, 1] (normalised RRF, stored importance, :func:`recency`),
    so the result is in [0, 1] too. Weights are the ``weight_*`` settings; only their
    ratios matter. Raises ValueError if a weight is negative/non-finite or all are 0.
    """
    ws = _check_weights((w_rel, w_imp, w_rec), "score weights")
    total = sum(ws)
    if total <= 0:
        raise ValueError("at least one of the relevance/importance/recency weights must be > 0")
    return (ws[0] * relevance + ws[1] * importance + ws[2] * recency) / total


def retention_score(importance: float, last_access: float, now: float, half_life_days: float) -> float:
    """How much a record deserves to stay when a scope is over capacity.

    ``importance * recency(last_access, now, half_life_days)`` (importance in [0, 1]),
    so a record loses half its claim per half-life without access. Raises ValueError as
    :func:`recency` does.
    """
    return importance * recency(last_access, now, half_life_days)


def pick_evictions(
    records: Sequence[tuple[Id, float, float]],
    excess: int,
    now: float,
    half_life_days: float,
) -> list[Id]:
    """Ids of the ``excess`` records to evict, lowest retention score first.

    ``records`` are ``(id, importance, last_access)``. Ties (equal retention) go to the
    oldest ``last_access`` first, then to input order. ``excess <= 0`` -> ``[]``;
    ``excess >= len(records)`` -> every id. Raises ValueError as :func:`recency` does.
    """
    if excess <= 0:
        return []
    scored = [
        (retention_score(imp, last, now, half_life_days), last, idx, id_)
        for idx, (id_, imp, last) in enumerate(records)
    ]
    scored.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in scored[:excess]]
