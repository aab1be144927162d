"""The meaning guard (memvault.policy.meaning) as write-time dedup and consolidation use it.

Pairs that differ only in a unit, a unit's case, a time of day or negation stay apart in
both gates (cosines given by hand, at the top of what the model gives such pairs); the
same facts in other words or with an added detail still pass. The real model and store:
tests/service/test_server_consolidate.py.
"""

from __future__ import annotations

import pytest

from memvault.policy.consolidation import fold, restates
from memvault.policy.dedup import is_near_duplicate
from memvault.policy.meaning import marks, same_meaning

# Each pair: one fact and another that differs in one meaning-bearing token.
APART = [
    ("The cache limit is 5 ms", "The cache limit is 5 s", "unit"),
    ("The upload limit is 100 Mb", "The upload limit is 100 MB", "unit case"),
    ("The buffer holds 10 KiB", "The buffer holds 10 KB", "binary unit"),
    ("The uplink is 10 Gb/s", "The uplink is 10 GB/s", "rate case"),
    ("The disk has 2 GB free", "The disk has 2 Gb free", "unit case"),
    ("The freezer is kept at -18 °C", "The freezer is kept at -18 °F", "temperature"),
    ("The server room is kept at 20°C", "The server room is kept at 20°F", "temperature, no space"),
    ("Timeouts in the config are in ms", "Timeouts in the config are in s", "unit without a number"),
    ("The retry delay is 30 seconds", "The retry delay is 30 minutes", "spelt-out unit"),
    ("The plan costs $5 a month", "The plan costs €5 a month", "currency"),
    ("The discount is 5%", "The discount is 5‰", "per cent / per mille"),
    ("The standup is at 10 AM", "The standup is at 10 PM", "AM / PM"),
    ("The standup is at 10 a.m.", "The standup is at 10 p.m.", "a.m. / p.m."),
    ("The standup is at 10:30am", "The standup is at 10:30pm", "am / pm attached"),
    ("The backup runs in the morning", "The backup runs in the evening", "part of the day"),
    ("billing项目的会议安排在上午十点", "billing项目的会议安排在下午十点", "上午 / 下午"),
    ("billing项目的会议安排在晚上十点", "billing项目的会议安排在凌晨十点", "晚上 / 凌晨"),
    ("数据库备份在中午进行", "数据库备份在晚上进行", "中午 / 晚上"),
    ("缓存的超时时间是5秒", "缓存的超时时间是5毫秒", "秒 / 毫秒"),
    ("会議は午前10時です", "会議は午後10時です", "午前 / 午後"),
    ("회의는 오전 10시입니다", "회의는 오후 10시입니다", "오전 / 오후"),
    ("The user uses Docker for local development", "The user never uses Docker for local development", "negation"),
]

SAME = [
    ("The discount is 5%.", "The discount is 5 %"),
    ("The cache limit is 5 ms", "The cache limit is 5ms"),
    ("The standup is at 10:30 am", "The standup is at 10:30am"),
    ("The API server listens on port 8080", "Port 8080 is where the API server listens"),
    ("The project uses PostgreSQL", "The project uses PostgreSQL 15"),  # a detail added, nothing changed
    ("The user dislikes emojis in code comments", "The user does not want emojis in code comments"),
    ("会议在上午十点", "会议安排在上午十点"),
]


@pytest.mark.parametrize(("a", "b", "kind"), APART, ids=[k for *_, k in APART])
def test_one_guard_keeps_them_apart_at_write_time_and_in_consolidation(a: str, b: str, kind: str) -> None:
    assert not same_meaning(marks(a), marks(b)) and not same_meaning(marks(b), marks(a))
    assert not restates(fold(a), fold(b), 0.995, 0.88) and not restates(fold(b), fold(a), 0.995, 0.88)
    assert not is_near_duplicate(a, b, 0.999, 0.97) and not is_near_duplicate(b, a, 0.999, 0.97)


@pytest.mark.parametrize(("a", "b"), SAME)
def test_the_same_fact_in_other_words_keeps_its_marks(a: str, b: str) -> None:
    assert same_meaning(marks(a), marks(b)) and same_meaning(marks(b), marks(a))


def test_restatements_still_merge_where_the_words_agree() -> None:
    assert is_near_duplicate("The cache limit is 5 ms.", "the cache limit is 5 ms", 0.99, 0.97)
    assert restates(fold("The user prefers pnpm"), fold("The user uses pnpm for every project"), 0.95, 0.88)
    assert restates(fold("会议在上午十点"), fold("会议安排在上午十点"), 0.95, 0.88)
