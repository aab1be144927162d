"""Time expressions in queries (English and Chinese) -> spans; which memories are of them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memvault.policy.time_expressions import SLACK_DAYS, in_spans, time_boosted, time_spans

NOW = datetime(2023, 11, 15, 12, 30, tzinfo=timezone.utc).timestamp()  # a Wednesday


def day(s: str) -> float:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc).timestamp()


def dates(query: str) -> list[tuple[str, str]]:
    def f(t: float) -> str:
        return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d")
    return [(f(a), f(b)) for a, b in time_spans(query, NOW)]


@pytest.mark.parametrize(("query", "want"), [
    ("What painting did Melanie show on October 13, 2023?", [("2023-10-13", "2023-10-14")]),
    ("What did Gina find on 1 February, 2023?", [("2023-02-01", "2023-02-02")]),
    ("the deploy of 2023-03-07", [("2023-03-07", "2023-03-08")]),
    ("What setback did Melanie face in October 2023?", [("2023-10-01", "2023-11-01")]),
    ("How many times did she go to the beach in 2023?", [("2023-01-01", "2024-01-01")]),
    ("what did we decide yesterday", [("2023-11-14", "2023-11-15")]),
    ("notes from today", [("2023-11-15", "2023-11-16")]),
    ("what happened last week", [("2023-11-06", "2023-11-13")]),
    ("What game did I beat last weekend?", [("2023-11-11", "2023-11-13")]),
    ("the plan from last month", [("2023-10-01", "2023-11-01")]),
    ("what did I buy last May", [("2023-05-01", "2023-06-01")]),
    ("a trip last year", [("2022-01-01", "2023-01-01")]),
    ("the kitchen appliance I bought 10 days ago", [("2023-11-02", "2023-11-08")]),
    ("上周我们讨论了什么", [("2023-11-06", "2023-11-13")]),
    ("昨天的会议", [("2023-11-14", "2023-11-15")]),
    ("上个月的账单", [("2023-10-01", "2023-11-01")]),
    ("去年五月买了什么", [("2022-05-01", "2022-06-01")]),
    ("2023年5月3日的会议", [("2023-05-03", "2023-05-04")]),
    ("2023年的计划", [("2023-01-01", "2024-01-01")]),
    ("三天前部署的版本", [("2023-11-11", "2023-11-13")]),
])
def test_spans_named_by_a_query(query: str, want: list[tuple[str, str]]) -> None:
    assert dates(query) == want


@pytest.mark.parametrize("query", ["When did Melanie go camping in June?", "六月的旅行", "6月的旅行"])
def test_a_month_without_a_year_is_that_month_of_every_past_year(query: str) -> None:
    got = dates(query)
    assert ("2023-06-01", "2023-07-01") in got and ("2022-06-01", "2022-07-01") in got
    assert all(a[5:7] == "06" for a, _ in got)
    assert ("2024-06-01", "2024-07-01") not in got  # not after now


@pytest.mark.parametrize("query", ["You may go ahead", "What did the cat do?", "the 2023 budget file budget.xlsx",
                                   "用功能开关代替长期分支", "", "?!", "February 30, 2023", "2023年13月",
                                   "100000 years ago", "9999999999999 days ago", "99999999999999999999天前"])
def test_no_time_named_and_nonsense_dates_name_none(query: str) -> None:
    assert time_spans(query, NOW) == []


def test_in_spans_counts_memories_stored_during_or_soon_after() -> None:
    june = [(day("2023-06-01"), day("2023-07-01"))]
    assert in_spans(day("2023-06-10"), june)
    assert in_spans(day("2023-07-05"), june)  # told about it a few days later
    assert not in_spans(day("2023-07-01") + (SLACK_DAYS + 1) * 86400, june)
    assert not in_spans(day("2023-05-31"), june)
    assert not in_spans(day("2023-06-10"), [])


def test_time_boosted_raises_memories_of_the_span_and_keeps_the_rest_in_order() -> None:
    june = [(day("2023-06-01"), day("2023-07-01"))]
    inside = time_boosted(0.5, day("2023-06-10"), june)
    outside_hi = time_boosted(0.8, day("2023-01-10"), june)
    outside_lo = time_boosted(0.65, day("2023-01-10"), june)
    assert inside > outside_lo and outside_hi > outside_lo
    assert 0.0 <= outside_lo <= inside <= 1.0
    assert time_boosted(0.42, day("2023-06-10"), []) == 0.42
    assert time_boosted(1.0, day("2023-06-10"), june) == pytest.approx(1.0)
