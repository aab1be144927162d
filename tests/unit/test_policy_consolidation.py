"""The consolidation guard and clustering (memvault.policy.consolidation), as pure functions.

Cosines are given by hand here; the labelled set with the real model is in
tests/bench_floors/test_consolidation_set.py.
"""

from __future__ import annotations

import pytest

from memvault.policy.consolidation import compatible_kinds, find_clusters, fold, most_specific, restates

FLOOR = 0.88


def same(a: str, b: str, cosine: float = 0.95) -> bool:
    return restates(fold(a), fold(b), cosine, FLOOR)


@pytest.mark.parametrize(("a", "b"), [
    ("The user prefers pnpm", "The user uses pnpm for every project"),
    ("The user prefers pnpm", "The user switched the monorepo to pnpm"),
    ("The user dislikes emojis in code comments", "The user does not want emojis in code comments"),
    ("The API server listens on port 8080", "Port 8080 is where the API server listens"),
    ("The project uses PostgreSQL", "The project uses PostgreSQL 15"),  # the second says more
    ("用户喜欢深色主题", "用户总是用深色主题"),
    ("The user prefers pytest over unittest", "The user prefers pytest to unittest for tests"),
])
def test_restatements_pass(a, b):
    assert same(a, b) and same(b, a)


@pytest.mark.parametrize(("a", "b", "why"), [
    ("The API server listens on port 8080", "The API server listens on port 8081", "number"),
    ("The user prefers tabs for indentation in Go", "The user prefers spaces for indentation in Python", "names"),
    ("The project uses PostgreSQL 15", "The project uses PostgreSQL 16", "version"),
    ("The user does not use Docker", "The user uses Docker", "negation"),
    ("The user prefers tabs in C", "The user prefers tabs in C++", "symbol"),
    ("Service A runs on port 8080", "Service B runs on port 8080", "a capital letter is a name"),
    ("The user works at Acme Corp", "The user worked at Acme Corp", "tense"),
    ("The user prefers pytest over unittest", "The user prefers unittest over pytest", "direction"),
    ("会议在三月三日", "会议在三月四日", "characters are counted"),
    ("用户喜欢深色主题", "用户喜欢浅色主题", "chinese value"),
    ("The user prefers pnpm", "用户喜欢用pnpm", "another language"),
    ("The user prefers pnpm", "pnpm", "fewer than two shared words"),
])
def test_distinct_pairs_fail(a, b, why):
    assert not same(a, b, 0.99) and not same(b, a, 0.99), why


def test_cosine_below_the_floor_never_passes():
    assert not same("The user prefers pnpm", "The user uses pnpm for every project", FLOOR - 0.001)
    assert same("The user prefers pnpm", "The user uses pnpm for every project", FLOOR)


def test_kinds():
    assert compatible_kinds("preference", "decision") and compatible_kinds("fact", "note")
    assert not compatible_kinds("episode", "fact") and not compatible_kinds("procedure", "preference")
    assert compatible_kinds("episode", "episode")


def test_most_specific_keeps_the_text_with_the_most_words():
    texts = ["The user prefers pnpm", "The user switched the monorepo to pnpm", "The user uses pnpm"]
    assert most_specific(texts, [fold(t) for t in texts]) == 1


def test_clusters_are_complete_linkage_and_respect_kinds_and_keys():
    texts = ["The user prefers pnpm", "The user uses pnpm for every project", "The user switched the monorepo to pnpm",
             "The user switched the docs site to pnpm", "The API server listens on port 8080"]
    every = {(i, j): 0.95 for i in range(5) for j in range(i + 1, 5)}
    kinds = ["preference"] * 5
    # 2 and 3 both extend 0/1 but differ from each other (monorepo / docs site): only one of them joins
    got = find_clusters(texts, kinds, [None] * 5, every, FLOOR)
    assert len(got) == 1 and got[0][:2] == [0, 1] and len(got[0]) == 3
    # an episode never merges with a preference
    got = find_clusters(texts[:2], ["preference", "episode"], [None, None], {(0, 1): 0.95}, FLOOR)
    assert got == []
    # two different keys never share a cluster; one key is fine
    assert find_clusters(texts[:2], kinds[:2], ["k.a", "k.b"], {(0, 1): 0.95}, FLOOR) == []
    assert find_clusters(texts[:2], kinds[:2], ["k.a", None], {(0, 1): 0.95}, FLOOR) == [[0, 1]]
    # a pair left out of the cosines is never merged
    assert find_clusters(texts[:2], kinds[:2], [None, None], {}, FLOOR) == []


def test_the_same_language_guard_judges_by_words_not_by_one_quoted_character():
    # an English memory quoting a Chinese name is English: it may merge with its English restatement
    a, b = fold("The user's cat is called Xiaomi (小米)."), fold("The user's cat is called Xiaomi.")
    assert (a.cjk, b.cjk) == (False, False)
    assert restates(a, b, cosine=0.97, min_cosine=0.9)
    # a Chinese sentence full of identifiers is Chinese: never merged with its English twin
    zh, en = fold("shop-api 生产部署在 AWS 的 ECS 上。"), fold("shop-api is deployed to ECS on AWS in production.")
    assert zh.cjk and not en.cjk
    assert not restates(zh, en, cosine=0.97, min_cosine=0.9)
