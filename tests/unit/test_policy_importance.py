"""Importance heuristic: tables of low-value and real memories, English and Chinese."""

from __future__ import annotations

import pytest

from memvault.config import PolicySettings
from memvault.policy.importance import KIND_PRIORS, ImportanceScore, score_importance
from memvault.vocabulary import KINDS

THRESHOLD = PolicySettings.model_fields["importance_threshold"].default  # 0.3

LOW: list[str] = [
    # greetings, thanks, farewells
    "hi",
    "Hi!",
    "hello there",
    "hey",
    "good morning everyone",
    "thanks!",
    "Thank you so much!",
    "thx",
    "ok thanks, bye",
    "see you tomorrow",
    "great, thanks for the help!",
    "You're welcome",
    "你好",
    "您好！",
    "谢谢",
    "谢谢！",
    "好的，谢谢！",
    "明白了，谢谢",
    "再见",
    "早上好",
    # chit-chat and assent
    "lol ok",
    "ok",
    "k",
    "sounds good",
    "Sounds good 👍",
    "cool, got it",
    "never mind",
    "I don't know",
    "haha",
    "nice one!",
    "Let me check",
    "no worries",
    "sorry my bad",
    "ok so I guess that works",
    "hmm let me think",
    "👍",
    "...",
    "嗯嗯",
    "收到",
    "哈哈哈好吧",
    "好的我知道了",
    "让我想想",
    "没问题",
    # bare questions
    "what time is it?",
    "how are you?",
    "what's up?",
    "Can you help me?",
    "What should I do next?",
    "is it raining?",
    "what do you think?",
    "any ideas?",
    "why",
    "Should we use Postgres?",
    "怎么办？",
    "这个怎么配置？",
    "为什么",
    "是吗",
    "在吗？",
    "今天星期几？",
    "你觉得呢",
    "为什么CI很慢",
]

HIGH: list[tuple[str, str]] = [
    # preferences
    ("I prefer tabs over spaces", "preference"),
    ("Use pnpm, not npm", "preference"),
    ("Never commit directly to main", "preference"),
    ("From now on, answer in Chinese", "preference"),
    ("The user likes concise answers with code first", "preference"),
    ("用户喜欢深色主题", "preference"),
    ("以后都用 pnpm", "preference"),
    ("不要在周五发布", "preference"),
    ("偏好简洁的回答", "preference"),
    ("回答总是用中文", "preference"),
    # decisions
    ("We chose Postgres for billing", "decision"),
    ("We decided to drop Python 3.9 support in v2.0", "decision"),
    ("Auth moves to OAuth device flow; sessions are deprecated", "decision"),
    ("我们决定计费服务使用 Postgres", "decision"),
    ("决定下个版本移除旧的 API", "decision"),
    # facts
    ("The staging DB is at db-staging.internal:5432", "fact"),
    ("Alice is the tech lead of the payments team", "fact"),
    ("Alice likes tea", "fact"),
    ("The user's timezone is Asia/Shanghai", "fact"),
    ("Our API rate limit is 100 requests per minute", "fact"),
    ("User's name is Bob", "fact"),
    ("The main branch is protected", "fact"),
    ("I live in Berlin", "fact"),
    ("The build uses Bazel", "fact"),
    ("张三是支付团队的技术负责人", "fact"),
    ("项目使用 Python 3.11", "fact"),
    ("服务器在上海机房", "fact"),
    ("用户是后端工程师", "fact"),
    # procedures and episodes
    ("Always run tests with -x before pushing", "procedure"),
    ("Deploy: run make release, then tag vX.Y.Z", "procedure"),
    ("记住：提交前先跑测试", "procedure"),
    ("公司的报销流程：先在系统提交，再找经理审批", "procedure"),
    ("Fixed the flaky test by pinning TZ=UTC in CI", "episode"),
    ("修复了 ERR_PNPM_OUTDATED_LOCKFILE：重新生成 pnpm-lock.yaml", "episode"),
    ("remember to buy milk", "note"),
]


@pytest.mark.parametrize("text", LOW)
def test_low_value_messages_are_declined_whatever_the_kind(text: str) -> None:
    for kind in KINDS:
        for key in (None, "pref.something"):
            score = score_importance(text, kind, key)
            assert score.value < THRESHOLD, (text, kind, key, score)


@pytest.mark.parametrize(("text", "kind"), HIGH)
def test_real_memories_score_at_least_half(text: str, kind: str) -> None:
    score = score_importance(text, kind)
    assert score.value >= 0.5, (text, kind, score)


def test_every_configured_kind_has_a_prior() -> None:
    assert set(KIND_PRIORS) == set(KINDS)
    assert KIND_PRIORS["preference"] > KIND_PRIORS["fact"] > KIND_PRIORS["note"]
    assert KIND_PRIORS["decision"] > KIND_PRIORS["episode"] > KIND_PRIORS["note"]


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown memory kind 'todo'"):
        score_importance("buy milk", "todo")


def test_key_raises_the_score() -> None:
    text = "answers should be short"
    plain = score_importance(text, "preference").value
    keyed = score_importance(text, "preference", key="pref.answer_length").value
    assert keyed > plain
    assert score_importance(text, "preference", key="  ").value == plain


def test_cues_raise_the_score_in_both_languages() -> None:
    cued = score_importance("always indent with tabs", "note").value
    assert cued > score_importance("we indent with tabs", "note").value
    assert score_importance("以后用深色主题", "note").value > score_importance("这里是深色主题", "note").value


def test_specificity_raises_the_score() -> None:
    vague = score_importance("the build failed on the server", "episode").value
    specific = score_importance("the build failed on ci-runner-3 with ERR_PNPM_OUTDATED_LOCKFILE", "episode").value
    assert specific > vague


def test_length_very_short_is_penalised_mid_is_best() -> None:
    short = score_importance("Postgres", "fact")
    mid = score_importance("Billing runs on Postgres", "fact")
    assert short.value < mid.value
    assert any("very short" in r for r in short.reasons)


def test_chinese_length_counts_characters() -> None:
    # Eight CJK characters and no spaces: mid length, not "one word".
    score = score_importance("用户喜欢深色主题", "fact")
    assert any("mid length" in r for r in score.reasons), score.reasons


def test_value_is_clamped_and_reasons_explain_it() -> None:
    s = score_importance(
        "Remember: always use `pnpm` in ~/src/app, never npm; we decided this in v2.1 (Alice, Bob)",
        "preference",
        key="pref.package_manager",
    )
    assert isinstance(s, ImportanceScore)
    assert 0.0 <= s.value <= 1.0
    assert s.value >= 0.9
    joined = " ".join(s.reasons)
    assert "has key" in joined and "cues" in joined and "specific" in joined


def test_caps_are_named_in_reasons() -> None:
    assert any("chit-chat" in r for r in score_importance("thanks!", "fact").reasons)
    assert any("question" in r for r in score_importance("what time is it?", "fact").reasons)


def test_a_question_with_a_statement_before_it_is_not_bare() -> None:
    assert score_importance("We use Postgres 15 for billing. Why is CI slow?", "fact").value >= 0.5


def test_empty_content_scores_zero() -> None:
    assert score_importance("   ", "fact").value == 0.0


def test_deterministic() -> None:
    a = score_importance("用户喜欢深色主题", "preference")
    b = score_importance("用户喜欢深色主题", "preference")
    assert a == b
