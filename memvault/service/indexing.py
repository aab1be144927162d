"""Keeping the vector index in step with the fact store (SQLite is the truth).

Only active, unexpired memories have points: one per window of their content (a
content longer than the model reads, 512 tokens, is embedded in overlapping windows;
see ``memory_points``), so that every part of a long memory can be found. Every write
marks its rows ``pending`` inside the SQLite transaction; these helpers then upsert or delete the
points and mark the rows indexed. ``reconcile`` repairs what a crash left between
the two steps; ``sweep`` purges expired memories.

Keys, tags and the agent a private memory belongs to reach the index only as digests
(``memvault.service.filters.label_digest``): the engine filters on them, but deleting a point only marks it deleted in the engine's files, so a label that
names something personal would outlive a hard forget there. SQLite holds the text.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

import numpy as np

from memvault.policy.keywords import AVG_DOC_TERMS, keyword_terms, sparse_from_terms
from memvault.service.filters import label_digest
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.storage.facts import MemoryRow
from memvault.storage.vectors.base import PARENT, Point, SparseVector

log = logging.getLogger(__name__)


def keyword_vector(text: str, *, query: bool, avgdl: float = AVG_DOC_TERMS) -> SparseVector:
    """Sparse keyword vector of ``text`` (CJK-aware terms; BM25 TF for documents, 1.0 for queries).

    avgdl: average stored text length in terms for the BM25 length normalisation
    (memories: ``AVG_DOC_TERMS``; document chunks: ``AVG_CHUNK_TERMS``); unused for queries.
    """
    indices, values = sparse_from_terms(keyword_terms(text), query=query, avgdl=avgdl)
    return SparseVector(indices=indices, values=values)


def memory_payload(row: MemoryRow) -> dict:
    """Payload stored beside a memory's vectors: everything the engine filters on (key, tags
    and ``private_to``, the agent a private memory belongs to, as ``label_digest``s; null
    ``private_to``: shared, as on points indexed before memories could be private)."""
    return {
        "user_id": row.user_id,
        "project": row.project,
        "kind": row.kind,
        "tags": [label_digest(t) for t in row.tags],
        "status": row.status,
        "created_at": row.created_at,
        "expires_at": row.expires_at,
        "key": None if row.key is None else label_digest(row.key),
        "private_to": None if row.private_to is None else label_digest(row.private_to),
    }


def window_point_id(memory_id: str, window: int) -> str:
    """Point id of window ``window`` (0-based) of a memory: the memory's own id for the first,
    a UUID derived from it (UUID5) for the others, so a re-index writes the same ids."""
    return memory_id if window == 0 else str(uuid.uuid5(uuid.UUID(memory_id), f"window:{window}"))


def memory_points(row: MemoryRow, dense: np.ndarray) -> list[Point]:
    """The index points of one memory row: one per window of its content.

    dense: float32 (dim,) for a content read whole, or (windows, dim), one row per window
    of ``Embedder.passage_windows``. The first point has the memory's id and the keyword
    vector of the whole content; every point has the memory's payload, and the later ones
    also ``parent`` (the memory's id), so that searches return the memory once and counts
    (first points only) count memories.
    """
    vectors = np.atleast_2d(dense)
    payload = memory_payload(row)
    return [
        Point(
            id=window_point_id(row.id, i),
            dense=[float(x) for x in vec],
            sparse=keyword_vector(row.content, query=False) if i == 0 else SparseVector(indices=[], values=[]),
            payload=dict(payload) if i == 0 else {**payload, PARENT: row.id},
        )
        for i, vec in enumerate(vectors)
    ]


async def embed_passages(rt: Runtime, texts: Sequence[str]) -> np.ndarray:
    """Passage embeddings, float32 (n, dim), L2-normalised, computed in a worker thread.
    A text longer than the model reads is cut (see ``embed_memories``)."""
    emb, _ = await rt.ready()
    return await rt.run_sync(emb.embed_passages, list(texts))


async def embed_passages_in_runs(rt: Runtime, texts: Sequence[str],
                                 on_run: Callable[[int], None] | None = None) -> np.ndarray:
    """``embed_passages`` for bulk jobs (documents): one short model run at a time.

    The texts are grouped by ``Embedder.passage_runs`` (length-sorted, bounded in texts and
    padded token positions), and each run is its own worker-thread call (``Runtime.run_pure``):
    a stop or a cancellation lands between runs without waiting for the one in progress,
    a run's activations stay small, and the engine's other slot stays free for recall
    meanwhile. ``on_run(n)`` is called after each run with the texts it embedded.
    Returns float32 (len(texts), dim), L2-normalised rows, in the order of ``texts``.
    """
    emb, _ = await rt.ready()
    items = list(texts)
    out = np.empty((len(items), emb.dim), dtype=np.float32)
    for run in await rt.run_pure(emb.passage_runs, items):
        out[run] = await rt.run_pure(emb.embed_passages, [items[i] for i in run])
        if on_run is not None:
            on_run(len(run))
    return out


async def embed_memories(rt: Runtime, contents: Sequence[str]) -> list[np.ndarray]:
    """Every window of each content embedded (worker thread): one float32 (windows, dim)
    array per content, L2-normalised rows; one row when the content fits the model."""
    emb, _ = await rt.ready()

    def work() -> list[np.ndarray]:
        windows = [emb.passage_windows(c) for c in contents]
        vectors = emb.embed_passages([w for ws in windows for w in ws])
        out, at = [], 0
        for ws in windows:
            out.append(vectors[at: at + len(ws)])
            at += len(ws)
        return out

    return await rt.run_sync(work)


def best_window_cosine(windows: np.ndarray, query: np.ndarray) -> float:
    """Cosine of ``query`` (dim,) to the closest of a memory's ``windows`` (k, dim); both L2-normalised."""
    return float(np.max(np.atleast_2d(windows) @ query))


async def embed_query(rt: Runtime, text: str) -> np.ndarray:
    """Query embedding, float32 (dim,), L2-normalised, computed in a worker thread."""
    emb, _ = await rt.ready()
    return (await rt.run_sync(emb.embed_queries, [text]))[0]


async def index_rows(rt: Runtime, rows: Sequence[MemoryRow],
                     dense: Sequence[np.ndarray] | np.ndarray | None = None) -> None:
    """Upsert the points of ``rows`` (every window of each content embedded, unless ``dense``
    is given: per row a (windows, dim) array from ``embed_memories``, or one (dim,) vector
    for a content read whole), then mark them indexed. A row's window ids are fixed by its
    id, so indexing it again replaces its points."""
    if not rows:
        return
    _, vectors = await rt.ready()
    if dense is None:
        dense = await embed_memories(rt, [r.content for r in rows])
    given = list(dense)
    # keyword vectors: tens of milliseconds per long content, so in the worker thread too
    points = await rt.run_sync(lambda: [p for r, d in zip(rows, given, strict=True) for p in memory_points(r, d)])
    await rt.run_sync(vectors.upsert, MEMORY_COLLECTION, points)
    await rt.facts.mark_indexed([r.id for r in rows])


async def unindex_rows(rt: Runtime, rows: Sequence[MemoryRow], *, purged: bool = False) -> None:
    """Delete the points of ``rows``; mark surviving rows indexed (``purged`` rows are gone)."""
    if not rows:
        return
    _, vectors = await rt.ready()
    await rt.run_sync(vectors.delete, MEMORY_COLLECTION, [r.id for r in rows])
    if not purged:
        await rt.facts.mark_indexed([r.id for r in rows])


async def settle_pending(rt: Runtime, now: float) -> tuple[int, int]:
    """Apply the index changes a crash left ``pending`` in SQLite: rows that should be
    searchable at ``now`` are (re)embedded and upserted, the others lose their point.
    Call with ``rt.write_lock`` held. Returns (rows indexed, rows unindexed)."""
    indexed = unindexed = 0
    while True:
        pending = await rt.facts.pending(limit=256)
        if not pending:
            return indexed, unindexed
        live = [r for r in pending if r.status == "active" and (r.expires_at is None or r.expires_at > now)]
        dead = [r for r in pending if r not in live]
        await index_rows(rt, live)
        await unindex_rows(rt, dead)
        indexed += len(live)
        unindexed += len(dead)


async def reconcile(rt: Runtime) -> dict[str, int]:
    """Bring the index in line with SQLite after a crash: returns counts of what was fixed.

    Pending rows that should be searchable are (re)embedded and upserted; pending rows
    that should not be (superseded, deleted, expired) lose their point; points with no
    live row (orphans) are deleted; live rows with no point (a lost or dropped index)
    are embedded again.
    """
    _, vectors = await rt.ready()
    now = rt.clock.now()
    fixed = {"reindexed": 0, "unindexed": 0, "orphans": 0}
    async with rt.write_lock:
        fixed["reindexed"], fixed["unindexed"] = await settle_pending(rt, now)
        wanted = await rt.facts.indexable_ids(now)
        present = await rt.run_sync(vectors.ids, MEMORY_COLLECTION)
        orphans = sorted(present - wanted)
        if orphans:
            await rt.run_sync(vectors.delete, MEMORY_COLLECTION, orphans)
        fixed["orphans"] = len(orphans)
        # Rows marked indexed whose point is gone (index folder lost or rebuilt).
        missing = sorted(wanted - present)
        for i in range(0, len(missing), 256):
            rows = await rt.facts.get(missing[i : i + 256])  # unreadable rows are left out
            await index_rows(rt, rows)
            fixed["reindexed"] += len(rows)
    if any(fixed.values()):
        log.info("reconciled index with SQLite: %s", fixed)
    return fixed


async def sweep_expired(rt: Runtime) -> int:
    """Purge every memory whose expiry has passed (row, history content, vector). Returns how many."""
    _, vectors = await rt.ready()
    total = 0
    async with rt.write_lock:
        while True:
            now = rt.clock.now()
            rows = await rt.facts.expired(now, limit=500)
            if not rows:
                break
            await rt.facts.purge(rows, action="expire", now=now, actor="memvault:sweep",
                                 reason="TTL passed")
            await rt.run_sync(vectors.delete, MEMORY_COLLECTION, [r.id for r in rows])
            total += len(rows)
    if total:
        log.info("swept %d expired memories", total)
    return total
