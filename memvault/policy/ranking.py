"""Ranking policy: weigh relevance, importance and recency; pick evictions.

Pure functions. Times are unix seconds (float); half-lives are in days. How the retrieval
channels are fused is ``memvault.policy.fusion``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from memvault.policy.units import SECONDS_PER_DAY

__all__ = [
    "recency",
    "final_score",
    "final_scorer",
    "retention_score",
    "pick_evictions",
]

WEIGHT_RELEVANCE = 0.8
"""Weight of fused relevance in recall's final score (``final_score``)."""
WEIGHT_IMPORTANCE = 0.1
"""Weight of importance in recall's final score."""
WEIGHT_RECENCY = 0.1
"""Weight of recency in recall's final score. The three weights: relevance first, importance and
recency as tie-breakers; ``bench.fusion_compare``'s "no importance or recency" row shows what they
change on the quality sets (docs/benchmarks.md)."""
HALF_LIFE_DAYS = 30.0
"""Recency half-life on last access, days: a memory not read for a month counts half as recent
(recall, eviction order, the session hooks' block)."""

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
    return final_scorer(w_rel, w_imp, w_rec)(relevance, importance, recency)


def final_scorer(w_rel: float, w_imp: float, w_rec: float) -> Callable[[float, float, float], float]:
    """``final_score`` with these weights, checked once: ``f(relevance, importance, recency)``
    (recall scores every candidate with the same weights). Raises ValueError as ``final_score``."""
    ws = _check_weights((w_rel, w_imp, w_rec), "score weights")
    total = sum(ws)
    if total <= 0:
        raise ValueError("at least one of the relevance/importance/recency weights must be > 0")
    w0, w1, w2 = ws

    def score(relevance: float, importance: float, recency: float) -> float:
        return (w0 * relevance + w1 * importance + w2 * recency) / total

    return score


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
