"""Ranking policy: weighted RRF, normalisation, recency, final score, eviction."""

from __future__ import annotations

import math

import pytest

from memvault.policy.ranking import (
    final_score,
    pick_evictions,
    recency,
    retention_score,
)
from memvault.policy.units import SECONDS_PER_DAY

DAY = SECONDS_PER_DAY
NOW = 1_750_000_000.0


# --- recency -----------------------------------------------------------------------


def test_recency_half_life() -> None:
    assert recency(NOW, NOW, 30) == 1.0
    assert recency(NOW - 30 * DAY, NOW, 30) == pytest.approx(0.5)
    assert recency(NOW - 60 * DAY, NOW, 30) == pytest.approx(0.25)
    assert recency(NOW - 15 * DAY, NOW, 30) == pytest.approx(2**-0.5)


def test_recency_future_access_counts_as_now() -> None:
    assert recency(NOW + 3600, NOW, 30) == 1.0


def test_recency_never_reaches_zero() -> None:
    r = recency(0.0, NOW, 0.001)
    assert 0.0 < r < 1e-300


def test_recency_is_monotonic() -> None:
    values = [recency(NOW - d * DAY, NOW, 30) for d in (0, 1, 10, 100, 1000)]
    assert values == sorted(values, reverse=True)


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan])
def test_recency_rejects_bad_half_life(bad: float) -> None:
    with pytest.raises(ValueError, match="half_life_days"):
        recency(NOW, NOW, bad)


# --- final_score -------------------------------------------------------------------


def test_final_score_is_the_normalised_weighted_mean() -> None:
    assert final_score(1.0, 0.5, 0.0, 0.8, 0.1, 0.1) == pytest.approx(0.85)
    # Only ratios matter.
    assert final_score(1.0, 0.5, 0.0, 8, 1, 1) == pytest.approx(0.85)
    assert final_score(0.3, 0.9, 0.6, 1, 0, 0) == pytest.approx(0.3)


def test_final_score_stays_in_unit_interval() -> None:
    assert final_score(1, 1, 1, 0.8, 0.1, 0.1) == pytest.approx(1.0)
    assert final_score(0, 0, 0, 0.8, 0.1, 0.1) == 0.0


def test_final_score_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        final_score(1, 1, 1, 0, 0, 0)
    with pytest.raises(ValueError):
        final_score(1, 1, 1, -1, 1, 1)


def test_importance_and_recency_break_relevance_ties() -> None:
    a = final_score(0.9, 0.9, 1.0, 0.8, 0.1, 0.1)
    b = final_score(0.9, 0.2, 0.1, 0.8, 0.1, 0.1)
    assert a > b


# --- retention and eviction --------------------------------------------------------


def test_retention_is_importance_times_freshness() -> None:
    assert retention_score(0.8, NOW - 30 * DAY, NOW, 30) == pytest.approx(0.4)
    assert retention_score(0.0, NOW, NOW, 30) == 0.0


def test_pick_evictions_lowest_retention_first() -> None:
    records = [
        ("fresh-important", 0.9, NOW),
        ("old-important", 0.9, NOW - 120 * DAY),  # 0.9 / 16 = 0.056
        ("fresh-trivial", 0.1, NOW),  # 0.1
        ("old-trivial", 0.1, NOW - 60 * DAY),  # 0.025
    ]
    assert pick_evictions(records, 2, NOW, 30) == ["old-trivial", "old-important"]
    assert pick_evictions(records, 3, NOW, 30) == ["old-trivial", "old-important", "fresh-trivial"]


def test_pick_evictions_ties_go_to_the_oldest() -> None:
    records = [("b", 0.0, NOW - 1 * DAY), ("a", 0.0, NOW - 5 * DAY), ("c", 0.0, NOW)]
    assert pick_evictions(records, 2, NOW, 30) == ["a", "b"]


def test_pick_evictions_bounds() -> None:
    records = [("a", 0.5, NOW), ("b", 0.4, NOW)]
    assert pick_evictions(records, 0, NOW, 30) == []
    assert pick_evictions(records, -3, NOW, 30) == []
    assert pick_evictions(records, 10, NOW, 30) == ["b", "a"]
    assert pick_evictions([], 5, NOW, 30) == []


def test_final_scorer_scores_as_final_score_and_checks_its_weights_once() -> None:
    import itertools

    from memvault.policy.ranking import final_score, final_scorer

    for weights in ((0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (2, 3, 5)):
        f = final_scorer(*weights)
        for rel, imp, rec in itertools.product((0.0, 0.3, 0.77, 1.0), (0.0, 0.5, 1.0), (1e-300, 0.25, 1.0)):
            assert f(rel, imp, rec) == final_score(rel, imp, rec, *weights)  # the same float, not nearly
    for bad in ((0.0, 0.0, 0.0), (-1.0, 1.0, 1.0), (float("nan"), 1.0, 1.0)):
        with pytest.raises(ValueError):
            final_scorer(*bad)
