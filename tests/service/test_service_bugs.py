"""Regression tests of the services, through the real MCP server in-process.

Each test drives ``build_server`` with the SDK's in-process ``Client`` (real SQLite file,
real Qdrant Edge, the real embedding model, shared by every server of the session):
keyed writes that repeat an existing memory, forget over a large scope, duplicate +
supersedes, recall's annotations, capacity eviction that reads a bounded number of rows,
index_docs reading each file once, and CPU-heavy policy work kept off the event loop.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp.client.client import Client

import memvault.policy.dedup
import memvault.service.indexing
import memvault.service.memory.remember
import memvault.service.profile.tasks
import memvault.storage.memories
from memvault.config import Settings
from memvault.embedding.embedder import Embedder
from memvault.mcp.app import build_server
from memvault.policy.ranking import pick_evictions
from memvault.policy.text import content_hash
from memvault.service.indexing import embed_passages, index_rows
from memvault.service.runtime import Runtime
from memvault.storage.facts import FactStore
from memvault.storage.memories import MemoryRow
from tests.conftest import call, db_rows
from tests.corpus import filler_memories


def settings_for(data_dir: Path, cache: Path, **extra: Any) -> Settings:
    return Settings(data_dir=data_dir, model_cache_dir=cache, **extra)


@asynccontextmanager
async def served(settings: Settings, embedder: Embedder) -> AsyncIterator[Client]:
    """A connected in-process MCP client on a fresh memvault server for ``settings``."""
    # Started in the data dir (not in a git checkout), so a client without roots writes globally.
    server = build_server(settings, load_embedder=lambda _s: embedder, cwd=settings.storage.data_dir)
    async with Client(server, read_timeout_seconds=180) as client:
        yield client


def active_with_hash(data_dir: Path, text: str) -> list[str]:
    return [r[0] for r in db_rows(data_dir, "SELECT id FROM memories WHERE content_hash=? AND status='active'",
                                  (content_hash(text),))]


# ---------------------------------------------------------------- keyed writes that repeat a memory


@pytest.mark.anyio
@pytest.mark.slow
async def test_key_wins_on_the_exact_duplicate_path(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    async with served(settings_for(d, model_cache), memo_model) as c:
        npm = await call(c, "remember", content="The user prefers npm", kind="preference", key="pref.pm")
        pnpm = await call(c, "remember", content="The user prefers pnpm", kind="preference", tags=["js"])
        assert npm["status"] == pnpm["status"] == "stored"

        again = await call(c, "remember", content="The user prefers pnpm", kind="preference", key="pref.pm",
                           tags=["tooling"], ttl_days=30)
        assert again["status"] == "superseded", again
        assert again["id"] == pnpm["id"] and again["superseded_ids"] == [npm["id"]]
        assert "pref.pm" in again["reason"] and "tags" in again["reason"] and "expires" in again["reason"]
        assert again["expires_at"] is not None

        profile = await call(c, "get_profile")
        assert profile["preferences"]["pref.pm"]["value"] == "The user prefers pnpm"
        assert profile["preferences"]["pref.pm"]["id"] == pnpm["id"]

        # the index agrees: the merged tag filters, the superseded value is not recalled
        got = await call(c, "recall", query="which package manager does the user prefer", tags=["tooling"])
        assert [m["id"] for m in got["memories"]] == [pnpm["id"]]
        assert got["memories"][0]["key"] == "pref.pm"
        got = await call(c, "recall", query="The user prefers npm", k=10)
        assert npm["id"] not in [m["id"] for m in got["memories"]]

    key, tags, expires, status = db_rows(d, "SELECT key, tags, expires_at, status FROM memories WHERE id=?",
                                         (pnpm["id"],))[0]
    assert (key, tags, status) == ("pref.pm", '["js", "tooling"]', "active") and expires is not None
    assert db_rows(d, "SELECT status, superseded_by FROM memories WHERE id=?", (npm["id"],))[0] == \
        ("superseded", pnpm["id"])
    assert active_with_hash(d, "The user prefers pnpm") == [pnpm["id"]]


@pytest.mark.anyio
@pytest.mark.slow
async def test_key_wins_on_the_near_duplicate_path(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    async with served(settings_for(d, model_cache), memo_model) as c:
        # no keyed row yet: the near duplicate takes the key
        loose = await call(c, "remember", content="The user prefers tabs for indentation", kind="preference")
        keyed = await call(c, "remember", content="The user prefers tabs for indentation.", kind="preference",
                           key="pref.indent", tags=["style"])
        assert keyed["status"] == "reinforced" and keyed["id"] == loose["id"], keyed
        assert "pref.indent" in keyed["reason"]
        profile = await call(c, "get_profile")
        assert profile["preferences"]["pref.indent"]["id"] == loose["id"]

        # a keyed row exists: the near duplicate takes the key and supersedes it
        yarn = await call(c, "remember", content="The user prefers yarn", kind="preference", key="pref.pm")
        bun = await call(c, "remember", content="The user prefers bun", kind="preference")
        near = await call(c, "remember", content="the user prefers Bun.", kind="preference", key="pref.pm")
        assert near["status"] == "superseded" and near["id"] == bun["id"], near
        assert near["superseded_ids"] == [yarn["id"]]
        profile = await call(c, "get_profile")
        assert profile["preferences"]["pref.pm"]["value"] == "The user prefers bun"
    assert db_rows(d, "SELECT key, tags FROM memories WHERE id=?", (loose["id"],))[0] == ("pref.indent", '["style"]')
    assert db_rows(d, "SELECT status FROM memories WHERE id=?", (yarn["id"],))[0][0] == "superseded"


@pytest.mark.anyio
@pytest.mark.slow
async def test_same_text_under_another_key_is_its_own_slot(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    async with served(settings_for(d, model_cache), memo_model) as c:
        a = await call(c, "remember", content="The user wants answers in English", kind="preference",
                       key="pref.language")
        b = await call(c, "remember", content="The user wants answers in English", kind="preference",
                       key="pref.reply_language")
        assert b["status"] == "stored" and b["id"] != a["id"]
        assert "pref.language" in b["reason"]  # the reply says the same text lives under another key
        profile = await call(c, "get_profile")
        assert {"pref.language", "pref.reply_language"} <= set(profile["preferences"])


# ---------------------------------------------------------------- exact duplicate + supersedes


@pytest.mark.anyio
@pytest.mark.slow
async def test_exact_duplicate_with_supersedes_leaves_one_active_row(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    async with served(settings_for(d, model_cache), memo_model) as c:
        pg = await call(c, "remember", content="The billing service stores invoices in Postgres", kind="fact")
        old = await call(c, "remember", content="The billing service stores invoices in MongoDB", kind="fact")
        r = await call(c, "remember", content="The billing service stores invoices in Postgres", kind="fact",
                       supersedes=[old["id"]])
        assert r["status"] == "superseded" and r["id"] == pg["id"], r
        assert r["superseded_ids"] == [old["id"]]
        assert "already exists" in r["reason"]

        got = await call(c, "recall", query="where are invoices stored", k=10)
        ids = [m["id"] for m in got["memories"]]
        assert pg["id"] in ids and old["id"] not in ids
        assert db_rows(d, "SELECT status, superseded_by FROM memories WHERE id=?", (old["id"],))[0] == \
            ("superseded", pg["id"])

        # naming the duplicate itself in supersedes replaces it (e.g. to fix its casing): still one row
        r2 = await call(c, "remember", content="The billing service stores invoices in PostgreSQL 16", kind="fact")
        r3 = await call(c, "remember", content="The billing service stores invoices in postgreSQL 16", kind="fact",
                        supersedes=[r2["id"]])
        assert r3["status"] == "superseded" and r3["id"] != r2["id"] and r3["superseded_ids"] == [r2["id"]], r3
    assert active_with_hash(d, "The billing service stores invoices in Postgres") == [pg["id"]]
    assert active_with_hash(d, "The billing service stores invoices in PostgreSQL 16") == [r3["id"]]


# ---------------------------------------------------------------- forget reaches the whole scope


async def _fill(settings: Settings, embedder: Embedder, texts: list[str], created_at: float,
                vector_of: Callable[[str], str] = lambda t: t) -> None:
    """Store ``texts`` as active global memories before serving: rows through the fact store,
    points through the indexing helpers in batches (the remember service would take minutes).
    ``vector_of(text)``: the text whose embedding stands for it (distinct texts embedded once)."""
    rt = await Runtime.open(settings, load_embedder=lambda _s: embedder)
    try:
        await rt.load()
        rows = [MemoryRow(id=str(uuid.uuid4()), user_id=settings.server.user_id, project="", kind="fact", content=t,
                          importance=0.5, created_at=created_at + i, updated_at=created_at + i,
                          last_accessed_at=created_at + i, content_hash=content_hash(t),
                          embedding_model=embedder.model_id) for i, t in enumerate(texts)]
        for row in rows:
            await rt.facts.add(row, actor="test")
        sources = sorted({vector_of(t) for t in texts})
        dense = dict(zip(sources, await embed_passages(rt, sources), strict=True))
        for i in range(0, len(rows), 256):
            part = rows[i : i + 256]
            await index_rows(rt, part, dense=np.stack([dense[vector_of(r.content)] for r in part]))
    finally:
        await rt.close()


@pytest.mark.anyio
@pytest.mark.slow
async def test_forget_query_reaches_behind_1100_newer_memories(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    s = settings_for(d, model_cache)
    target = "The staging VPN profile is named acme-stg-eu and lives in the team vault"
    now = time.time()
    await _fill(s, memo_model, [target], created_at=now - 10 * 86400)
    base = filler_memories(200)
    # 1,100 newer memories; each sprint's restatement of a fact shares that fact's embedding
    await _fill(s, memo_model, [f"Sprint {i // 200 + 1}: {base[i % 200]}" for i in range(1100)],
                created_at=now - 86400, vector_of=lambda t: t.split(": ", 1)[1])
    assert db_rows(d, "SELECT COUNT(*) FROM memories WHERE status='active'")[0][0] == 1101

    async with served(s, memo_model) as c:
        dry = await call(c, "forget", query=target, dry_run=True)
        assert dry["count"] == 1 and dry["forgotten"][0]["content_preview"].startswith("The staging VPN")
        # combined with a selector that only old memories pass
        aged = await call(c, "forget", query=target, older_than_days=5, dry_run=True)
        assert aged["count"] == 1
        # the exact text of the newest filler is taken alone (not its near neighbours of other sprints)
        newest = f"Sprint 6: {base[1099 % 200]}"
        one = await call(c, "forget", query=newest, dry_run=True)
        assert one["count"] == 1 and one["forgotten"][0]["content_preview"] == newest
        gone = await call(c, "forget", query=target)
        assert gone["count"] == 1

        # ids + query: only the named memories that match are taken
        train = await call(c, "remember", content="The release train leaves every second Tuesday at noon")
        tea = await call(c, "remember", content="The user drinks green tea during code review", kind="preference")
        both = await call(c, "forget", ids=[train["id"], tea["id"]], query="the release train leaves every "
                          "second Tuesday at noon", dry_run=True)
        assert [f["id"] for f in both["forgotten"]] == [train["id"]] and both["forgotten"][0]["similarity"] > 0.9

        # hard + query: the exact text is erased in every version (here a superseded one), nothing else
        v1 = await call(c, "remember", content="The on-call rota rotates every Monday", key="ops.rota")
        v2 = await call(c, "remember", content="The on-call rota rotates every Thursday", key="ops.rota")
        assert v2["superseded_ids"] == [v1["id"]]
        purged = await call(c, "forget", query="The on-call rota rotates every Monday", hard=True)
        assert [f["id"] for f in purged["forgotten"]] == [v1["id"]], purged
    assert db_rows(d, "SELECT status FROM memories WHERE content_hash=?", (content_hash(target),))[0][0] == "deleted"
    assert db_rows(d, "SELECT COUNT(*) FROM memories WHERE id=?", (v1["id"],))[0][0] == 0
    assert db_rows(d, "SELECT status FROM memories WHERE id=?", (v2["id"],))[0][0] == "active"


# ---------------------------------------------------------------- recall's annotations


@pytest.mark.anyio
@pytest.mark.slow
async def test_recall_is_annotated_as_the_writer_it_is(tmp_path, model_cache, memo_model):
    d = tmp_path / "d"
    async with served(settings_for(d, model_cache), memo_model) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        ann = tools["recall"].annotations
        assert ann.read_only_hint is False and ann.destructive_hint is False
        assert "access" in tools["recall"].description
        r = await call(c, "remember", content="The mobile app is built with React Native", kind="fact")
        await call(c, "recall", query="mobile app framework")
    assert db_rows(d, "SELECT access_count FROM memories WHERE id=?", (r["id"],))[0][0] == 1


# ---------------------------------------------------------------- capacity eviction reads little


@pytest.mark.anyio
@pytest.mark.slow
async def test_write_at_capacity_reads_a_bounded_number_of_rows(tmp_path, model_cache, memo_model,
                                                                monkeypatch):
    d = tmp_path / "d"
    cap = 40
    base = filler_memories(cap)
    async with served(settings_for(d, model_cache, capacity_per_scope=cap), memo_model) as c:
        ids = []
        for i, text in enumerate(base):
            r = await call(c, "remember", content=text, importance=0.05 if i == 7 else 0.6)
            assert r["status"] == "stored", r
            ids.append(r["id"])

        materialised = Counter()
        real = memvault.storage.memories.row_from_sql

        def counting(row):
            materialised["rows"] += 1
            return real(row)

        monkeypatch.setattr(memvault.storage.memories, "row_from_sql", counting)
        r = await call(c, "remember", content="The search API ranks results with BM25 and a reranker",
                       importance=0.6)
        assert r["status"] == "stored" and r["evicted_ids"] == [ids[7]], r
        assert "capacity" in r["reason"]
        # a count and a few candidates, not every row of the full scope
        assert materialised["rows"] < cap // 2, materialised
    assert db_rows(d, "SELECT COUNT(*) FROM memories WHERE status='active'")[0][0] == cap


@pytest.mark.anyio
async def test_lowest_retention_agrees_with_the_policy(tmp_path):
    store = await FactStore.open(tmp_path / "m.db")
    try:
        now, half_life = 2_000_000_000.0, 30.0
        rows = []
        for i in range(60):
            imp = [0.0, 0.1, 0.5, 0.9, 1.0][i % 5]
            last = now - (i * 7919 % 97) * 86400 * 0.7  # distinct ages up to ~67 days
            if i % 13 == 0:
                last = now + 3600 + i  # clock skew: a last access in the future counts as now
            rows.append(MemoryRow(id=f"00000000-0000-4000-8000-{i:012d}", user_id="u", project="p", kind="fact",
                                  content=f"memory {i}", importance=imp, created_at=now - i, updated_at=now - i,
                                  last_accessed_at=last, content_hash=f"h{i}", embedding_model="m"))
        for r in rows:
            await store.add(r, actor="test")
        for n in (1, 5, 20):  # within the importance-0 ties, and past them
            got = await store.lowest_retention("u", "p", now, limit=n, half_life_days=half_life,
                                               exclude="00000000-0000-4000-8000-000000000000")
            want = pick_evictions([(r.id, r.importance, r.last_accessed_at) for r in rows[1:]], n, now, half_life)
            assert sorted(r.id for r in got) == sorted(want), n
    finally:
        await store.close()


# ---------------------------------------------------------------- index_docs reads each file once


@pytest.mark.anyio
@pytest.mark.slow
async def test_index_docs_reads_each_file_once(tmp_path, model_cache, memo_model, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nInstall with pnpm install, then run pnpm build.\n")
    (docs / "ops.md").write_text("# Ops\n\nThe nightly backup is kept for 30 days in the eu bucket.\n")
    reads: Counter[str] = Counter()
    import memvault.ingest.discovery as discovery

    real = discovery.read_regular_file  # how index_docs reads a file's bytes

    def counting(path: Path, max_bytes: int) -> bytes:
        if path.is_relative_to(docs):
            reads[path.name] += 1
        return real(path, max_bytes)

    monkeypatch.setattr(discovery, "read_regular_file", counting)
    s = settings_for(tmp_path / "d", model_cache, docs_allowed_dirs=[docs])
    async with served(s, memo_model) as c:
        res = await call(c, "index_docs", paths=[str(docs)])
        assert res["added"] == 2, res
        assert reads == {"guide.md": 1, "ops.md": 1}, reads

        # same size, new bytes: hashed and chunked from one read
        reads.clear()
        (docs / "ops.md").write_text("# Ops\n\nThe nightly backup is kept for 90 days in the eu bucket.\n")
        res = await call(c, "index_docs", paths=[str(docs)])
        assert res["changed"] == 1 and res["unchanged"] == 1, res
        assert reads == {"ops.md": 1}, reads
        got = await call(c, "search_docs", query="how long is the nightly backup kept")
        assert "90 days" in got["results"][0]["text"]


# ---------------------------------------------------------------- CPU work off the event loop


@pytest.mark.anyio
@pytest.mark.slow
async def test_cpu_heavy_policy_work_runs_off_the_event_loop(tmp_path, model_cache, memo_model,
                                                             monkeypatch):
    loop_thread = threading.get_ident()
    on_loop: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    def spy(module: Any, name: str) -> None:
        real: Callable = getattr(module, name)

        def wrapper(*a, **kw):
            label = f"{module.__name__}.{name}"
            calls[label] += 1
            if threading.get_ident() == loop_thread:
                on_loop[label] += 1
            return real(*a, **kw)

        monkeypatch.setattr(module, name, wrapper)

    spy(memvault.service.memory.remember, "find_secret")
    spy(memvault.service.memory.remember, "score_importance")
    spy(memvault.service.indexing, "keyword_terms")
    spy(memvault.policy.dedup, "content_words")
    spy(memvault.service.memory.forget, "content_words")
    spy(memvault.service.profile.tasks, "find_secret")

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\n" + "\n\n".join(filler_memories(120)) + "\n")
    long_text = "The data pipeline runbook: " + " ".join(filler_memories(28))
    assert 1500 < len(long_text) <= 2000  # a forget query may be this long too
    s = settings_for(tmp_path / "d", model_cache, docs_allowed_dirs=[docs])
    async with served(s, memo_model) as c:
        r = await call(c, "remember", content=long_text, kind="procedure", tags=["runbook"])
        assert r["status"] == "stored", r
        near = await call(c, "remember", content=long_text + ".", kind="procedure")
        assert near["status"] == "reinforced", near
        await call(c, "recall", query="data pipeline runbook")
        await call(c, "forget", query=long_text, dry_run=True)
        await call(c, "index_docs", paths=[str(docs)])
        await call(c, "search_docs", query="nightly backup")
        await call(c, "set_task_state", task_id="migrate-billing", title="Migrate billing",
                   state={"plan": filler_memories(50)})
    assert set(calls) == {f"memvault.service.memory.remember.{n}" for n in ("find_secret", "score_importance")} | {
        "memvault.service.indexing.keyword_terms", "memvault.policy.dedup.content_words",
        "memvault.service.memory.forget.content_words", "memvault.service.profile.tasks.find_secret"}, calls
    assert not on_loop, f"ran on the event loop: {dict(on_loop)}"
