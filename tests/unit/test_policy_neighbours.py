"""Conversation neighbours (pure policy): which memories a hit lifts, and how far."""

from __future__ import annotations

import pytest

from memvault.policy.neighbours import (
    NEIGHBOUR_MAX_CHARS,
    NEIGHBOUR_SOURCES,
    NEIGHBOUR_WINDOW_S,
    cap_lifted,
    conversation_neighbours,
    neighbour_lift,
    same_conversation,
)


def test_a_neighbour_of_a_strong_hit_is_lifted_below_it_and_keeps_a_better_score_of_its_own():
    scores = {"hit": 0.9, "answer": 0.2, "strong": 0.8, "far": 0.1, "second": 0.0}
    beside = {"hit": [("answer", 1), ("strong", 1), ("second", 2)]}
    got = neighbour_lift(scores, beside, 0.7)
    assert got["answer"] == (pytest.approx(0.63), "hit")
    assert got["second"] == (pytest.approx(0.441), "hit")  # 0.7 ** 2 x 0.9
    assert got["strong"] == (0.8, None)  # its own 0.8 beats 0.7 x 0.9
    assert got["hit"] == (0.9, None) and got["far"] == (0.1, None)
    assert max(s for s, _ in got.values()) == 0.9  # nothing passes the hit that lifted it


def test_the_best_lift_wins_and_only_the_best_hits_lift():
    scores = {f"m{i}": 1.0 - i / 100 for i in range(NEIGHBOUR_SOURCES + 2)} | {"x": 0.0, "y": 0.0}
    beside = {"m0": [("x", 2)], "m1": [("x", 1)], f"m{NEIGHBOUR_SOURCES}": [("y", 1)]}
    got = neighbour_lift(scores, beside, 0.5)
    assert got["x"] == (pytest.approx(0.495), "m1")  # 0.5 x 0.99 beats 0.25 x 1.0
    assert got["y"] == (0.0, None)  # m10 is not among the 10 best


def test_only_candidates_are_lifted_and_off_means_unchanged():
    scores = {"a": 1.0, "b": 0.1}
    assert neighbour_lift(scores, {"a": [("b", 1), ("not-a-candidate", 1), ("a", 1)]}, 0.6) == {
        "a": (1.0, None), "b": (0.6, "a")}
    assert neighbour_lift(scores, {"a": [("b", 1)]}, 0.0) == {"a": (1.0, None), "b": (0.1, None)}
    assert neighbour_lift({}, {}, 0.7) == {}


@pytest.mark.parametrize("factor", [-0.1, 1.0, 1.5, float("nan")])
def test_a_factor_outside_0_to_1_is_refused(factor):
    with pytest.raises(ValueError, match="neighbour lift factor"):
        neighbour_lift({"a": 1.0}, {}, factor)


def test_a_distance_below_1_is_refused():
    with pytest.raises(ValueError, match="distance"):
        neighbour_lift({"a": 1.0, "b": 0.0}, {"a": [("b", 0)]}, 0.5)


def test_the_walk_goes_two_places_out_through_memories_that_are_not_candidates():
    t = 1_800_000_000.0
    # insertion order: b2 b1 hit a1 a2 a3; a1 is not a candidate (filtered out, another kind ...)
    beside = {"hit": ("b1", "a1"), "b1": ("b2", "hit"), "a1": ("hit", "a2"), "a2": ("a1", "a3")}
    created = {"hit": t, "b1": t - 60, "b2": t - 120, "a2": t + 60, "a3": t + 120}
    lengths = dict.fromkeys(created, 40)
    got = conversation_neighbours(beside, created, lengths)
    assert sorted(got["hit"]) == [("a2", 2), ("b1", 1), ("b2", 2)]  # a3 is three places away
    assert conversation_neighbours(beside, created, lengths, reach=1)["hit"] == [("b1", 1)]


def test_neighbours_must_be_of_the_same_conversation():
    t = 1_800_000_000.0
    beside = {"hit": ("before", "after"), "lonely": (None, None), "gone": ("hit", None)}
    created = {"hit": t, "before": t - NEIGHBOUR_WINDOW_S, "after": t + NEIGHBOUR_WINDOW_S + 1, "lonely": t}
    got = conversation_neighbours(beside, created, dict.fromkeys(created, 40))
    assert got["hit"] == [("before", 1)] and got["lonely"] == [] and "gone" not in got
    assert same_conversation(t, t + 60) and not same_conversation(t, t + 2 * 3600)


def test_a_lifted_memory_stays_under_its_hit_even_when_importance_would_pass_it():
    # final scores: the lift gave "sister" 0.7 x the hit's fused score, and its importance 1.0 adds more
    own = {"hit": 0.42, "sister": 0.10, "other": 0.30}
    final = {"hit": 0.42, "sister": 0.45, "other": 0.30}
    got = cap_lifted(final, own, {"hit": None, "sister": "hit", "other": None},
                     {"hit": 0.44, "sister": 0.0, "other": 0.1}, 0.3)
    assert got["hit"] > got["sister"] > got["other"] and got["hit"] == 0.42


def test_a_lifted_memory_never_passes_a_likely_answer_unless_it_is_one():
    own = {"hit": 0.9, "ctx": 0.05, "answer2": 0.5, "answer3": 0.4, "weak": 0.45, "ctx_answer": 0.35}
    final = dict(own) | {"ctx": 0.63, "ctx_answer": 0.63}
    by = dict.fromkeys(own) | {"ctx": "hit", "ctx_answer": "hit"}
    relevance = {"hit": 1.0, "ctx": 0.0, "answer2": 0.7, "answer3": 0.56, "weak": 0.1, "ctx_answer": 0.35}
    got = cap_lifted(final, own, by, relevance, 0.3)
    order = sorted(got, key=lambda i: -got[i])
    # the context memory goes under both other likely answers (and so under the weak one between them);
    # a lifted memory that is a likely answer itself keeps its lift
    assert order == ["hit", "ctx_answer", "answer2", "weak", "answer3", "ctx"]
    assert got["ctx"] >= own["ctx"]


def test_a_capped_lift_never_falls_below_the_memory_s_own_score():
    own = {"hit": 0.5, "n": 0.3, "likely": 0.2}
    got = cap_lifted({"hit": 0.5, "n": 0.35, "likely": 0.2}, own, {"hit": None, "n": "hit", "likely": None},
                     {"hit": 0.9, "n": 0.0, "likely": 0.8}, 0.3)
    assert got["n"] == 0.3  # capped under "likely" (0.2) would be below its own 0.3: it keeps 0.3


def test_only_short_memories_are_lifted_a_long_one_carries_its_own_context():
    t = 1_800_000_000.0
    beside = {"hit": ("short", "long"), "long": ("hit", "after")}
    created = {"hit": t, "short": t, "long": t, "after": t}
    lengths = {"hit": 500, "short": NEIGHBOUR_MAX_CHARS, "long": NEIGHBOUR_MAX_CHARS + 1, "after": 20}
    assert conversation_neighbours(beside, created, lengths)["hit"] == [("short", 1), ("after", 2)]
