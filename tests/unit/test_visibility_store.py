"""Visibility in the SQLite fact store (no model): migration 7, who reads what, key slots per owner."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from memvault.policy.text import content_hash
from memvault.storage.facts import FactStore
from memvault.storage.history import HistoryStore
from memvault.storage.memories import MemoryRow
from memvault.storage.migrations import LATEST_VERSION, MIGRATIONS
from memvault.storage.profile import ProfileReader

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0


def row(content: str, *, key: str | None = None, visibility: str = "shared", agent: str | None = None) -> MemoryRow:
    return MemoryRow(id=str(uuid.uuid4()), user_id="u1", project="p", kind="fact", key=key, content=content,
                     importance=0.6, created_at=NOW, updated_at=NOW, last_accessed_at=NOW,
                     content_hash=content_hash(content), embedding_model="m", visibility=visibility, agent=agent)


async def test_memories_stored_before_schema_7_are_shared_with_an_unknown_writer(tmp_path):
    db = tmp_path / "m.db"
    con = sqlite3.connect(db)
    for number, script in MIGRATIONS:
        if number <= 6:
            con.executescript(script)
    con.execute("PRAGMA user_version = 6")
    mid = str(uuid.uuid4())
    con.execute("INSERT INTO memories (id, user_id, project, kind, content, importance, created_at, updated_at,"
                " last_accessed_at, content_hash, embedding_model, index_state) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [mid, "u1", "p", "fact", "The build runs on Tuesdays", 0.5, NOW, NOW, NOW, "h", "m", "indexed"])
    con.commit()
    con.close()
    store = await FactStore.open(db)
    try:
        assert await store.schema_version() == LATEST_VERSION  # every migration ran, 7 among them
        (got,) = await store.get([mid])
        assert (got.visibility, got.agent, got.private_to, got.index_state) == ("shared", None, None, "indexed")
        assert [r.id for r in await store.select("u1", reader="any-agent")] == [mid]
    finally:
        await store.close()


async def test_readers_see_shared_memories_and_their_own_private_ones(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    try:
        shared = row("The team deploys on Tuesdays", agent="b")
        mine = row("Drafts live in notes/billing", visibility="private", agent="a")
        theirs = row("Scratch files live in /tmp/b", visibility="private", agent="b")
        for r in (shared, mine, theirs):
            await store.add(r, actor="t")
        assert {r.id for r in await store.select("u1", reader="a")} == {shared.id, mine.id}
        assert {r.id for r in await store.select("u1", reader="b")} == {shared.id, theirs.id}
        assert {r.id for r in await store.select("u1", reader="")} == {shared.id}  # a nameless client
        assert {r.id for r in await store.select("u1")} == {shared.id, mine.id, theirs.id}  # the user
        assert await store.counts_by_kind("u1", ["p"], NOW, reader="a") == {"fact": 2}
        assert await store.counts_by_kind("u1", ["p"], NOW) == {"fact": 3}
        top = await ProfileReader.on(store).top_unkeyed("u1", ["p"], ["fact"], NOW, 10, reader="a")
        assert {r.id for r in top} == {shared.id, mine.id}
        history = HistoryStore.on(store)
        assert (await history.entries("u1", memory_id=theirs.id, limit=5, reader="a"))[1] == 0
        assert (await history.entries("u1", memory_id=theirs.id, limit=5, reader="b"))[1] == 1
    finally:
        await store.close()


async def test_a_key_is_one_slot_per_owner(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    try:
        shared = row("The user edits in Emacs", key="pref.editor", agent="b")
        mine = row("The user edits in Vim here", key="pref.editor", visibility="private", agent="a")
        theirs = row("The user edits in Nano there", key="pref.editor", visibility="private", agent="b")
        for r in (shared, mine, theirs):
            await store.add(r, actor="t")
        assert [r.id for r in await store.active_by_key("u1", "p", "pref.editor", NOW)] == [shared.id]
        assert [r.id for r in await store.active_by_key("u1", "p", "pref.editor", NOW, private_to="a")] == [mine.id]
        assert [r.id for r in await store.active_by_key("u1", "p", "pref.editor", NOW, private_to="b")] == [theirs.id]
        keyed = await ProfileReader.on(store).keyed("u1", ["p"], NOW, 10, reader="a")
        assert {r.id for r in keyed} == {shared.id, mine.id}
        by_key = await HistoryStore.on(store).entries("u1", key="pref.editor", limit=10, reader="a")
        assert {e.memory_id for e, _ in by_key[0]} == {shared.id, mine.id}
    finally:
        await store.close()
