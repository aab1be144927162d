"""How bulk embedding is cut into model runs (``plan_runs``): bounded in texts and padded positions."""

from __future__ import annotations

import random

from memvault.embedding.runs import plan_runs


def test_runs_are_length_sorted_and_bounded_in_rows_and_positions() -> None:
    rng = random.Random(7)
    lengths = [rng.choice([12, 40, 130, 300, 512]) for _ in range(300)]
    runs = plan_runs(lengths, max_rows=32, max_positions=2048)
    assert sorted(i for r in runs for i in r) == list(range(len(lengths)))  # each text once
    flat = [lengths[i] for r in runs for i in r]
    assert flat == sorted(flat)  # length order: little padding
    for r in runs:
        assert len(r) <= 32
        assert len(r) * max(lengths[i] for i in r) <= 2048
    # short texts fill a run up to the row limit; 512-token texts go four to a run
    assert max(len(r) for r in runs) == 32
    assert all(len(r) == 4 for r in runs if min(lengths[i] for i in r) == 512)


def test_a_text_longer_than_the_budget_runs_alone() -> None:
    assert plan_runs([5000, 10, 10], max_rows=8, max_positions=1000) == [[1, 2], [0]]
    assert plan_runs([], max_rows=8, max_positions=1000) == []
