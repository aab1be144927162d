"""The SQLite fact store on a real file: migrations, writes, history, purge, filters."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from memvault.policy.text import content_hash
from memvault.policy.units import SECONDS_PER_DAY
from memvault.storage.facts import FactStore
from memvault.storage.memories import MemoryRow
from memvault.storage.migrations import LATEST_VERSION, SchemaTooNew

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0


def row(content: str, *, project: str = "", kind: str = "fact", key: str | None = None, tags=(),
        expires_at: float | None = None, user: str = "u1", at: float = NOW) -> MemoryRow:
    return MemoryRow(id=str(uuid.uuid4()), user_id=user, project=project, kind=kind, key=key, content=content,
                     tags=list(tags), importance=0.6, created_at=at, updated_at=at, last_accessed_at=at,
                     expires_at=expires_at, content_hash=content_hash(content), embedding_model="m")


async def test_migrates_and_reopens(tmp_path):
    db = tmp_path / "m.db"
    store = await FactStore.open(db)
    assert await store.schema_version() == LATEST_VERSION
    r = row("hello world fact")
    await store.add(r, actor="t")
    await store.close()
    assert db.stat().st_mode & 0o777 == 0o600
    store = await FactStore.open(db)
    got = await store.get([r.id])
    assert got[0].content == "hello world fact" and got[0].index_state == "pending"
    await store.mark_indexed([r.id])
    assert (await store.get([r.id]))[0].index_state == "indexed"
    assert await store.pending() == []
    await store.close()


async def test_refuses_a_database_from_a_newer_memvault(tmp_path):
    db = tmp_path / "m.db"
    await (await FactStore.open(db)).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew, match=f"schema {LATEST_VERSION + 1}.*reads schema {LATEST_VERSION} at most"):
        await FactStore.open(db)
    conn = sqlite3.connect(db)  # nothing was written: still the newer version
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION + 1
    conn.close()


async def test_supersede_history_and_key_lookup(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    a = row("tabs", key="pref.indent", kind="preference")
    await store.add(a, actor="t")
    assert [r.id for r in await store.active_by_key("u1", "", "pref.indent", NOW)] == [a.id]
    b = row("spaces", key="pref.indent", kind="preference", at=NOW + 1)
    await store.add(b, supersede=[a], actor="t")
    assert [r.id for r in await store.active_by_key("u1", "", "pref.indent", NOW)] == [b.id]
    old = (await store.get([a.id]))[0]
    assert old.status == "superseded" and old.superseded_by == b.id
    hist = await store.history(a.id)
    assert [h.action for h in hist] == ["add", "supersede"]
    assert hist[1].old["status"] == "active" and hist[1].new["status"] == "superseded"
    await store.close()


async def test_select_filters_and_expiry(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    r1 = row("one", project="p", tags=["ops", "db"])
    r2 = row("two", project="", kind="note", tags=["ui"], at=NOW - 10 * SECONDS_PER_DAY)
    r3 = row("three", project="q")
    r4 = row("four", project="p", expires_at=NOW - 1)
    r5 = row("five", project="p", user="u2")
    for r in (r1, r2, r3, r4, r5):
        await store.add(r, actor="t")
    ids = lambda rows: {r.id for r in rows}  # noqa: E731
    assert ids(await store.select("u1", projects=["p", ""], now=NOW)) == {r1.id, r2.id}
    assert ids(await store.select("u1", projects=["p", ""])) == {r1.id, r2.id, r4.id}
    assert ids(await store.select("u1", tags_any=["db", "zzz"], now=NOW)) == {r1.id}
    assert ids(await store.select("u1", kinds=["note"], now=NOW)) == {r2.id}
    assert ids(await store.select("u1", created_before=NOW - SECONDS_PER_DAY, now=NOW)) == {r2.id}
    assert ids(await store.select("u2", now=NOW)) == {r5.id}
    assert await store.count_active("u1", "p", NOW) == 1
    assert ids(await store.expired(NOW)) == {r4.id}
    assert await store.indexable_ids(NOW) == {r1.id, r2.id, r3.id, r5.id}
    await store.close()


async def test_purge_erases_content_everywhere(tmp_path):
    db = tmp_path / "m.db"
    store = await FactStore.open(db)
    r = row("the launch code word is pineapple-zebra")
    await store.add(r, actor="t")
    await store.set_status([r], "deleted", action="delete", now=NOW, actor="t")
    await store.purge([r], action="purge", now=NOW, actor="t")
    assert await store.get([r.id]) == []
    hist = await store.history(r.id)
    assert [h.action for h in hist] == ["add", "delete", "purge"]
    assert all(h.old is None and h.new is None for h in hist)
    await store.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"pineapple-zebra" not in blob


async def test_failed_transaction_changes_nothing(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    a = row("first")
    await store.add(a, actor="t")
    dup = row("second")
    dup.id = a.id  # primary key clash inside the transaction
    with pytest.raises(sqlite3.IntegrityError):
        await store.add(dup, actor="t")
    assert [h.action for h in await store.history(a.id)] == ["add"]
    assert (await store.get([a.id]))[0].content == "first"
    await store.close()


async def test_count_bound_follows_own_writes_and_recounts_after_another_process(tmp_path):
    """count_active_bound never reads below the true count: exact after a count, at least the
    count after this store's own writes, and a fresh count once another connection committed."""
    db = tmp_path / "m.db"
    store = await FactStore.open(db)
    for i in range(3):
        await store.add(row(f"fact number {i} about the build"), actor="t")
    assert await store.count_active_bound("u1", "", NOW) == 3  # first ask: counted
    await store.add(row("one more fact about the build"), actor="t")
    assert await store.count_active_bound("u1", "", NOW) >= 4
    assert await store.count_active("u1", "", NOW) == 4
    assert await store.count_active_bound("u1", "", NOW) == 4  # exact right after a count
    other = await FactStore.open(db)  # another process's connection adds two
    for i in range(2):
        await other.add(row(f"fact from elsewhere {i}"), actor="t")
    await other.close()
    assert await store.count_active_bound("u1", "", NOW) == 6
    await store.close()


async def test_touch_records_the_access_in_one_statement(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    a = row("the deploy runs on fridays")
    await store.add(a, actor="t")
    await store.touch([a.id], NOW + 60)
    await store.touch([a.id], NOW + 120)
    got = (await store.get([a.id]))[0]
    assert (got.access_count, got.last_accessed_at) == (2, NOW + 120)
    await store.close()


async def test_written_beside_follows_insertion_order_per_user_project_and_writer(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    mine = [row(f"first conversation line {i}") for i in range(6)]
    for r in mine:
        r.agent = "claude-code"
    mine[4].visibility = "private"  # claude-code's own, unseen by other agents
    mine[5].expires_at = NOW - 1  # expired: gone for everybody
    other_agent = row("another client wrote this in between")
    other_agent.agent = "cursor"
    other_project = row("a line of another project", project="p2")
    other_project.agent = "claude-code"
    other_user = row("another user's line", user="u2")
    other_user.agent = "claude-code"
    await store.add(mine[0], actor="t")
    for extra in (other_agent, other_project, other_user):
        await store.add(extra, actor="t")
    for r in mine[1:]:
        await store.add(r, actor="t")
    await store.set_status([mine[2]], "deleted", action="delete", now=NOW, actor="t")
    ids = [mine[0].id, mine[1].id, mine[3].id, other_agent.id, "no-such-id"]
    got = await store.written_beside(ids, NOW)
    assert got == {
        mine[0].id: (None, mine[1].id),  # the other writer, project and user are skipped
        mine[1].id: (mine[0].id, mine[3].id),  # a deleted memory is no neighbour
        mine[3].id: (mine[1].id, mine[4].id),  # the user reads the private memory; the expired one is gone
        other_agent.id: (None, None),
    }
    assert (await store.written_beside(ids, NOW, reader="claude-code"))[mine[3].id] == (mine[1].id, mine[4].id)
    # another agent does not see the private memory: as if it were not there
    assert (await store.written_beside(ids, NOW, reader="cursor"))[mine[3].id] == (mine[1].id, None)
    assert await store.written_beside([], NOW) == {}
    await store.close()


async def test_written_beside_two_places_answers_as_a_second_call_on_what_the_first_names(tmp_path):
    """``levels=2`` in one statement: the first answer, plus that of each memory it names that
    is not asked about, as a second call would give it, for every reader (writers, visibility,
    deleted and expired memories mixed in, and a hit whose neighbour is far from it)."""
    from memvault.storage.facts import BESIDE_SCAN

    store = await FactStore.open(tmp_path / "m.db")
    rows = []
    for i in range(60):
        r = row(f"line {i} of a conversation", at=NOW - 1000 + i)
        r.agent = ("claude-code", "cursor", "claude-code", None)[i % 4]
        r.visibility = "private" if i % 7 == 3 and r.agent else "shared"
        r.expires_at = NOW - 1 if i % 11 == 5 else None
        rows.append(r)
        await store.add(r, actor="t")
        if i == 30:  # a gap of another user's lines: neighbours further than BESIDE_SCAN rows
            for j in range(BESIDE_SCAN):
                await store.add(row(f"other user {j}", user="u2"), actor="t")
    await store.set_status([rows[i] for i in (9, 21, 40)], "deleted", action="delete", now=NOW, actor="t")
    for reader in (None, "claude-code", "cursor"):
        for hits in ([r.id for r in rows[::5]], [rows[30].id, rows[31].id, "no-such-id"], [rows[0].id], []):
            first = await store.written_beside(hits, NOW, reader=reader)
            frontier = [n for pair in first.values() for n in pair if n is not None and n not in first]
            both = first | (await store.written_beside(frontier, NOW, reader=reader) if frontier else {})
            assert await store.written_beside(hits, NOW, reader=reader, levels=2) == both, (reader, hits)
    spread = [r.id for r in rows[::5]]
    assert len(await store.written_beside(spread, NOW, levels=2)) > len(await store.written_beside(spread, NOW))
    await store.close()


async def test_written_beside_looks_only_so_far_past_other_writers(tmp_path):
    from memvault.storage.facts import BESIDE_SCAN

    store = await FactStore.open(tmp_path / "m.db")
    first, near, far = row("first line"), row("next line, soon after"), row("a line long after")
    for r in (first, near, far):
        r.agent = "claude-code"
    await store.add(first, actor="t")
    await store.add(near, actor="t")
    for i in range(BESIDE_SCAN):  # another client writes a lot in between
        other = row(f"cursor line {i}")
        other.agent = "cursor"
        await store.add(other, actor="t")
    await store.add(far, actor="t")
    got = await store.written_beside([first.id, near.id, far.id], NOW)
    assert got == {first.id: (None, near.id), near.id: (first.id, None), far.id: (None, None)}
    await store.close()
