"""Time arguments mean what a person means: a date alone is the whole day, naive times are UTC."""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta, timezone

import pytest

from memvault.clock import parse_iso, parse_iso_span
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from tests.conftest import call, call_error


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("value,start,end", [
    ("2026-11-29", "2026-11-29T00:00:00", "2026-11-30T00:00:00"),
    ("20261129", "2026-11-29T00:00:00", "2026-11-30T00:00:00"),
    ("2026-11-29T14", "2026-11-29T14:00:00", "2026-11-29T15:00:00"),
    ("2026-11-29T14:20", "2026-11-29T14:20:00", "2026-11-29T14:21:00"),
    ("2026-11-29 14:20:05", "2026-11-29T14:20:05", "2026-11-29T14:20:06"),
    ("2026-11-29T14:20Z", "2026-11-29T14:20:00", "2026-11-29T14:21:00"),
    ("2026-11-29T14:20:05-05:00", "2026-11-29T19:20:05", "2026-11-29T19:20:06"),
    ("2026-12", "2026-12-01T00:00:00", "2027-01-01T00:00:00"),
    ("2026", "2026-01-01T00:00:00", "2027-01-01T00:00:00"),
    ("2026-11-29T14:20:05.250", "2026-11-29T14:20:05.250", "2026-11-29T14:20:05.250"),
])
def test_a_value_names_the_span_of_its_precision(value, start, end):
    assert parse_iso_span(value) == (_ts(start), _ts(end))
    assert parse_iso(value) == _ts(start)


def test_until_is_the_last_instant_of_its_span_and_since_the_first():
    day_end = _ts("2026-11-30T00:00:00")
    assert v.check_time("since", "2026-11-29") == _ts("2026-11-29T00:00:00")
    until = v.check_time("until", "2026-11-29", end=True)
    assert until < day_end and until == math.nextafter(day_end, -math.inf)
    assert v.check_time("until", "2026-11-29T23:59:59.999", end=True) == _ts("2026-11-29T23:59:59.999")


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "29/11/2026", "", "x" * 10_000])
def test_bad_times_are_refused_with_the_forms_accepted(bad):
    with pytest.raises(InvalidArgument, match=r"until.*not a date; use ISO 8601 such as 2026-11-29"):
        v.check_time("until", bad, end=True)


@pytest.mark.parametrize("bad", [-1, math.inf, math.nan, 1e308, 36501])
def test_ages_must_be_finite_days(bad):
    with pytest.raises(InvalidArgument, match=r"older_than_days is .*; it must be a number of days from 0 to 36500"):
        v.check_age("older_than_days", bad)


def _noon_offset(days: float = 0) -> float:
    """A clock offset that puts the server at 12:00 UTC today (+ ``days``), away from midnight."""
    today = datetime.now(timezone.utc).date()
    noon = datetime(today.year, today.month, today.day, 12, tzinfo=timezone.utc) + timedelta(days=days)
    return noon.timestamp() - time.time()


@pytest.mark.anyio
async def test_recall_until_today_includes_what_was_made_today(tmp_path, mcp_client):
    d = tmp_path / "d"
    today = datetime.now(timezone.utc).date()
    async with mcp_client(d, clock_offset_s=_noon_offset()) as c:
        m = await call(c, "remember", content="The billing service runs on Postgres 16")

        async def ids(**kw):
            return [x["id"] for x in (await call(c, "recall", query="billing database", **kw))["memories"]]

        assert await ids(until=today.isoformat()) == [m["id"]]
        assert await ids(since=today.isoformat(), until=today.isoformat()) == [m["id"]]
        assert await ids(until=f"{today.isoformat()}T12") == [m["id"]]
        assert await ids(until=f"{today.isoformat()}T12:00") == [m["id"]]
        assert await ids(until=f"{today.isoformat()}T11:59") == []
        assert await ids(until=(today - timedelta(days=1)).isoformat()) == []
        assert await ids(since=(today + timedelta(days=1)).isoformat()) == []
        assert await ids(since=today.strftime("%Y-%m"), until=today.strftime("%Y")) == [m["id"]]
        err = await call_error(c, "recall", query="billing", since=today.isoformat(),
                               until=(today - timedelta(days=1)).isoformat())
        assert "since is after until" in err


@pytest.mark.anyio
async def test_forget_older_than_days_counts_from_the_servers_clock(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d, clock_offset_s=_noon_offset()) as c:
        m = await call(c, "remember", content="The billing service runs on Postgres 16")
        err = await call_error(c, "forget", older_than_days=1e308)
        assert "older_than_days" in err and "from 0 to 36500" in err
    async with mcp_client(d, clock_offset_s=_noon_offset(days=2)) as c:
        assert [x["id"] for x in (await call(c, "forget", older_than_days=1.5, dry_run=True))["forgotten"]] == [m["id"]]
        assert (await call(c, "forget", older_than_days=2.5, dry_run=True))["count"] == 0
        got = await call(c, "forget", older_than_days=1.5, query="the billing service runs on Postgres 16", dry_run=True)
        assert [x["id"] for x in got["forgotten"]] == [m["id"]]
