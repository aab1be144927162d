"""The start-up check on a store with an HNSW-indexed segment, and repair in proportion.

A store of ``N`` memories (more than ``INLINE_REPAIR_MAX``) whose points sit in an HNSW
segment, made without the model: rows through the real FactStore, points through
``index_rows`` with a deterministic stand-in embedder (hash of a memory's topic word ->
unit vector, so groups of ``DUP`` memories share one vector: exact ties, which an
approximate search may rank in any order). Only the engine and the check are under
test; no assertion depends on similarity between different texts.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest

from memvault.config import Settings
from memvault.policy.text import content_hash
from memvault.service.indexing import index_rows
from memvault.service.memory.models import Scope
from memvault.service.memory.recall import RecallArgs, recall
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.upkeep import index_build
from memvault.service.upkeep.health import health
from memvault.service.upkeep.housekeeping import after_ready
from memvault.service.upkeep.index_health import INLINE_REPAIR_MAX, disagreement, memories_expected
from memvault.storage.memories import MemoryRow

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DIM = 32
N = INLINE_REPAIR_MAX + 500
DUP = 12
USER = "local"


class TopicEmbedder:
    """Deterministic stand-in: a text's vector is a hash of its first word (its topic)."""

    model_id = "test/topic-hash"
    dim = DIM
    max_tokens = 512

    def __init__(self) -> None:
        self.passages: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    @staticmethod
    def _vec(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.split()[0].encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(60)
        self.passages += [t for t in texts if t.startswith("topic")]  # not the start-up probes
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])

    def passage_windows(self, text: str, *args: object, **kw: object) -> list[str]:
        return [text]


@pytest.fixture(autouse=True)
def _no_hnsw_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact search only: no HNSW build starts beside these repairs."""
    monkeypatch.setattr(index_build, "HNSW_AFTER_POINTS", 0)


def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir)


async def open_rt(data_dir: Path, emb: TopicEmbedder) -> Runtime:
    return await Runtime.open(settings(data_dir), load_embedder=lambda _s: emb)  # type: ignore[arg-type,return-value]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N memories (groups of DUP share a vector) in an HNSW-indexed segment; closed."""
    data = tmp_path_factory.mktemp("repair") / "template"
    emb = TopicEmbedder()

    async def make() -> None:
        rt = await open_rt(data, emb)
        try:
            await rt.load()
            base = rt.clock.now() - 86400.0
            rows = []
            for i in range(N):
                text = f"topic{i // DUP} note {i}: the deploy of service {i} needs approval"
                at = base + i * 0.731  # distinct times with microsecond digits
                rows.append(MemoryRow(id=str(uuid.uuid4()), user_id=USER, project="", kind="fact", key=None,
                                      content=text, tags=["ops"] if i % 5 == 0 else [], importance=0.5,
                                      source="test", created_at=at, updated_at=at, last_accessed_at=at,
                                      expires_at=None, content_hash=content_hash(text), embedding_model=emb.model_id))
            for r in rows:
                await rt.facts.add(r, actor="test")
            for i in range(0, N, 500):
                await index_rows(rt, rows[i : i + 500])
            _, vectors = await rt.ready()
            assert await anyio.to_thread.run_sync(vectors.build_index, MEMORY_COLLECTION) is not None
            state = vectors.index_state(MEMORY_COLLECTION)
            assert state is not None and state.hnsw and state.unindexed == 0
        finally:
            await rt.close()

    anyio.run(make)
    return data


@pytest.fixture
def store(big_store: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "d"
    shutil.copytree(big_store, dst)
    return dst


async def test_a_healthy_indexed_store_passes_every_start_up_probe(store):
    # The probes cannot fail on a healthy HNSW index: exact self-search (ties count as
    # found), and a creation-time bound that includes the points created at it.
    emb = TopicEmbedder()
    rt = await open_rt(store, emb)
    try:
        await rt.load()
        _, vectors = await rt.ready()
        assert vectors.index_state(MEMORY_COLLECTION).hnsw
        found = []
        for _ in range(40):  # a new random sample each time
            exp = await memories_expected(rt, rt.clock.now())
            found.append(await disagreement(rt, vectors, exp))
        assert found == [None] * 40
    finally:
        await rt.close()


async def test_a_disagreement_is_repaired_in_proportion_in_the_background(store, caplog):
    # A few points lost and a few made wrong while memvault was stopped: only those are
    # written again, in the background; recall is served meanwhile and the health check
    # (doctor) says a repair runs.
    emb = TopicEmbedder()
    rt = await open_rt(store, emb)
    try:
        await rt.load()
        _, vectors = await rt.ready()
        ids = sorted(vectors.ids(MEMORY_COLLECTION))
        lost, wrong = ids[:5], ids[5:8]
        vectors.delete(MEMORY_COLLECTION, lost)
        vectors.set_payload(MEMORY_COLLECTION, wrong, {"project": "elsewhere"})
    finally:
        await rt.close()

    emb.gate.clear()  # the repair's embedding waits until the test has looked
    rt = await open_rt(store, emb)
    scope = Scope(user_id=USER, project="", projects_read=[""], source="settings")
    try:
        with caplog.at_level(logging.INFO):
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.load, after_ready)
                with anyio.fail_after(60):
                    while not (rt.started_done() and rt.repairing):  # noqa: ASYNC110 - state set by the runtime
                        await anyio.sleep(0.05)
                assert rt.error is None
                got = await recall(rt, scope, RecallArgs(query="topic3 note", k=3))  # served during the repair
                assert got.memories and got.index_note and "being repaired in the background" in got.index_note
                lines = {c.name: c for c in await health(rt)}
                assert not lines["collection memories"].ok
                assert "being repaired in the background" in lines["collection memories"].detail
                emb.gate.set()
        assert not rt.repairing and rt.error is None
        assert len(emb.passages) == len(lost) + len(wrong), emb.passages  # in proportion: nothing else re-embedded
        _, vectors = await rt.ready()
        assert vectors.count(MEMORY_COLLECTION) == N
        got = vectors.retrieve(MEMORY_COLLECTION, wrong)
        assert {p.payload["project"] for p in got.values()} == {""}
        assert await disagreement(rt, vectors, await memories_expected(rt, rt.clock.now())) is None
        assert not list(store.parent.glob("vectors.broken-*")) and not list(store.glob("vectors.broken-*"))
        msgs = [r.getMessage() for r in caplog.records]
        assert any("re-indexing what disagrees from SQLite (8 of 2500 memories) in the background" in m
                   for m in msgs), msgs
        assert any("repaired: 8 of" in m for m in msgs), msgs
    finally:
        await rt.close()
