"""recall's ranking constants as one value a bench variant can change (``dataclasses.replace``).

memvault reads each constant from the module that uses it; the benches that order captured
candidates as ``recall.rank`` does (``fusion_compare``, ``bilingual``, ``devmemory``,
``calibration``) compare variants of them on the same captures, so they take them together.
The defaults are memvault's own constants: a bench run with ``Ranking()`` ranks as recall.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memvault.policy.neighbours import NEIGHBOUR_LIFT
from memvault.policy.ranking import HALF_LIFE_DAYS, WEIGHT_IMPORTANCE, WEIGHT_RECENCY, WEIGHT_RELEVANCE
from memvault.service.centroids import LANGUAGE_NEUTRAL
from memvault.service.search import CANDIDATES, DENSE_WEIGHT


def _min_relevance() -> float:
    from memvault.config import RankingSettings

    return RankingSettings().min_relevance


@dataclass(frozen=True)
class Ranking:
    """recall's ranking constants (field -> the memvault constant it defaults to):
    ``candidates`` CANDIDATES, ``fusion_dense_weight`` DENSE_WEIGHT, ``neighbour_lift``
    NEIGHBOUR_LIFT, ``language_neutral`` LANGUAGE_NEUTRAL, the three ``weight_*`` and
    ``half_life_days`` of ``policy.ranking``; ``min_relevance`` the setting's default."""

    candidates: int = CANDIDATES
    fusion_dense_weight: float = DENSE_WEIGHT
    neighbour_lift: float = NEIGHBOUR_LIFT
    language_neutral: bool = LANGUAGE_NEUTRAL
    weight_relevance: float = WEIGHT_RELEVANCE
    weight_importance: float = WEIGHT_IMPORTANCE
    weight_recency: float = WEIGHT_RECENCY
    half_life_days: float = HALF_LIFE_DAYS
    min_relevance: float = field(default_factory=_min_relevance)


def score_with(ch: Any, texts: Mapping[str, str], dense_weight: float,
               positions: Mapping[str, float] | None = None) -> dict:
    """``service.search.score_candidates`` with the dense channel's share ``dense_weight``: the
    shipped function itself at ``DENSE_WEIGHT``, else its steps with that weight.
    ``positions``: the model's language positions of mixed texts (``fusion_inputs``)."""
    from memvault.policy.fusion import convex_fuse
    from memvault.service.search import fusion_inputs, score_candidates, scored

    if dense_weight == DENSE_WEIGHT:
        return score_candidates(ch, texts, positions)
    fi = fusion_inputs(ch, texts, positions)
    fused = convex_fuse(fi.dense, fi.keyword, dense_weight=dense_weight, coverage=fi.coverage, unjudged=fi.unjudged,
                        translated=fi.translated)
    return scored(fi, fused, ch)
