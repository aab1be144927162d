"""recall's ranking constants as one value a bench variant can change (``dataclasses.replace``).

memvault reads each constant from the module that uses it; the benches that order captured
candidates as ``recall.rank`` does (``fusion_compare``, ``bilingual``, ``devmemory``,
``calibration``) compare variants of them on the same captures, so they take them together.
The defaults are memvault's own constants: a bench run with ``Ranking()`` ranks as recall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memvault.policy.neighbours import NEIGHBOUR_LIFT
from memvault.policy.ranking import HALF_LIFE_DAYS, WEIGHT_IMPORTANCE, WEIGHT_RECENCY, WEIGHT_RELEVANCE
from memvault.service.centroids import LANGUAGE_NEUTRAL
from memvault.service.fusion import CANDIDATES, DENSE_WEIGHT


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
