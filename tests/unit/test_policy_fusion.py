"""Unit tests of the pure fusion and language policies (memvault.policy.fusion / .language)."""

from __future__ import annotations

import math

import pytest

from memvault.policy.fusion import (
    CROSS_SCRIPT_FLOOR,
    DENSE_BACKGROUND,
    DENSE_BACKGROUND_CJK,
    LANGUAGE_SHIFT_SCALE,
    LANGUAGE_SHIFT_SCALE_CJK,
    STORE_GAP_SHARE,
    calibrated_relevance,
    convex_fuse,
    dense_background,
    keyword_coverage,
    language_shift,
    store_language_gap,
)
from memvault.policy.language import (
    CJK,
    NEUTRAL,
    OTHER,
    WORD,
    judged_terms,
    language_units,
    named_things,
    script_class,
    term_kind,
)

# --- script_class ---------------------------------------------------------------------


def test_script_class_tells_chinese_from_english_with_identifiers_inside():
    assert script_class("发布出问题时，对该部署执行 kubectl rollout undo 即可回滚。") == CJK
    assert script_class("Use `kubectl rollout undo` to roll back.") == OTHER
    assert script_class("Yuki 由纪 keeps her tax documents in a blue folder") == OTHER
    assert script_class("1234 !!") == OTHER  # no letters


def test_a_chinese_sentence_full_of_identifiers_is_chinese():
    # identifiers, names, numbers, URLs and commands belong to no language
    for text in ("shop-web 的埋点用 PostHog，事件名用 snake_case，例如 checkout_started。",
                 "shop-api 的 OpenAPI 文档在 http://localhost:8040/docs，生成 SDK 用 make sdk。",
                 "shop-pipeline 的 Kafka broker 在 localhost:29092，容器里是 kafka:9092。",
                 "billing-svc 用 Go 1.22 写的，配置在 config/billing.yaml，改完跑 make lint test。",
                 "SHOP-4091 这个错误是怎么回事？", "max.poll.interval.ms 超时的问题后来怎么解决的？",
                 "用 Docker Compose 启动 Postgres Redis Kafka"):
        assert script_class(text) == CJK, text
    for text in ("The user prefers pnpm over npm for every JavaScript project.",
                 "Error SHOP-4091 'duplicate idempotency key' came from retries reusing the key.",
                 "The user's cat is named 小米 and sleeps all day.", "make sdk"):
        assert script_class(text) == OTHER, text
    cjk, words = language_units("shop-api 生产部署在 AWS eu-west-1 的 ECS Fargate 上，用 terraform apply 发布。")
    assert (cjk, words) == (5.0, 2)  # Fargate and AWS are names: terraform, apply are the words


def test_term_kinds_and_the_terms_a_memory_can_be_judged_by():
    assert [term_kind(t) for t in ("支付", "timeout", "shop-4091", "4091", "max.poll.interval.ms")] == [
        CJK, WORD, NEUTRAL, NEUTRAL, NEUTRAL]
    q = frozenset({"shop-4091", "shop", "4091", "错误", "错", "误"})
    # an English memory: its CJK terms cannot count against it; identifiers and words do
    assert judged_terms(q, frozenset({"shop-4091", "shop", "error"}), OTHER) == {"shop-4091", "shop", "4091"}
    # a Chinese memory: every CJK term counts; an English word only when the memory holds it
    assert judged_terms(frozenset({"超时", "timeout", "pnpm"}), frozenset({"超时", "pnpm"}), CJK) == {"超时", "pnpm"}


# --- language_shift -------------------------------------------------------------------


def test_language_shift_is_zero_within_a_language_and_the_gap_across():
    dots = {CJK: 0.70, OTHER: 0.82}
    full = -0.12 * LANGUAGE_SHIFT_SCALE
    assert language_shift(dots, 0.0, 0.0) == 0.0
    assert language_shift(dots, 0.0, 1.0) == pytest.approx(full)  # raises the Chinese passage's score
    assert language_shift(dots, 1.0, 0.0) == pytest.approx(0.12 * LANGUAGE_SHIFT_SCALE_CJK)  # a Chinese query
    assert language_shift(dots, 0.0, 0.5) == pytest.approx(full / 2)  # a text mixing both languages' words
    assert language_shift({}, 0.0, 1.0) == 0.0  # neutrality off: no change


# --- keyword_coverage -----------------------------------------------------------------


def test_keyword_coverage_is_the_share_of_query_terms_held():
    assert keyword_coverage({"often", "databas", "back"}, {"back", "roll", "kubectl"}) == pytest.approx(1 / 3)
    assert keyword_coverage({"a"}, {"a", "b"}) == 1.0
    assert keyword_coverage(set(), {"a"}) == 0.0


# --- convex_fuse ----------------------------------------------------------------------


def test_dense_winner_beats_a_document_whose_only_keyword_hit_is_incidental():
    # the reported case: the Chinese page is dense rank 1 with no keyword hit; the English
    # page matches one of three query terms (stem "back") and is dense rank 2
    dense = {"zh": 0.86, "ops": 0.84}
    keyword = {"ops": 3.1}
    fused = convex_fuse(dense, keyword, dense_weight=0.7, coverage={"ops": 1 / 3})
    assert list(fused) == ["zh", "ops"]
    assert fused["zh"] == pytest.approx(0.7)
    assert fused["ops"] == pytest.approx(0.3 / 3)


def test_convex_fuse_normalises_each_channel_and_keeps_every_id():
    fused = convex_fuse({"a": 0.9, "b": 0.8, "c": 0.7}, {"c": 10.0, "d": 5.0}, dense_weight=0.5)
    assert set(fused) == {"a", "b", "c", "d"}
    assert fused["a"] == pytest.approx(0.5)  # dense max, no keyword
    assert fused["b"] == pytest.approx(0.25)
    assert fused["c"] == pytest.approx(0.5)  # dense min, keyword max
    assert fused["d"] == pytest.approx(0.25)  # keyword only: dense counts as the min
    assert all(0.0 <= v <= 1.0 for v in fused.values())
    assert convex_fuse({}, {}, dense_weight=0.7) == {}
    assert convex_fuse({"a": 0.5}, {}, dense_weight=0.7) == {"a": pytest.approx(0.7)}


def test_keyword_blind_candidates_are_credited_the_keyword_evidence_of_the_query_language():
    # an English query: the Chinese memory cannot share a term with it; it is credited with
    # its dense part times the best keyword part an English candidate reached (0.8 here)
    dense = {"zh": 0.90, "en": 0.85, "en2": 0.80}
    keyword = {"en": 1.0}
    fused = convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.8}, unjudged={"zh": 1.0})
    assert fused["zh"] == pytest.approx(0.4 * 1.0 + 0.6 * 1.0 * 0.8)
    assert fused["en"] == pytest.approx(0.4 * 0.5 + 0.6 * 0.8)
    assert list(fused) == ["zh", "en", "en2"]
    # when the query's language reached little, the credit is at least CROSS_SCRIPT_FLOOR of D
    fused = convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.2}, unjudged={"zh": 1.0})
    assert fused["zh"] == pytest.approx(0.4 + 0.6 * CROSS_SCRIPT_FLOOR)


def test_a_same_language_answer_is_not_beaten_by_a_cross_script_memory_given_full_keyword_credit():
    # a Chinese question whose Chinese answer holds 60% of its terms; an English memory a
    # little lower in meaning: crediting it its whole dense part as keyword evidence (the rule
    # at dense weight 0.6) put it first (0.971 against 0.76)
    dense = {"answer": 0.903, "english": 0.900, "low": 0.80}
    keyword = {"answer": 1.0}
    fused = convex_fuse(dense, keyword, dense_weight=0.4, coverage={"answer": 0.6}, unjudged={"english": 1.0})
    assert list(fused)[0] == "answer"


def test_a_borrowed_word_hit_does_not_cost_a_keyword_blind_candidate_its_dense_part():
    # a Chinese query holding "API": the English answer matches that one borrowed word (a
    # small share of the query's terms) and must not rank below an English memory with no hit
    dense = {"answer": 0.92, "other": 0.91, "low": 0.80}
    keyword = {"answer": 1.0}
    fused = convex_fuse(dense, keyword, dense_weight=0.6, coverage={"answer": 0.1},
                        unjudged=dict.fromkeys(("answer", "other", "low"), 1.0))
    assert list(fused) == ["answer", "other", "low"]
    assert fused["answer"] == pytest.approx(0.6 + 0.4 * CROSS_SCRIPT_FLOOR)  # K = D x 0.5
    # a candidate judged on a part of the query: that part counts in proportion to its share
    fused = convex_fuse({"a": 0.9, "b": 0.8}, {"b": 1.0}, dense_weight=0.5, coverage={"b": 1.0}, unjudged={"b": 0.75})
    assert fused["b"] == pytest.approx(0.5 * (0.25 * 1.0 + 0.75 * 0.0 * CROSS_SCRIPT_FLOOR))


def test_dictionary_matches_add_to_the_stand_in_as_independent_evidence():
    # an English question; two Chinese memories equal in meaning, one matching half of the
    # query's words through the dictionary: K = 1 - (1 - D x credit) x (1 - T)
    dense = {"zh_match": 0.88, "zh_plain": 0.88, "en": 0.90, "low": 0.80}
    keyword = {"en": 1.0}
    blind = {"zh_match": 1.0, "zh_plain": 1.0}
    fused = convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.8}, unjudged=blind,
                        translated={"zh_match": 0.5})
    d = (0.88 - 0.80) / (0.90 - 0.80)
    assert fused["zh_plain"] == pytest.approx(0.4 * d + 0.6 * d * 0.8)
    assert fused["zh_match"] == pytest.approx(0.4 * d + 0.6 * (1 - (1 - d * 0.8) * 0.5))
    assert list(fused) == ["en", "zh_match", "zh_plain", "low"]
    # no match, or no translated map at all: the stand-in alone, as before
    assert convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.8}, unjudged=blind) == pytest.approx(
        convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.8}, unjudged=blind, translated={}))
    # a full match is full keyword evidence for the unjudged part, never more
    fused = convex_fuse(dense, keyword, dense_weight=0.4, coverage={"en": 0.8}, unjudged=blind,
                        translated={"zh_match": 1.0})
    assert fused["zh_match"] == pytest.approx(0.4 * d + 0.6)
    assert list(fused)[0] == "zh_match"


@pytest.mark.parametrize("w", [-0.1, 1.5, math.nan])
def test_convex_fuse_refuses_a_weight_outside_0_1(w):
    with pytest.raises(ValueError, match="dense_weight must be in"):
        convex_fuse({"a": 1.0}, {}, dense_weight=w)


# --- calibrated_relevance -------------------------------------------------------------


def test_calibrated_relevance_is_a_probability_rising_with_both_signals():
    low = calibrated_relevance(-0.02, 0.0)
    mid = calibrated_relevance(0.05, 0.0)
    high = calibrated_relevance(0.12, 0.0)
    assert 0.0 <= low < mid < high <= 1.0
    assert low < 0.1 and high > 0.9  # below the background: hardly; far above it: surely
    assert calibrated_relevance(0.05, 1.0) > mid
    assert calibrated_relevance(0.05, 0.0, cross_script=1.0) > mid  # stands in for the coverage it cannot have
    assert calibrated_relevance(None, 0.0) == calibrated_relevance(-0.05, 0.0)
    # a memory in the other language that matches the query through the dictionary
    assert calibrated_relevance(0.05, 0.0, cross_script=1.0, translated=0.5) > calibrated_relevance(
        0.05, 0.0, cross_script=1.0)
    assert calibrated_relevance(0.05, 0.0, cross_script=0.0, translated=1.0) == mid  # only the unjudged part
    assert calibrated_relevance(5.0, 1.0) <= 1.0 and calibrated_relevance(-5.0, 0.0) >= 0.0
    # the query names something no candidate holds: less likely answered, whatever else
    for gap, cov, u, t in ((0.05, 0.5, 0.0, 0.0), (0.12, 1.0, 0.0, 0.0), (0.05, 0.0, 1.0, 0.5)):
        assert calibrated_relevance(gap, cov, u, t, unseen_name=True) < calibrated_relevance(gap, cov, u, t)


# --- named_things -----------------------------------------------------------------------


@pytest.mark.parametrize(("question", "names"), [
    # in a Chinese question every Latin word is a borrowed term, written as it is written
    ("生产环境的 Kubernetes 是哪个版本？", ("Kubernetes",)),
    ("发票 PDF 用什么字体？", ("PDF",)),
    ("SHOP-4091 这个错误是怎么回事？", ("SHOP-4091",)),
    ("max.poll.interval.ms 超时的问题后来怎么解决的？", ("max.poll.interval.ms",)),
    ("司机端登录 token 多久过期？", ("token",)),
    ("shop-web 的埋点用什么？", ("shop-web",)),
    ("几核几 G 的实例？", ()),  # one letter is no name
    ("周五可以发布到生产吗？", ()),
    # in an English question only what no English word looks like
    ("p95 latency SLO for the dispatch API?", ("p95", "SLO", "API")),
    ("how do I run the app on a physical iPhone?", ("iPhone",)),
    ("where do we rent GPUs from?", ("GPU",)),  # a plural s after capitals is dropped
    ("which version of Postgres do we run?", ()),  # prose capitalises names it may spell otherwise
    ("is my self-review due this week?", ()),  # and hyphenates words
    ("what is 42?", ()),
    ("I think so", ()),
])
def test_named_things_are_the_names_a_question_carries(question, names):
    assert named_things(question) == names


def test_named_things_reads_a_bounded_prefix():
    assert named_things("word " * 2000 + "SHOP-4091") == ()


def test_dense_background_averages_ranks_2_to_11_padded():
    assert dense_background([0.9] + [0.8] * 10) == pytest.approx(0.8)
    assert dense_background([0.9, 0.8] + [0.7] * 20) == pytest.approx((0.8 + 0.7 * 9) / 10)
    assert dense_background([0.95]) == pytest.approx(DENSE_BACKGROUND)  # a lone memory: the padded background
    assert dense_background([]) == pytest.approx(DENSE_BACKGROUND)
    # a query in CJK script: its cosines run higher, and so does the padding
    assert dense_background([0.95], "cjk") == pytest.approx(DENSE_BACKGROUND_CJK)
    assert DENSE_BACKGROUND_CJK > DENSE_BACKGROUND
    assert dense_background([0.9] + [0.8] * 10, "cjk") == pytest.approx(0.8)  # a full store needs no padding


def test_the_store_measures_the_language_gap_of_a_query_on_its_unrelated_memories():
    # ranks 6-30 of each language: the best five (possibly about the query) do not count
    cjk = [0.99] * 5 + [0.90] * 10
    other = [0.95] * 5 + [0.80] * 10
    assert store_language_gap(cjk, other) == pytest.approx(0.10)
    assert store_language_gap(cjk, [0.8] * 5) is None  # too few in one language to tell
    dots = {CJK: 0.70, OTHER: 0.82}
    # a Chinese query and an English passage: half from the store, half from the parallel sentences
    got = language_shift(dots, 1.0, 0.0, store_gap=0.10)
    assert got == pytest.approx(STORE_GAP_SHARE * -0.10 + (1 - STORE_GAP_SHARE) * 0.12 * LANGUAGE_SHIFT_SCALE_CJK)
