"""The ``docs`` points kept in step with the registry, without reading any file.

``reweigh_stale`` brings keyword vectors of an older weighting (``DOC_KEYWORD_SCHEME``) up to
date in place; ``sync_points`` deletes points with no chunk row (an interrupted run) and
re-embeds registered chunks that have no point (a lost or rebuilt index) from the text the
registry stores (``restore_chunks``). Called by ``index_docs``, the start-up steps
(``upkeep.housekeeping``) and the index check (``upkeep.index_health``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memvault.policy.keywords import DOC_KEYWORD_SCHEME
from memvault.service.documents.collection import (
    DOCS_COLLECTION,
    chunk_sparse,
    doc_payload,
    embed_text,
    ensure_docs_collection,
    sparse_by_id,
)
from memvault.service.errors import Conflict
from memvault.service.indexing import embed_passages_in_runs
from memvault.service.runtime import Runtime
from memvault.storage.docs import ChunkRow, DocFile, DocStore
from memvault.storage.vectors.base import Point, SparseVector

log = logging.getLogger(__name__)


async def reweigh_stale(rt: Runtime, store: DocStore) -> int:
    """Bring files indexed under an older keyword weighting to ``DOC_KEYWORD_SCHEME`` in place.

    Only the keyword (sparse) vectors change with the weighting, and they are computed from
    what the registry stores (path, heading, symbol, text): each stale file's points get
    new sparse vectors and the registry's project (a project id respelt by a schema
    migration; no embedding), then its row records the scheme. A crash between the
    two redoes that file next time. A file whose update fails (e.g. a point is missing)
    stays stale, and ``index_docs`` re-embeds it. Files of another model are left to the
    re-embedding. Call with the docs collection open and ``rt.docs_lock`` held. Returns the
    number of files brought up to date.
    """
    emb, vectors = await rt.ready()
    done = 0
    for f in await store.stale_files(DOC_KEYWORD_SCHEME):
        if f.embedding_model != emb.model_id:
            continue
        rows = await store.chunks_of(f.id)
        sparse = await rt.run_sync(sparse_by_id, f.path, rows)
        try:
            await rt.run_sync(vectors.update_sparse, DOCS_COLLECTION, sparse)
            await rt.run_sync(vectors.set_payload, DOCS_COLLECTION, [r.id for r in rows], {"project": f.project})
        except Exception as exc:  # the engine's error for a missing point; re-embedding repairs it
            log.warning("could not re-weigh %s (project %r, collection %r) in place (%s); the next index_docs "
                        "on it re-indexes it", f.path, f.project, f.collection, exc)
            continue
        await store.set_keyword_scheme(f, DOC_KEYWORD_SCHEME)
        done += 1
    if done:
        log.info("re-weighed the keyword vectors of %d document file(s) to scheme %d", done, DOC_KEYWORD_SCHEME)
    return done


async def reweigh_documents(rt: Runtime) -> int:
    """Start-up step: ``reweigh_stale`` over every project and collection (nothing to do -> one query).

    Returns the number of files re-weighed. Raises NotReady; sqlite3 errors.
    """
    async with rt.docs_lock:
        async with DocStore.connect(rt.settings.db_path) as store:
            if not await store.stale_files(DOC_KEYWORD_SCHEME):
                return 0
            try:
                await ensure_docs_collection(rt, rebuild_on_mismatch=False)
            except Conflict:  # indexed with another model: every file is re-embedded anyway
                return 0
            return await reweigh_stale(rt, store)


async def drop_orphans(rt: Runtime, store: DocStore) -> int:
    """Delete points with no chunk row (left by an interrupted run). Returns how many."""
    orphans, _ = await sync_points(rt, store, restore=False)
    return orphans


async def sync_points(rt: Runtime, store: DocStore, *, restore: bool = True) -> tuple[int, int]:
    """Make the ``docs`` points match the registry: delete points with no chunk row (left by an
    interrupted run) and, with ``restore``, re-embed the registered chunks that have no point
    (a lost or rebuilt index) from their stored text. One scan of the point ids.

    Call with the docs collection open and ``rt.docs_lock`` held. Returns (points deleted,
    chunks embedded).
    """
    _, vectors = await rt.ready()
    present = await rt.run_sync(vectors.ids, DOCS_COLLECTION)
    registered = await store.all_chunk_ids()
    orphans = sorted(present - registered)
    if orphans:
        await rt.run_sync(vectors.delete, DOCS_COLLECTION, orphans)
        log.info("deleted %d orphaned document points", len(orphans))
    restored = 0
    missing = sorted(registered - present)
    if restore and missing:
        restored = await restore_chunks(rt, store, missing)
        log.info("re-embedded %d registered document chunks that had no point", restored)
    return len(orphans), restored


async def restore_chunks(rt: Runtime, store: DocStore, ids: Sequence[str] | None = None) -> int:
    """Write the points of registered chunks again from the registry (their stored text; no file is read).

    ids: the chunks to restore (None = every registered chunk). A file whose row records
    another embedding model or keyword weighting than the current ones is restored whole,
    and its row then records the current ones. Unreadable rows are skipped (and logged by
    the registry). Call with the docs collection open and ``rt.docs_lock`` held. Returns
    the number of chunks embedded. Raises NotReady.
    """
    emb, vectors = await rt.ready()
    todo = sorted(await store.all_chunk_ids()) if ids is None else list(dict.fromkeys(ids))
    step = max(1, rt.settings.documents.docs_batch_chunks)
    done, files_done = 0, set()
    for i in range(0, len(todo), step):
        rows = await store.chunks(todo[i : i + step])
        behind = {r.file.id: r.file for r in rows.values() if r.file is not None and r.file.id not in files_done
                  and (r.file.embedding_model, r.file.keyword_scheme) != (emb.model_id, DOC_KEYWORD_SCHEME)}
        for f in behind.values():  # a file of another model: all of it, so that its row can say so
            for c in await store.chunks_of(f.id):
                c.file = f
                rows[c.id] = c
        pairs = [(c, c.file) for c in rows.values() if c.file is not None]
        if pairs:
            dense = await embed_passages_in_runs(rt, [embed_text(c) for c, _ in pairs])
            sparse = await rt.run_pure(sparse_of_pairs, pairs)
            points = [Point(id=c.id, dense=dense[j], sparse=sparse[j], payload=doc_payload(f))
                      for j, (c, f) in enumerate(pairs)]
            await rt.run_sync(vectors.upsert, DOCS_COLLECTION, points)
            done += len(pairs)
        for f in behind.values():
            await store.set_index_version(f, emb.model_id, DOC_KEYWORD_SCHEME)
            files_done.add(f.id)
    if done:
        await rt.run_sync(emb.release_memory)
    return done


def sparse_of_pairs(pairs: Sequence[tuple[ChunkRow, DocFile]]) -> list[SparseVector]:
    """Blocking (worker thread): ``chunk_sparse`` of every (chunk, its file)."""
    return [chunk_sparse(f.path, c) for c, f in pairs]
