"""End-to-end tests of consolidate (and its undo through restore) with a real MCP client session.

Real server in-process (real model, SQLite file, Qdrant Edge), driven with the SDK's client.
"""

from __future__ import annotations

import json

import anyio
import pytest

from memvault.service.upkeep import housekeeping
from tests.conftest import CLIENT_NAME, call, call_error, db_rows

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PNPM = [
    ("The user prefers pnpm", ["tooling"], 0.6, "pref.package_manager"),
    ("The user uses pnpm for every project", ["node"], 0.7, None),
    ("The user switched the monorepo to pnpm", [], 0.5, None),
]
DISTINCT = ["The API server listens on port 8080", "The API server listens on port 8081"]
FIELDS = "id, user_id, project, kind, key, content, tags, importance, confidence, source, created_at, expires_at"


async def _store(c, items) -> list[str]:
    ids = []
    for content, tags, importance, *key in items:
        r = await call(c, "remember", content=content, tags=tags, importance=importance, kind="preference",
                       key=key[0] if key else None)
        assert r["status"] == "stored", r
        ids.append(r["id"])
    return ids


async def _until_superseded(d, ids) -> bool:
    """Whether every memory of ``ids`` is superseded within 30 s (the periodic job runs every
    0.36 s in these tests; a loaded machine may take long), looking every 0.1 s."""
    marks = ",".join("?" * len(ids))
    for _ in range(300):
        if {s for (s,) in db_rows(d, f"SELECT status FROM memories WHERE id IN ({marks})", tuple(ids))} == {"superseded"}:
            return True
        await anyio.sleep(0.1)
    return False


def _rows(d, ids) -> dict[str, tuple]:
    marks = ",".join("?" * len(ids))
    return {r[0]: r for r in db_rows(d, f"SELECT {FIELDS} FROM memories WHERE id IN ({marks})", tuple(ids))}


async def test_dry_run_proposes_and_writes_nothing(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        ids = await _store(c, PNPM)
        apart = await _store(c, [(t, [], 0.6) for t in DISTINCT])
        before = db_rows(d, "SELECT * FROM memories ORDER BY id"), db_rows(d, "SELECT * FROM memory_history")

        res = await call(c, "consolidate")
        assert res["applied"] is False and res["clusters_found"] == 1 and res["scanned"] == 5
        assert res["scope"]["project"] == "shop" and "remember(content=" in res["hint"]
        [p] = res["proposals"]
        assert sorted(p["member_ids"]) == sorted(ids) and not set(p["member_ids"]) & set(apart)
        assert p["kept_id"] == ids[2] and p["content"] == PNPM[2][0]  # the most content words
        assert p["importance"] == 0.7 and sorted(p["tags"]) == ["node", "tooling"]
        assert p["sources"] == [CLIENT_NAME] and p["merged_id"] is None and p["key"] == "pref.package_manager"
        assert [m["id"] for m in p["members"]] == ids  # oldest first
        assert (db_rows(d, "SELECT * FROM memories ORDER BY id"), db_rows(d, "SELECT * FROM memory_history")) == before


async def test_apply_supersedes_members_and_restore_undoes_it_losing_nothing(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        ids = await _store(c, PNPM)
        apart = await _store(c, [(t, [], 0.6) for t in DISTINCT])
        before = _rows(d, ids + apart)

        res = await call(c, "consolidate", dry_run=False)
        assert res["applied"] is True and "restore" in res["hint"]
        [p] = res["proposals"]
        merged = p["merged_id"]
        assert merged and merged not in ids
        got = db_rows(d, "SELECT id, status, superseded_by FROM memories WHERE id IN (?,?,?)", tuple(ids))
        assert sorted(got) == sorted((i, "superseded", merged) for i in ids)
        [(content, tags, importance, created_at, status)] = db_rows(
            d, "SELECT content, tags, importance, created_at, status FROM memories WHERE id=?", (merged,))
        assert content == PNPM[2][0] and sorted(json.loads(tags)) == ["node", "tooling"] and importance == 0.7
        assert created_at == min(before[i][10] for i in ids) and status == "active"
        [(new,)] = db_rows(d, "SELECT new FROM memory_history WHERE memory_id=? AND action='add'", (merged,))
        assert json.loads(new)["consolidated_from"] == ids
        assert _rows(d, apart) == {i: before[i] for i in apart}  # the distinct pair is untouched
        prof = await call(c, "get_profile")
        assert prof["preferences"]["pref.package_manager"]["id"] == merged  # the merged memory holds the key

        found = await call(c, "recall", query="which package manager does the user use", k=10)
        found_ids = [m["id"] for m in found["memories"]]
        assert merged in found_ids and not set(ids) & set(found_ids)

        again = await call(c, "consolidate")
        assert again["proposals"] == [] and again["clusters_found"] == 0

        undo = await call(c, "restore", id=merged)
        assert undo["status"] == "merge_undone" and undo["previous_status"] == "active"
        assert undo["restored_ids"] == ids and undo["retired_ids"] == [merged]

        found = await call(c, "recall", query="which package manager does the user use", k=10)
        found_ids = [m["id"] for m in found["memories"]]
        assert set(ids) <= set(found_ids) and merged not in found_ids
        prof = await call(c, "get_profile")
        assert prof["preferences"]["pref.package_manager"]["id"] == ids[0]  # the key is back with its member
        h = await call(c, "history", id=merged)
        assert [e["action"] for e in h["entries"]] == ["forgotten", "added"]
        assert h["entries"][1]["consolidated_from"] == ids and h["entries"][0]["consolidated_from"] is None
    assert _rows(d, ids + apart) == before  # every field of every member as it was
    assert db_rows(d, "SELECT status, index_state FROM memories WHERE id=?", (merged,)) == [("deleted", "indexed")]
    states = db_rows(d, "SELECT status, superseded_by, index_state FROM memories WHERE id IN (?,?,?)", tuple(ids))
    assert states == [("active", None, "indexed")] * 3


async def test_remember_superseding_two_ids_records_the_merge_and_restore_undoes_it(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        ids = await _store(c, PNPM[:2])
        before = _rows(d, ids)
        r = await call(c, "remember", content="The user uses pnpm, not npm or yarn, in all of their projects",
                       supersedes=ids, importance=0.8)
        assert r["status"] == "superseded" and sorted(r["superseded_ids"]) == sorted(ids)
        [(new,)] = db_rows(d, "SELECT new FROM memory_history WHERE memory_id=? AND action='add'", (r["id"],))
        assert json.loads(new)["consolidated_from"] == ids

        undo = await call(c, "restore", id=r["id"])
        assert undo["restored_ids"] == ids and undo["retired_ids"] == [r["id"]]
    assert _rows(d, ids) == before


async def test_bad_arguments_are_refused_with_what_is_allowed(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d", project="shop") as c:
        await _store(c, PNPM[:1])
        for limit in (0, 101):
            text = await call_error(c, "consolidate", limit=limit)
            assert "limit must be an integer from 1 to 100" in text and str(limit) in text
        text = await call_error(c, "consolidate", project="nowhere")
        assert "no memories in project 'nowhere'" in text
        plain = await call_error(c, "restore", id=(await call(c, "recall", query="pnpm"))["memories"][0]["id"])
        assert "already active" in plain


async def test_periodic_job_is_off_by_default_and_applies_when_set(tmp_path, mcp_client, monkeypatch):
    from memvault.config import Settings

    assert Settings().policies.consolidate_every_hours is None
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:  # stored first, so that no run sees half of them
        ids = await _store(c, PNPM)
        apart = await _store(c, [(t, [], 0.6) for t in DISTINCT])
    monkeypatch.setattr(housekeeping, "FLUSH_INTERVAL_S", 0.1)  # the timers' period
    async with mcp_client(d, project="shop", consolidate_every_hours=0.0001):
        await _until_superseded(d, ids)
        [(merged,)] = db_rows(d, "SELECT DISTINCT superseded_by FROM memories WHERE id IN (?,?,?)", tuple(ids))
        assert merged is not None
        assert db_rows(d, "SELECT actor FROM memory_history WHERE memory_id=? AND action='add'", (merged,)) == \
            [("memvault:consolidate",)]
        assert {s for (s,) in db_rows(d, "SELECT status FROM memories WHERE id IN (?,?)", tuple(apart))} == {"active"}


async def test_undo_of_a_merge_into_an_existing_memory_keeps_that_memory(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        [kept] = await _store(c, [("The user prefers pnpm", [], 0.6)])
        ids = await _store(c, [(t, [], 0.6) for t, *_ in PNPM[1:]])
        before = _rows(d, ids)
        # the same text again, naming two others in supersedes: the existing memory absorbs them
        r = await call(c, "remember", content="The user prefers pnpm", supersedes=ids, kind="preference")
        assert r["status"] == "superseded" and r["id"] == kept
        [(new,)] = db_rows(d, "SELECT new FROM memory_history WHERE memory_id=? AND action='reinforce'", (kept,))
        assert json.loads(new)["consolidated_from"] == ids

        undo = await call(c, "restore", id=kept)
        assert undo["restored_ids"] == ids and undo["retired_ids"] == [] and "stays" in undo["reason"]
        again = await call_error(c, "restore", id=kept)
        assert "none of them is still superseded by it" in again
    assert _rows(d, ids) == before
    assert db_rows(d, "SELECT status FROM memories WHERE id=?", (kept,)) == [("active",)]


# Facts that differ in one unit, a unit's case or a time of day: one pair per kind.
APART_PAIRS = [
    ("The cache limit of the billing service is 5 ms", "The cache limit of the billing service is 5 s"),
    ("The upload limit of the billing service is 100 Mb", "The upload limit of the billing service is 100 MB"),
    ("billing项目的会议安排在上午十点", "billing项目的会议安排在下午十点"),
    ("The billing standup is at 10 a.m. every day", "The billing standup is at 10 p.m. every day"),
    ("The billing freezer is kept at -18 °C", "The billing freezer is kept at -18 °F"),
]


async def test_facts_that_differ_in_a_unit_or_a_time_of_day_are_never_merged(tmp_path, mcp_client, monkeypatch):
    """Both are stored (write-time dedup), neither consolidate proposes nor the periodic job applies
    a merge of them, while restatements in the same store are merged."""
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        ids = await _store(c, PNPM)
        pairs = [await _store(c, [(a, [], 0.6), (b, [], 0.6)]) for a, b in APART_PAIRS]
        res = await call(c, "consolidate")
        grouped = [set(p["member_ids"]) for p in res["proposals"]]
        assert set(ids) in grouped, res
        for (a, b), pair in zip(APART_PAIRS, pairs, strict=True):
            assert not any(set(pair) <= g for g in grouped), (a, b, res["proposals"])
    monkeypatch.setattr(housekeeping, "FLUSH_INTERVAL_S", 0.1)  # the timers' period
    async with mcp_client(d, project="shop", consolidate_every_hours=0.0001):
        assert await _until_superseded(d, ids)
        kept = [i for pair in pairs for i in pair]
        marks = ",".join("?" * len(kept))
        assert {s for (s,) in db_rows(d, f"SELECT status FROM memories WHERE id IN ({marks})", tuple(kept))} == \
            {"active"}
