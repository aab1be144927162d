"""A hard forget leaves no trace of what the memory said, or was labelled with, in any file.

The words below are made up, so any occurrence in the data dir (UTF-8, UTF-16) is the
memory's. Its content, key, tags and source all go: SQLite's rows and history (the
history keeps that an erasure happened, not who wrote the memory or why), and the vector
index, whose files keep a deleted point's payload (the engine marks points deleted
rather than rewriting its segments): keys and tags reach the index only as digests.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memvault.service.filters import label_digest
from memvault.storage.facts import FactStore
from memvault.storage.migrations import MIGRATIONS
from tests.conftest import call, stored_bytes

CONTENT = "The courier password hint is zorblaxquint under the blue mat."
KEY = "pref.vexmorrandle"
TAG = "glimtharnesq"
SOURCE = "quorvaldine-notes"
WORDS = ["zorblaxquint", "vexmorrandle", TAG, "quorvaldine"]


def traces(data_dir: Path, files: str = "**/*") -> dict[str, list[str]]:
    """{word: files holding it} over every file under ``data_dir`` (matching ``files``), in
    UTF-8 and UTF-16. An ASCII word's UTF-16 forms, little- and big-endian, both hold its
    letters with a NUL between each two ("a\0b" for "ab"): one search finds either."""
    found: dict[str, list[str]] = {}
    forms = [(w, f) for w in WORDS for f in (w.encode("utf-8"), "\0".join(w).encode("ascii"))]
    for f in sorted(p for p in data_dir.glob(files) if p.is_file() and p.stat().st_size):
        blob = stored_bytes(f)
        for w in sorted({w for w, b in forms if b in blob}):
            found.setdefault(w, []).append(str(f.relative_to(data_dir)))
    return found


@pytest.mark.anyio
async def test_hard_forget_leaves_no_content_key_tag_or_source_on_disk(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        for i in range(5):
            await call(c, "remember", content=f"Filler fact number {i} about the build pipeline.", force=True)
        kept = await call(c, "remember", content=CONTENT, key=KEY, tags=[TAG, "home"], source=SOURCE, force=True)
        assert kept["status"] == "stored"
        # the labels work through their digests
        got = await call(c, "recall", query="courier password hint", tags=[TAG.upper()], k=3)
        assert [m["id"] for m in got["memories"]] == [kept["id"]]
        assert (await call(c, "forget", key=KEY, dry_run=True))["count"] == 1
        assert set(traces(d, "memvault.db*")) == set(WORDS)  # control: found while the memory exists
        gone = await call(c, "forget", ids=[kept["id"]], hard=True)
        assert gone["count"] == 1
        assert traces(d) == {}, "a hard-forgotten memory left traces while the server runs"
        assert (await call(c, "recall", query="courier password hint", tags=[TAG], k=3))["memories"] == []
    assert traces(d) == {}, "a hard-forgotten memory left traces after a clean stop"
    with sqlite3.connect(d / "memvault.db") as db:
        rows = db.execute("SELECT action, actor, old, new, reason FROM memory_history WHERE memory_id=?",
                          [kept["id"]]).fetchall()
    assert rows[-1][0] == "purge"  # the erasure itself stays on record
    assert all(r[1:] == (None, None, None, None) for r in rows[:-1])


def test_label_digest_is_fixed_and_one_way():
    assert label_digest(TAG) == label_digest(TAG) != label_digest("other")
    assert len(label_digest(TAG)) == 32 and TAG not in label_digest(TAG)


@pytest.mark.anyio
async def test_upgrade_reindexes_labelled_memories_and_forgets_erased_actors(tmp_path):
    """A store from before the digests: its labelled memories are re-indexed at the next
    start, and the history of memories erased before loses its actors."""
    db = tmp_path / "m.db"
    conn = sqlite3.connect(db)
    for number, sql in MIGRATIONS:
        if number < 6:  # the store as it was before migration 6 (the digests)
            conn.executescript(sql)
    conn.execute("PRAGMA user_version = 5")
    cols = ("id, user_id, project, kind, key, content, content_hash, tags, importance, created_at, updated_at,"
            " last_accessed_at, embedding_model, index_state")
    for i, key, tags in (("a", "pref.x", "[]"), ("b", None, '["t"]'), ("c", None, "[]")):
        conn.execute(f"INSERT INTO memories ({cols}) VALUES (?,'u','','fact',?,?,?,?,0.5,1,1,1,'m','indexed')",
                     [i, key, f"content {i}", f"hash {i}", tags])
    for action, actor in (("add", SOURCE), ("purge", "client")):
        conn.execute("INSERT INTO memory_history (memory_id, user_id, project, action, actor, at) VALUES"
                     " ('gone','u','',?,?,1)", [action, actor])
    conn.commit()
    conn.close()
    store = await FactStore.open(db)
    await store.close()
    with sqlite3.connect(db) as conn:
        states = dict(conn.execute("SELECT id, index_state FROM memories").fetchall())
        actors = [r[0] for r in conn.execute("SELECT actor FROM memory_history ORDER BY seq")]
    assert states == {"a": "pending", "b": "pending", "c": "indexed"}
    assert actors == [None, "client"]
