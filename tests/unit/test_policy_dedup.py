"""Near-duplicate gate: the pairs measured for calibration, as a table."""

import pytest

from memvault.policy.dedup import content_words, is_near_duplicate

DUPLICATES = [
    ("We chose Postgres for the billing service", "We chose Postgres for the billing service."),
    ("The user prefers pnpm over npm", "the user prefers pnpm over npm!"),
    ("The user prefers dark mode", "The user prefers the dark mode"),
    ("用户喜欢深色主题", "用户喜欢深色主题。"),
    ("我们决定用 Postgres 做计费服务", "我们决定用Postgres做计费服务"),
    ("The user prefers tabs in C++", "the user prefers tabs in C++."),
    ("Python ≥ 3.10 is required", "Python >= 3.10 is required"),
    ("The user doesn't like tabs", "The user does not like tabs"),
    ("The team can't merge", "The team cannot merge"),
    ("Please use pnpm", "Use pnpm"),
    ("请用空格缩进", "用空格缩进"),
    ("用户喜欢 C++ 语言", "用户喜欢 Ｃ＋＋ 语言"),
    ("The discount is 5%.", "The discount is 5 %"),
    ("Reviews are required - always", "Reviews are required, always"),
    ("A user prefers dark mode", "The user prefers dark mode"),
]
DIFFERENT = [
    ("The user prefers pnpm over npm", "The user prefers npm over pnpm"),
    ("用户喜欢深色主题", "用户喜欢浅色主题"),
    ("Service number 1 listens on port 8001", "Service number 2 listens on port 8002"),
    ("The deploy script must run with Node 20", "The deploy script must run with Node 18"),
    ("The user prefers dark mode", "The user does not like dark mode"),
    ("The user prefers tabs in C", "The user prefers tabs in C++"),
    ("The user prefers tabs in C#", "The user prefers tabs in F#"),
    ("The project requires Python >= 3.10", "The project requires Python <= 3.10"),
    ("The project requires Python 3.10", "The project requires Python 3.1"),
    ("The offset is -5", "The offset is 5"),
    ("The timezone is UTC+8", "The timezone is UTC-8"),
    ("The API accepts JSON and YAML", "The API accepts JSON or YAML"),
    ("Migrate the data to Postgres", "Migrate the data from Postgres"),
    ("Compile with debug symbols", "Compile without debug symbols"),
    ("The server is down", "The server was down"),
    ("The link is 100 Mb", "The link is 100 MB"),
    ("Run ls -l", "Run ls -L"),
    ("Separate the fields with ,", "Separate the fields with ;"),
    ("Plan A was chosen", "Plan was chosen"),
    ("用户用过 Rust", "用户没用过 Rust"),
    ("用户明天请假", "用户明天假"),
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
    assert content_words("The project requires Python >= 3.10.") == ["project", "requires", "python", ">=", "3.10"]
    assert content_words("Tabs in C++.") == ["tabs", "in", "c", "++"]
    assert content_words("The offset is −5") == ["offset", "is", "-", "5"]
    assert content_words("Pass -V, not -v") == ["pass", "-", "V", "not", "-", "v"]
