"""The start-up check of the vector index against SQLite, and its repair from SQLite.

SQLite is the record; the vector index (``memories`` and ``docs`` collections) is
derived from it, so whatever cannot be trusted is written again. At start, once the
model and the index are loaded and before any call is served (tool calls wait for
start-up, but not for a repair moved to the background, step 5):

1. A collection found damaged when opened (unreadable record, files changed after
   memvault closed them, refused by the engine) was already moved aside and made anew,
   with one line on stderr (``Runtime.open_collection``).
2. Memories a crash left ``pending`` are applied and expired ones purged.
3. Each collection (``memories``; ``docs`` when documents are registered) is compared
   with SQLite, cheaply (``disagreement``): its number of points; a random sample of
   ``SAMPLE_SIZE`` rows whose points must be there with a sane dense vector (finite,
   length 1), the payload SQLite says and (memories) the keyword terms of their text, the
   first ``SEARCHED`` of them found by an exact dense search with their own vector (an
   HNSW search may miss a point of a healthy index, so the probe never uses one; a point
   tied at the top with ten others counts as found); and the point counts of every live
   memory and of the groups (user, project, kind / project, collection) of the first
   ``GROUPED`` sampled rows, and of one sampled memory's tag and creation time, which go
   through the engine's payload indexes (the time bound is skipped when another row was
   created within a few float steps of it, which an index may not tell apart). Only when
   the number of points differs are all ids compared: points with no row (left by a
   crash) are deleted; readable rows with no point mean the index lost points.
4. A disagreement is repaired in proportion (``repair``): every point is compared with
   its row (present, sane dense vector, payload), points with no row are deleted, and
   only the missing or wrong ones (and the sampled one found wrong) are written again
   from SQLite. The check then runs again; only if it still disagrees, or when the
   engine failed to read its points or more than half of them were missing or wrong
   (damaged files, not drift), is the collection moved aside (``vectors.broken-<time>``)
   and made anew -- left in place when it is empty, or on a Qdrant server, where every
   point is overwritten -- and every point written again from SQLite (documents from
   the chunk text the registry stores). One
   ERROR line on stderr says what was wrong and what is done; one INFO line when it is
   done. If the index still disagrees, or the rebuild failed, every call that needs the
   index is refused with the reason (``Runtime.fail``): a broken index is never served
   silently.
5. Where it runs: a memories collection of up to ``INLINE_REPAIR_MAX`` points (seconds of
   work) is repaired before any call is served; a larger one in the background
   (``Runtime.in_background``), calls served meanwhile from the index as it is (points
   being rewritten may be missing from results), with ``Runtime.repairing`` saying how
   far it got (``memvault doctor`` and recall's ``index_note`` show it). Documents are
   repaired before serving.

``memvault reindex`` (a new model) drops both collections and rebuilds them from SQLite
(``rebuild_documents`` for the documents).
"""

from __future__ import annotations

import errno
import logging
import math
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio

from memvault.service.documents.collection import DOCS_COLLECTION, ensure_docs_collection
from memvault.service.documents.points import restore_chunks
from memvault.service.errors import Conflict
from memvault.service.filters import scope_filter
from memvault.service.indexing import (
    index_rows,
    keyword_vector,
    memory_payload,
    settle_pending,
    sweep_expired,
)
from memvault.service.runtime import MEMORY_COLLECTION, Repairing, Runtime
from memvault.storage.docs import DocStore
from memvault.storage.vectors.base import (
    RANGE_SLACK_ULPS,
    StoredPoint,
    VectorFilter,
    VectorIndex,
    canonical_id,
)

log = logging.getLogger(__name__)

SAMPLE_SIZE = 16
"""Rows per collection whose points are read back at start."""
SEARCHED = 2
"""Sampled points searched for with their own dense vector."""
GROUPED = 4
"""Sampled rows whose group's point count is compared through the payload indexes."""
NORM_TOLERANCE = 1e-3
"""How far a stored dense vector's length may be from 1 (the engine normalises cosine vectors)."""
REBUILD_BATCH = 256
"""Memories embedded per batch when rebuilding."""
SWEEP_BATCH = 256
"""Points read back per engine call when every point is compared with SQLite."""
INLINE_REPAIR_MAX = 2000
"""A memories collection of more points than this is repaired in the background, calls served meanwhile."""
READ_FAILED = "reading it failed"
"""How a disagreement found by the engine failing to read its points begins (rebuilt whole)."""
TIE = 1e-4
"""Cosine below 1 within which a search hit ties with a point's own vector (exact duplicates)."""


@dataclass
class Sampled:
    """One sampled row: the point ``id`` must exist with ``payload`` (the fields SQLite knows),
    keyword ``terms`` (None: not checked) and match ``scope`` (the filter of its self-search)."""

    id: str
    payload: dict[str, Any]
    terms: frozenset[int] | None
    scope: VectorFilter


@dataclass
class Expected:
    """What SQLite says one collection must hold, and how to rebuild it.

    count: points; noun / item: what the points are, for messages ("memories" / "memory"); sample: rows
    checked point by point; groups: (filter, points, what) counted through the payload indexes;
    all_ids(): every id that should have a point; readable(ids): how many of those ids
    SQLite can rebuild (unreadable rows cannot); rebuild(): write every point again,
    returns how many; payloads(ids): the payload SQLite says each readable id's point
    holds; reindex(ids): write those points again, returns how many; suspects: ids the
    check found wrong (rewritten by a repair whatever the sweep finds).
    """

    name: str
    noun: str
    item: str
    count: int
    all_ids: Callable[[], Awaitable[set[str]]]
    readable: Callable[[list[str]], Awaitable[int]]
    rebuild: Callable[[], Awaitable[int]]
    payloads: Callable[[list[str]], Awaitable[dict[str, dict[str, Any]]]]
    reindex: Callable[[list[str]], Awaitable[int]]
    sample: list[Sampled] = field(default_factory=list)
    groups: list[tuple[VectorFilter, int, str]] = field(default_factory=list)
    suspects: set[str] = field(default_factory=set)


def _same(stored: Any, wanted: Any) -> bool:
    """Payload values equal; numbers to 1e-9 relative (the engine may keep fewer digits of a float)."""
    numbers = (int, float)
    if isinstance(stored, numbers) and isinstance(wanted, numbers) and not isinstance(stored, bool) \
            and not isinstance(wanted, bool):
        return math.isclose(stored, wanted, rel_tol=1e-9)
    return stored == wanted


def point_problem(s: Sampled, p: StoredPoint | None, dim: int) -> str | None:
    """What is wrong with the stored point ``p`` of the sampled row ``s`` (None: nothing)."""
    if p is None:
        return "has no point"
    if len(p.dense) != dim or not all(math.isfinite(x) for x in p.dense):
        return f"has an unreadable dense vector ({len(p.dense)} values, {dim} expected)"
    norm = math.sqrt(sum(x * x for x in p.dense))
    if abs(norm - 1.0) > NORM_TOLERANCE:
        return f"has a dense vector of length {norm:.4g}, not 1"
    for key, value in s.payload.items():
        if not _same(p.payload.get(key), value):
            return f"has payload {key}={p.payload.get(key)!r} where SQLite says {value!r}"
    if s.terms is not None and p.terms != s.terms:
        return "has keyword terms that are not those of its text"
    return None


async def disagreement(rt: Runtime, vectors: VectorIndex, exp: Expected) -> str | None:
    """How collection ``exp.name`` disagrees with SQLite, for a person; None when it agrees.

    Deletes points with no row (a crash leaves them) on the way. Any error of the engine
    while reading counts as a disagreement.
    """
    name, dim = exp.name, (await rt.ready())[0].dim
    try:
        exact = True
        n = await rt.run_sync(vectors.count, name)
        if n != exp.count:
            present = await rt.run_sync(vectors.ids, name)
            wanted = await exp.all_ids()
            orphans = await _delete_orphans(rt, vectors, name, present, wanted)
            missing = sorted(wanted - present)
            if missing:
                lost = await exp.readable(missing)
                if lost:
                    return f"it holds {len(present) - len(orphans)} of the {len(wanted)} {exp.noun} in SQLite"
                exact = False  # only unreadable rows lack a point: group counts cannot be compared
        got = await rt.run_sync(vectors.retrieve, name, [s.id for s in exp.sample])
        for s in exp.sample:
            problem = point_problem(s, got.get(canonical_id(s.id)), dim)
            if problem is not None:
                exp.suspects.add(s.id)
                return f"{exp.item} {s.id} {problem}"
        for s in exp.sample[:SEARCHED]:
            if not await found_by_own_vector(rt, vectors, name, s, got[canonical_id(s.id)].dense):
                exp.suspects.add(s.id)
                return f"an exact search with the vector of {exp.item} {s.id} does not find it"
        if exact:
            for flt, want, what in exp.groups:
                have = await rt.run_sync(vectors.count, name, flt)
                if have != want:
                    return f"its payload index counts {have} points for {what} where SQLite has {want}"
    except Exception as exc:  # the engine failing to read its own points is a disagreement too
        return f"{READ_FAILED} ({str(exc) or type(exc).__name__})"
    return None


class _NoLock:
    """A lock already held by the caller."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


async def found_by_own_vector(rt: Runtime, vectors: VectorIndex, name: str, s: Sampled, dense: list[float]) -> bool:
    """Whether an exact dense search with a point's own vector, in its own scope, finds it:
    among the top 10, or behind 10 hits that tie with it (identical vectors)."""
    hits = await rt.run_sync(partial(vectors.search_dense, name, dense, s.scope, 10, exact=True))
    if canonical_id(s.id) in {h.id for h in hits}:
        return True
    return len(hits) == 10 and hits[-1].score >= 1.0 - TIE


async def _delete_orphans(rt: Runtime, vectors: VectorIndex, name: str, present: set[str],
                          wanted: set[str]) -> list[str]:
    """Delete the points of ``name`` that have no row in SQLite (a crash leaves them); return their ids."""
    orphans = sorted(present - wanted)
    if orphans:
        await rt.run_sync(vectors.delete, name, orphans)
        log.info("vector collection %r: deleted %d points with no row in SQLite", name, len(orphans))
    return orphans


async def sweep(rt: Runtime, vectors: VectorIndex, exp: Expected, lock: anyio.Lock | _NoLock,
                progress: Repairing | None = None) -> list[str]:
    """Compare every point of ``exp.name`` with SQLite: delete the points with no row (under
    ``lock``) and return the ids whose point is missing or wrong (no point, an unreadable or
    not unit-length dense vector, a payload other than SQLite's), plus ``exp.suspects``."""
    name, dim = exp.name, (await rt.ready())[0].dim
    async with lock:
        present = await rt.run_sync(vectors.ids, name)
        wanted = await exp.all_ids()
        await _delete_orphans(rt, vectors, name, present, wanted)
    bad = set(wanted - present) | {canonical_id(i) for i in exp.suspects}
    both = sorted(wanted & present)
    for i in range(0, len(both), SWEEP_BATCH):
        part = both[i : i + SWEEP_BATCH]
        expected = await exp.payloads(part)
        got = await rt.run_sync(vectors.retrieve, name, part)
        for pid, payload in expected.items():
            if point_problem(Sampled(pid, payload, None, VectorFilter()), got.get(canonical_id(pid)), dim) is not None:
                bad.add(canonical_id(pid))
        if progress is not None:
            progress.reason = f"{progress.reason.split(';')[0]}; {min(i + SWEEP_BATCH, len(both))} of {len(both)} compared"
    return sorted(bad)


async def repair(rt: Runtime, exp: Expected, again: Callable[[], Awaitable[Expected]], problem: str,
                 lock: anyio.Lock | _NoLock, *, background: bool) -> None:
    """Repair collection ``exp.name`` in proportion to what disagrees (see the module
    docstring), falling back to setting it aside and rebuilding it; raises RuntimeError when
    it still disagrees after that. ``again()``: what SQLite says now (for the check after the
    repair: writes went on meanwhile). ``background``: calls are served meanwhile, so the
    writes take ``lock`` batch by batch and ``rt.repairing`` says how far it got."""
    _, vectors = await rt.ready()
    name = exp.name
    state = Repairing(problem, started=rt.clock.now())
    if background:
        rt.repairing[name] = state
    try:
        t0 = time.perf_counter()
        if background:
            log.info("vector collection %r disagrees with SQLite (%s); comparing every point with SQLite in the "
                     "background, calls served meanwhile", name, problem)
        async with AsyncExitStack() as held:
            if not background:
                await held.enter_async_context(lock)
                lock = _NoLock()
            if problem.startswith(READ_FAILED):  # the engine cannot read its own files: damage, not drift
                async with lock:
                    await rebuild_collection(rt, vectors, await again(), problem)
                return
            todo = await sweep(rt, vectors, exp, lock, state)
            if len(todo) * 2 > exp.count:  # most points lost or wrong: the files are damaged, not drifted
                async with lock:
                    await rebuild_collection(rt, vectors, await again(),
                                             f"{problem}; {len(todo)} of {exp.count} {exp.noun} missing or wrong")
                return
            state.reason, state.total = problem, len(todo)
            # One ERROR line per collection: what was wrong, and what is done about it.
            log.error("vector collection %r disagrees with SQLite (%s); re-indexing what disagrees from SQLite "
                      "(%d of %d %s)%s", name, problem, len(todo), exp.count, exp.noun,
                      " in the background, calls served meanwhile" if background else "")
            for i in range(0, len(todo), REBUILD_BATCH):
                async with lock:
                    state.done += await exp.reindex(todo[i : i + REBUILD_BATCH])
            async with lock:
                now = await again()
                still = await disagreement(rt, vectors, now)
                if still is None:
                    log.info("vector collection %r repaired: %d of %d %s written again in %.1fs", name, state.done,
                             now.count, exp.noun, time.perf_counter() - t0)
                    return
                await rebuild_collection(rt, vectors, now, f"{still}, after re-indexing {len(todo)} {exp.noun}")
    finally:
        rt.repairing.pop(name, None)


async def rebuild_collection(rt: Runtime, vectors: VectorIndex, exp: Expected, problem: str | None) -> None:
    """Set collection ``exp.name`` aside (see the module docstring) and write every point again;
    ``problem``: None when it was set aside as damaged when opened (already logged).
    Raises RuntimeError when it still disagrees after the rebuild."""
    name = exp.name
    if problem is not None:
        try:
            empty = await rt.run_sync(vectors.count, name) == 0
        except Exception:
            empty = False
        if empty:  # nothing worth keeping (e.g. the index folder was deleted)
            where = "it is empty"
        else:
            moved = await rt.run_sync(vectors.set_aside, name)
            if moved is None:  # a Qdrant server: every point is overwritten instead
                where = "rewriting every point in place"
            else:
                await rt.open_collection(name)  # anew, empty
                where = f"moved it to {moved}"
        log.error("vector collection %r disagrees with SQLite (%s); %s; rebuilding it from SQLite",
                  name, problem, where)
    t0 = time.perf_counter()
    done = await exp.rebuild()
    log.info("rebuilt vector collection %r from SQLite: %d %s in %.1fs", name, done, exp.noun,
             time.perf_counter() - t0)
    still = await disagreement(rt, vectors, exp)
    if still is not None:
        raise RuntimeError(f"vector collection {name!r} still disagrees with SQLite after a rebuild: {still}")


async def heal_collection(rt: Runtime, exp: Expected) -> None:
    """Compare collection ``exp.name`` with SQLite and rebuild it whole when they disagree
    (``memvault reindex``-like; start-up uses ``repair`` first). Call with the collection's
    write lock held. Raises RuntimeError when it still disagrees after the rebuild."""
    _, vectors = await rt.ready()
    known = rt.set_aside.pop(exp.name, None)  # damaged when opened: already set aside and logged
    problem = await disagreement(rt, vectors, exp)
    if problem is not None:
        await rebuild_collection(rt, vectors, exp, None if known is not None else problem)


async def memories_expected(rt: Runtime, now: float) -> Expected:
    """What SQLite says the ``memories`` collection holds at ``now`` (pending rows settled first)."""
    facts = rt.facts

    async def all_ids() -> set[str]:
        return await facts.indexable_ids(now)

    async def readable(ids: list[str]) -> int:
        return sum([len(await facts.get(ids[i : i + 500])) for i in range(0, len(ids), 500)])

    async def rebuild() -> int:
        return await reindex(sorted(await facts.indexable_ids(now)))

    async def reindex(ids: list[str]) -> int:
        done = 0
        for i in range(0, len(ids), REBUILD_BATCH):
            rows = [r for r in await facts.get(ids[i : i + REBUILD_BATCH])  # unreadable rows are left out (logged)
                    if r.status == "active" and (r.expires_at is None or r.expires_at > rt.clock.now())]
            await index_rows(rt, rows)
            done += len(rows)
        return done

    async def payloads(ids: list[str]) -> dict[str, dict[str, Any]]:
        return {r.id: memory_payload(r) for r in await facts.get(ids)}

    rows = await facts.sample_indexable(now, SAMPLE_SIZE)
    terms = await rt.run_sync(lambda: [frozenset(keyword_vector(r.content, query=False).indices) for r in rows])
    sample = [Sampled(r.id, memory_payload(r), t,
                      VectorFilter(user_id=r.user_id, projects=[r.project], status="active", alive_at=now))
              for r, t in zip(rows, terms, strict=True)]
    count = await facts.count_indexable(now)
    groups = [(VectorFilter(status="active", alive_at=now), count, "every live memory")]
    for u, p, k in dict.fromkeys((r.user_id, r.project, r.kind) for r in rows[:GROUPED]):
        groups.append((VectorFilter(user_id=u, projects=[p], kinds=[k], status="active", alive_at=now),
                       await facts.count_group(u, p, now, kind=k), f"user {u!r}, project {p!r}, kind {k!r}"))
    if rows:  # the tags and creation-time indexes (recall's tags, since and until), through one sampled row
        r = next((r for r in rows if r.tags), rows[0])
        by = await facts.count_group(r.user_id, r.project, now, created_to=r.created_at)
        near = await facts.count_group(r.user_id, r.project, now, created_to=_steps(r.created_at, 2 * RANGE_SLACK_ULPS + 1))
        if near == by:  # no other row within the float steps an engine's bound may blur
            groups.append((scope_filter(r.user_id, [r.project], now, created_to=r.created_at), by,
                           f"user {r.user_id!r}, project {r.project!r}, created by {r.created_at}"))
        if r.tags:
            groups.append((scope_filter(r.user_id, [r.project], now, tags_any=[r.tags[0]]),
                           await facts.count_group(r.user_id, r.project, now, tag=r.tags[0]),
                           f"user {r.user_id!r}, project {r.project!r}, tag {r.tags[0]!r}"))
    return Expected(MEMORY_COLLECTION, "memories", "memory", count, all_ids, readable, rebuild, payloads, reindex,
                    sample, groups)


async def documents_expected(rt: Runtime, store: DocStore) -> Expected:
    """What the document registry says the ``docs`` collection holds."""

    async def readable(ids: list[str]) -> int:
        return len(await store.chunks(ids))  # chunks of unreadable rows are left out (and logged)

    async def rebuild() -> int:
        return await restore_chunks(rt, store)

    async def reindex(ids: list[str]) -> int:
        return await restore_chunks(rt, store, ids)

    async def payloads(ids: list[str]) -> dict[str, dict[str, Any]]:
        return {c.id: _doc_expected(c.file) for c in (await store.chunks(ids)).values() if c.file is not None}

    files = [(c, c.file) for c in await store.sample_chunks(SAMPLE_SIZE) if c.file is not None]
    sample = [Sampled(c.id, _doc_expected(f), None,
                      VectorFilter(projects=[f.project], status=None, equals={"collection": f.collection}))
              for c, f in files]
    groups = [(VectorFilter(projects=[p], status=None, equals={"collection": c}), await store.count_chunks_in(p, c),
               f"project {p!r}, collection {c!r}")
              for p, c in dict.fromkeys((f.project, f.collection) for _, f in files[:GROUPED])]
    return Expected(DOCS_COLLECTION, "document chunks", "document chunk", await store.count_chunks(),
                    store.all_chunk_ids, readable, rebuild, payloads, reindex, sample, groups)


def _doc_expected(f: Any) -> dict[str, Any]:
    """The payload fields a document chunk's point must hold, from its file's row."""
    return {"project": f.project, "collection": f.collection, "path": f.path, "kind": "doc"}


def _steps(x: float, n: int) -> float:
    """``x`` moved ``n`` float steps up."""
    for _ in range(n):
        x = math.nextafter(x, math.inf)
    return x


async def heal_index(rt: Runtime) -> None:
    """Start-up: make both collections agree with SQLite (see the module docstring).

    Never raises: when the index cannot be made to agree, the runtime refuses every call
    that needs it, with the reason (``Runtime.fail``).
    """
    try:
        async with rt.write_lock:
            await settle_pending(rt, rt.clock.now())
        await sweep_expired(rt)
        async with rt.write_lock:
            exp = await memories_expected(rt, rt.clock.now())
            problem = await _first_problem(rt, exp)
        if problem is not None:
            found = problem

            async def again() -> Expected:
                return await memories_expected(rt, rt.clock.now())

            async def run(background: bool) -> None:
                try:
                    await _repair_or_rebuild(rt, exp, again, found, rt.write_lock, background=background)
                except Exception as exc:
                    _failed(rt, exc)

            big = exp.count > INLINE_REPAIR_MAX
            if not (big and rt.in_background(partial(run, True))):
                await run(False)
                if rt.error is not None:
                    return
        async with rt.docs_lock, DocStore.connect(rt.settings.db_path) as store:
            if await store.count_chunks():
                try:
                    await ensure_docs_collection(rt, rebuild_on_mismatch=False)
                except Conflict:  # indexed with another model: index_docs or `memvault reindex` re-embeds them
                    log.info("documents were indexed with another embedding model; not checked at start")
                else:
                    docs = await documents_expected(rt, store)
                    problem = await _first_problem(rt, docs)
                    if problem is not None:
                        await _repair_or_rebuild(rt, docs, partial(documents_expected, rt, store), problem, _NoLock(),
                                                 background=False)
    except Exception as exc:
        _failed(rt, exc)


async def _first_problem(rt: Runtime, exp: Expected) -> str | None:
    """The start-up check's finding for ``exp.name`` ("" when it was set aside as damaged when
    opened: already logged, rebuilt whole), None when it agrees."""
    if rt.set_aside.pop(exp.name, None) is not None:
        return ""
    _, vectors = await rt.ready()
    return await disagreement(rt, vectors, exp)


async def _repair_or_rebuild(rt: Runtime, exp: Expected, again: Callable[[], Awaitable[Expected]], problem: str,
                             lock: anyio.Lock | _NoLock, *, background: bool) -> None:
    """A collection set aside when opened (``problem`` "") is rebuilt whole; another is repaired."""
    if problem:
        await repair(rt, exp, again, problem, lock, background=background)
        return
    _, vectors = await rt.ready()
    if background:
        rt.repairing[exp.name] = Repairing("it was set aside as damaged", total=exp.count, started=rt.clock.now())
    try:
        async with lock:
            await rebuild_collection(rt, vectors, exp, None)
    finally:
        rt.repairing.pop(exp.name, None)


def _failed(rt: Runtime, exc: Exception) -> None:
    """Refuse calls that need the index; a full disk is tried again by later calls (it may be freed)."""
    log.error("the vector index could not be made to agree with SQLite", exc_info=exc)
    if _disk_full(exc):
        rt.fail(f"memvault could not repair its vector index: {exc}", retry=True)
        return
    rt.fail(f"memvault could not make its vector index agree with SQLite: {str(exc) or type(exc).__name__}. "
            f"Run `memvault reindex` to rebuild it from SQLite, or move {rt.settings.vectors_dir} away.")


def _disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` or one of its causes is a full disk (ENOSPC, EDQUOT)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


async def rebuild_documents(rt: Runtime) -> int:
    """``memvault reindex``: drop the ``docs`` collection and write every registered chunk again
    with the current model (from the stored chunk text). Returns the chunks embedded."""
    _, vectors = await rt.ready()
    async with rt.docs_lock, DocStore.connect(rt.settings.db_path) as store:
        await rt.run_sync(vectors.drop_collection, DOCS_COLLECTION)
        rt.set_aside.pop(DOCS_COLLECTION, None)
        await rt.open_collection(DOCS_COLLECTION)
        return await restore_chunks(rt, store)
