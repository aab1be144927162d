"""Reply budgets (memvault.policy.budget): per-item cuts, the total, the stopping rule."""

from __future__ import annotations

import pytest

from memvault.policy.budget import (
    MIN_ROOM_CHARS,
    Fitted,
    cut_to_budget,
    whole_within_budget,
)
from memvault.policy.text import MARKER_TEMPLATE


def ident(x: str) -> str:
    return x


def test_short_texts_are_kept_whole_and_in_order() -> None:
    kept, truncated = cut_to_budget(["a" * 100, "b" * 100], ident, per_item=200, total=1000)
    assert kept == [Fitted("a" * 100, "a" * 100, False), Fitted("b" * 100, "b" * 100, False)]
    assert truncated is False


def test_a_long_text_is_cut_to_the_per_item_budget_with_a_marker() -> None:
    long = "word " * 100  # 500 chars
    kept, truncated = cut_to_budget([long, "short"], ident, per_item=200, total=10_000)
    assert [k.cut for k in kept] == [True, False] and truncated is True
    head = kept[0].text.split(" …")[0]
    assert len(kept[0].text) <= 200 and kept[0].text == head + MARKER_TEMPLATE.format(n=500 - len(head))
    assert kept[1].text == "short"


def test_the_total_shrinks_the_room_of_later_items_then_stops_the_list() -> None:
    items = ["x" * 300, "y" * 300, "z" * 300, "w" * 300]
    kept, truncated = cut_to_budget(items, ident, per_item=300, total=700)
    # 300 + 300 used; the third gets the 100 left (cut), the fourth has no room and is left out.
    assert [k.item for k in kept] == items[:3]
    assert [k.cut for k in kept] == [False, False, True]
    assert sum(len(k.text) for k in kept) <= 700 and truncated is True


def test_less_than_the_minimum_room_left_stops_before_the_item() -> None:
    kept, truncated = cut_to_budget(["a" * 100, "b" * 10], ident, per_item=100, total=100 + MIN_ROOM_CHARS - 1)
    assert [k.item for k in kept] == ["a" * 100] and truncated is True
    kept, truncated = cut_to_budget(["a" * 100, "b" * 10], ident, per_item=100, total=100 + MIN_ROOM_CHARS)
    assert [k.text for k in kept] == ["a" * 100, "b" * 10] and truncated is False


def test_the_text_is_read_from_the_item() -> None:
    rows = [{"id": 1, "content": "one"}, {"id": 2, "content": "two"}]
    kept, _ = cut_to_budget(rows, lambda r: r["content"], per_item=100, total=1000)
    assert [(k.item["id"], k.text) for k in kept] == [(1, "one"), (2, "two")]


def test_nothing_to_fit_is_not_truncated() -> None:
    assert cut_to_budget([], ident, per_item=100, total=0) == ([], False)
    assert whole_within_budget([], len, total=0) == ([], False)


@pytest.mark.parametrize("per_item,total,min_room", [(79, 1000, 80), (100, -1, 80), (100, 1000, 0)])
def test_impossible_budgets_are_refused(per_item: int, total: int, min_room: int) -> None:
    with pytest.raises(ValueError, match="need 1 <= min_room <= per_item and total >= 0"):
        cut_to_budget(["a"], ident, per_item=per_item, total=total, min_room=min_room)


def test_whole_items_stop_at_the_first_that_does_not_fit() -> None:
    items = ["aaaa", "bbb", "cccccc", "d"]
    assert whole_within_budget(items, len, total=7) == (["aaaa", "bbb"], True)
    assert whole_within_budget(items, len, total=14) == (items, False)
    assert whole_within_budget(items, len, total=3) == ([], True)  # "d" would fit, but comes after worse-fitting ones
    with pytest.raises(ValueError, match="total must be 0 or more characters, got -1"):
        whole_within_budget(items, len, total=-1)
