"""The language-free fusion variant of the bench (``bench.language_free``): its cosine is the
cosine of the two vectors with the axis taken out, and its fusion is recall's convex fusion
but for the cross-language credit."""

from __future__ import annotations

import numpy as np
import pytest

from bench.language_free import _unit_off_axis, fuse_fixed_credit
from memvault.policy.fusion import CROSS_SCRIPT_FLOOR, convex_fuse


def test_off_axis_cosine_is_the_closed_form() -> None:
    rng = np.random.default_rng(7)
    q, p, a = (v / np.linalg.norm(v) for v in rng.normal(size=(3, 16)))
    got = float(_unit_off_axis(q, a) @ _unit_off_axis(p, a))
    qa, pa = float(q @ a), float(p @ a)
    assert got == pytest.approx((float(q @ p) - qa * pa) / np.sqrt((1 - qa**2) * (1 - pa**2)))
    assert float(_unit_off_axis(q, a) @ a) == pytest.approx(0.0, abs=1e-12)


def test_fixed_credit_is_convex_fuse_when_the_credit_is_what_recall_gives() -> None:
    dense = {"en": 0.86, "zh": 0.90, "mix": 0.84, "far": 0.70}
    keyword = {"zh": 3.0, "mix": 6.0, "kw": 1.0}
    coverage = {"zh": 0.4, "mix": 0.8, "kw": 0.2}
    unjudged = {"en": 1.0, "mix": 0.5}
    translated = {"en": 0.3}
    want = convex_fuse(dense, keyword, dense_weight=0.4, coverage=coverage, unjudged=unjudged, translated=translated)
    own_best = max(0.4 * 3.0 / 6.0, 0.2 * 1.0 / 6.0)  # "zh" and "kw" are judged on every term
    got = fuse_fixed_credit(dense, keyword, coverage, unjudged, translated, 0.4, max(own_best, CROSS_SCRIPT_FLOOR))
    assert list(got) == list(want)
    assert got == pytest.approx(want)
    low = fuse_fixed_credit(dense, keyword, coverage, unjudged, translated, 0.4, 0.1)
    assert low["en"] < got["en"] and low["zh"] == pytest.approx(got["zh"])
