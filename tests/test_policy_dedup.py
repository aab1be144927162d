"""Near-duplicate gate: the pairs measured for calibration, as a table."""

import pytest

from memvault.policy.dedup import content_words, is_near_duplicate

DUPLICATES = [
    ("We chose Postgres for the billing service", "We chose Postgres for the billing service."),
    ("The user prefers pnpm over npm", "the user prefers pnpm over npm!"),
    ("The user prefers dark mode", "The user prefers the dark mode"),
    ("用户喜欢深色主题", "用户喜欢深色主题。"),
    ("我们决定用 Postgres 做计费服务", "我们决定用Postgres做计费服务"),
]
DIFFERENT = [
    ("The user prefers pnpm over npm", "The user prefers npm over pnpm"),
    ("用户喜欢深色主题", "用户喜欢浅色主题"),
    ("Service number 1 listens on port 8001", "Service number 2 listens on port 8002"),
    ("The deploy script must run with Node 20", "The deploy script must run with Node 18"),
    ("The user prefers dark mode", "The user does not like dark mode"),
]


@pytest.mark.parametrize("a,b", DUPLICATES)
def test_duplicates_pass(a, b):
    assert is_near_duplicate(a, b, cosine=0.975, threshold=0.97)


@pytest.mark.parametrize("a,b", DIFFERENT)
def test_different_facts_never_merge_even_at_high_cosine(a, b):
    assert not is_near_duplicate(a, b, cosine=0.999, threshold=0.97)


def test_cosine_gate_applies():
    a, b = DUPLICATES[0]
    assert not is_near_duplicate(a, b, cosine=0.96, threshold=0.97)


def test_content_words_shape():
    assert content_words("We chose Postgres.") == ["we", "chose", "postgres"]
    assert content_words("用户 喜欢") == ["用", "户", "喜", "欢"]
    assert content_words("ERR_PNPM_OUTDATED_LOCKFILE!") == ["err", "_", "pnpm", "_", "outdated", "_", "lockfile"]
