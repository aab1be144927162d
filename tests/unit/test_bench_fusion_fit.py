"""The learned-fusion bench (``bench.fusion_fit``): its likelihood's derivatives are right, its fit
finds what separates gold candidates, and its features hold recall's own fusion (with recall's
weights the learned form gives ``convex_fuse``'s scores)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.fusion_compare import Question
from bench.fusion_fit import FEATURES, Scorer, either_channel_first, features, fit, folds_of, gold_mask, objective
from memvault.policy.fusion import convex_fuse
from memvault.service.search import Channels, fusion_inputs


def _rows(seed: int, n: int = 40) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Lists of 8 candidates, 3 features: the gold one is higher on feature 0, feature 1 is noise,
    feature 2 is higher on a decoy."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        x = rng.normal(size=(8, 3))
        x[0, 0] += 3.0
        x[1, 2] += 3.0
        gold = np.zeros(8, dtype=bool)
        gold[0] = True
        rows.append((x, gold, 1.0))
    return rows


def test_gradient_and_hessian_match_finite_differences() -> None:
    rows = _rows(3, 12)
    rows[0] = (rows[0][0], rows[0][1] | np.eye(8, dtype=bool)[4], 2.0)  # two gold candidates, a weight
    w = np.array([0.3, -0.2, 0.5])
    _, grad, hess = objective(rows, w)
    eps = 1e-6
    for j in range(3):
        e = np.eye(3)[j] * eps
        assert grad[j] == pytest.approx((objective(rows, w + e)[0] - objective(rows, w - e)[0]) / (2 * eps), abs=1e-6)
        assert hess[:, j] == pytest.approx((objective(rows, w + e)[1] - objective(rows, w - e)[1]) / (2 * eps), abs=1e-5)


def test_fit_finds_the_separating_feature_and_ranks_unseen_lists() -> None:
    w = fit(_rows(1), 3)
    assert w[0] > 1.0 and w[2] < 0.5 and abs(w[1]) < 0.5 * w[0]
    unseen = _rows(2)
    learned = sum(int(np.argmax(x @ w)) == 0 for x, _, _ in unseen)
    by_feature_0 = sum(int(np.argmax(x[:, 0])) == 0 for x, _, _ in unseen)  # what the data allows
    assert learned >= by_feature_0 - 1 and learned >= 0.75 * len(unseen)


def test_folds_are_seeded_and_even() -> None:
    a, b = folds_of(23), folds_of(23)
    assert a == b and sorted(set(a)) == [0, 1, 2, 3, 4]
    assert max(a.count(k) for k in range(5)) - min(a.count(k) for k in range(5)) <= 1


def _question() -> Question:
    texts = {"api": "The billing API listens on port 8040 in every environment.",
             "deploy": "Deploys happen on Tuesdays after the billing review.",
             "zh": "周五下午不允许上线生产环境。",
             "kw": "Port numbers are listed in the ops wiki."}
    ch = Channels(query="Which port does the billing API listen on?",
                  dense={"api": 0.88, "zh": 0.85, "deploy": 0.82, "kw": 0.80},
                  keyword={"api": 9.0, "deploy": 3.0, "kw": 2.5}, query_dots={})
    return Question(set="t", qid="q", channels=ch, texts=texts, meta={i: (0.5, 0.0, 0.0) for i in texts}, now=0.0,
                    gold={"gold": ["m-api"]}, expand={i: [f"m-{i}"] for i in texts})


def test_features_hold_recalls_fusion() -> None:
    q = _question()
    ids, x, fi = features(q)
    assert x.shape == (len(q.texts), len(FEATURES))
    assert fi.unjudged["zh"] == 1.0 and not any(fi.translated.values())  # the premise: no dictionary match
    want = convex_fuse(fi.dense, fi.keyword, dense_weight=0.4, coverage=fi.coverage, unjudged=fi.unjudged)
    names = ("D", "Kj", "UDB", "UT", "Dconf")
    got = Scorer(names, lambda _q: np.array([0.4, 0.6, 0.6, 0.6, 0.0]))(q.channels, q.texts, None, q)
    assert list(got) == list(want)
    assert {i: s.score for i, s in got.items()} == pytest.approx(want)
    assert list(gold_mask(q, ids)) == [i == "api" for i in ids]
    fi_again = fusion_inputs(q.channels, q.texts)
    assert fi_again.dense == fi.dense  # no text mixes the two languages: no positions were needed


def test_either_channel_first_counts_a_question_once_per_slice() -> None:
    def q(gold: list[str], dense: list[str], bm25: list[str], slices: list[str]) -> Question:
        return Question(set="t", qid="q", channels=None, texts={}, meta={}, now=0.0,
                        gold={"gold": gold, "dense": dense, "bm25": bm25, "slices": slices})

    qs = [q(["a"], ["a", "b"], ["a"], ["zh->zh", "all"]), q(["a"], ["b", "a"], ["a"], ["zh->zh", "all"]),
          q(["a"], ["b"], ["c", "a"], ["en->en", "all"]), q([], ["b"], ["c"], [])]
    assert either_channel_first(qs) == {"zh->zh": 1.0, "all": 0.667, "en->en": 0.0}
