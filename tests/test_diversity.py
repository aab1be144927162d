"""MMR reordering (policy.diversity): near-copies are held back, order kept otherwise."""

from __future__ import annotations

import pytest

from memvault.policy.diversity import jaccard, mmr_order


def test_jaccard() -> None:
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, {"a"}) == 1.0


def test_a_near_copy_of_the_best_drops_below_a_different_item() -> None:
    ranked = [("pnpm", 0.90), ("pnpm again", 0.88), ("node 20", 0.85), ("other", 0.40)]
    terms = {"pnpm": {"user", "prefer", "pnpm", "npm"}, "pnpm again": {"user", "prefer", "pnpm", "npm", "like"},
             "node 20": {"node", "20", "project"}, "other": {"cat"}}
    assert mmr_order(ranked, terms, lam=0.8) == ["pnpm", "node 20", "pnpm again", "other"]


def test_unrelated_items_keep_their_order_and_the_best_stays_first() -> None:
    ranked = [(i, 1.0 - i / 10) for i in range(6)]
    terms = {i: {f"t{i}"} for i in range(6)}
    assert mmr_order(ranked, terms) == list(range(6))
    assert mmr_order(ranked, {i: {"same"} for i in range(6)}, lam=0.5)[0] == 0


def test_lam_one_and_depth_zero_keep_the_input_order() -> None:
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    same = {"a": {"x"}, "b": {"x"}, "c": {"y"}}
    assert mmr_order(ranked, same, lam=1.0) == ["a", "b", "c"]
    assert mmr_order(ranked, same, depth=0) == ["a", "b", "c"]
    assert mmr_order(ranked, same, lam=0.5, depth=2) == ["a", "b", "c"]  # c is past the head
    assert mmr_order([], {}) == []


@pytest.mark.parametrize(("lam", "depth", "message"), [(1.5, 5, "lam must be in [0, 1], got 1.5"),
                                                       (0.5, -1, "depth must be >= 0, got -1")])
def test_bad_parameters_are_refused(lam: float, depth: int, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        mmr_order([("a", 1.0)], {}, lam=lam, depth=depth)
