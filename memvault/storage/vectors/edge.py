"""Qdrant Edge (``qdrant-edge-py==0.9.0``, module ``qdrant_edge``) embedded in the process.

``EdgeVectorIndex`` is the adapter: memvault's VectorIndex (collections, writes, reads,
flush, close) over one EdgeShard per collection, with memvault's filters and points
translated to the engine's and the engine's failures to memvault's errors. Beside it:
the collection folder's layout and record, the closing record and setting aside in
``edge_integrity``; the state of an open collection in ``edge_shard``; the disk's free
space and the refusal of writes and loads that would not fit (``DiskFull``) in
``edge_disk``; the HNSW build, swapped in by ``edge_swap`` from a child running
``edge_build``.

Damage: a collection whose record is unreadable or missing beside a shard, whose files
differ from its closing record (truncated, rewritten or deleted while memvault was not
running), or that Qdrant Edge refuses to load (an error, or a Rust panic) raises
DamagedCollection. ``set_aside`` then moves the folder to ``<root>.broken-<UTC time>/``
(the newest ``BROKEN_KEPT`` such folders are kept, while the disk has room) so that the
collection can be made anew and rebuilt from SQLite. A panic of the engine on an open
collection becomes DamagedCollection too, instead of escaping as a BaseException.

Choices:

- WAL always on (Edge's default; never disabled): a write is in the WAL when ``update``
  returns, so it survives kill -9 without flush or close. For OS-crash / power-loss
  safety the server's timer calls ``flush``, which fsyncs the WAL files (GIL released) and
  only every ``FULL_FLUSH_S`` runs Edge's own flush (GIL held for its whole run).
- ``optimize()`` never runs in this process: it holds the GIL for seconds to minutes.
  Points live in a plain appendable segment, searched exactly (``SearchParams(exact=True)``),
  until ``build_index`` has a child process build HNSW on a copy of the shard
  (``edge_swap``, ``edge_build``) and swaps the copy in; a shard holding indexed vectors is
  searched with HNSW (``exact=False``; its appendable segment is still scanned exactly).
- One process per store: a second ``EdgeShard.load`` on the same folder (another process
  or another object in this one) fails with ``WouldBlock``; that becomes StoreLocked.

Threads: an EdgeShard may be called from any thread (it is not thread-bound), but every
call in 0.9.0 holds the GIL for its whole run (a large upsert, ``query_batch`` and
``flush`` stall every other Python thread meanwhile), so threads add no parallelism. One
lock per index serialises calls (free, given the GIL) so that ``close`` and
``drop_collection`` can never race an operation; upserts are cut into batches of
``upsert_batch`` points so that one big write never stalls the event loop for long.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import qdrant_edge as qe

try:
    import fcntl
except ImportError:  # not POSIX: the lock is probed by loading the shard
    fcntl = None  # type: ignore[assignment]

from . import edge_build, edge_disk, edge_integrity
from .base import (
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    KEYWORDS,
    PARENT,
    PREFIX_FIELDS,
    CollectionMismatch,
    DamagedCollection,
    Hit,
    Point,
    SparseVector,
    StoredPoint,
    StoreLocked,
    UnknownCollection,
    VectorFilter,
    VectorIndex,
    best_per_item,
    canonical_id,
    check_collection_name,
    dense_list,
    engine_bounds,
    first_points_of,
    item_id,
    stored_point,
)
from .edge_integrity import META_FILE, SHARD_DIR, SHARD_REL, changed_files, has_hnsw, shard_files
from .edge_shard import OpenShard, is_panic
from .edge_swap import JOURNAL_MAX, IndexSwap

log = logging.getLogger(__name__)

SCROLL_PAGE = 2048
_NO_SPACE = re.compile(r"No space left on device|os error 28|ENOSPC", re.I)
"""How Qdrant Edge's errors say the disk is full."""
PAYLOAD_INDEX_AFTER = 500
"""Points a collection holds before its payload indexes are made (a shard that has them keeps
them). Below, filters read the payload of each point, in time linear in the points (small
at this size), while a small store takes almost no disk: each payload index allocates a
4 MB page, a 1 MB tracker and two 1 MB bitmaps, which loading on tmpfs reads in whole."""
FULL_FLUSH_S = 300.0
"""Least seconds between two of Qdrant Edge's own flushes (GIL held) by the flush timer."""


def _fsync_folder(folder: Path) -> None:
    """fsync every file in ``folder`` and the folder itself (its entries), GIL released.
    A file that goes away meanwhile is skipped."""
    for path in folder.iterdir():
        try:
            fd = os.open(path, os.O_RDONLY)
        except (FileNotFoundError, IsADirectoryError):
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _describe(model_id: str, dim: int) -> str:
    return f"model {model_id!r} (dim {dim})"


def edge_filter(flt: VectorFilter | None) -> qe.Filter | None:
    """Translate a VectorFilter into a ``qdrant_edge.Filter`` (None = no condition)."""
    if flt is None:
        return None
    must: list = []
    for c in flt.conditions():
        if c.op == "eq":
            must.append(qe.FieldCondition(c.key, match=qe.MatchValue(c.value)))
        elif c.op == "any":
            must.append(qe.FieldCondition(c.key, match=qe.MatchAny(c.value)))
        elif c.op == "range":
            must.append(qe.FieldCondition(c.key, range=qe.RangeFloat(**engine_bounds(c))))
        elif c.op == "alive":
            # is_empty matches an absent key, null and [] alike.
            must.append(
                qe.Filter(
                    should=[
                        qe.IsEmptyCondition(c.key),
                        qe.FieldCondition(c.key, range=qe.RangeFloat(**engine_bounds(c))),
                    ]
                )
            )
        elif c.op == "prefix":
            must.append(qe.FieldCondition(c.key, match=qe.MatchPrefix(c.value)))
        elif c.op == "absent":
            must.append(qe.IsEmptyCondition(c.key))
        elif c.op == "absent_or_eq":
            must.append(qe.Filter(should=[qe.IsEmptyCondition(c.key),
                                          qe.FieldCondition(c.key, match=qe.MatchValue(c.value))]))
        else:  # pragma: no cover - Condition.op is a closed set
            raise ValueError(f"unknown condition {c.op!r}")
    return qe.Filter(must=must) if must else None


def _items_filter(ids: Sequence[str]) -> qe.Filter:
    """The points of items ``ids``: those ids themselves and the points whose ``parent`` is one."""
    id_set: set[qe.PointId] = {canonical_id(i) for i in ids}  # qe.PointId: a stub-only alias
    return qe.Filter(should=[qe.HasIdCondition(id_set),
                             qe.FieldCondition(PARENT, match=qe.MatchAny(sorted(str(i) for i in id_set)))])


class EdgeVectorIndex(IndexSwap, VectorIndex):
    """VectorIndex over Qdrant Edge shards under ``root`` (see the module docstring).

    root: folder holding one sub-folder per collection (created 0700 if absent).
    exact: always search exactly, even a shard with an HNSW index (False: HNSW where built).
    upsert_batch: points per WAL record / GIL hold in ``upsert``.
    full_flush_s: least seconds between two Qdrant Edge flushes by ``flush`` (which fsyncs
    the WAL in between).
    payload_index_after: points a collection holds before its payload indexes are made
    (None: ``PAYLOAD_INDEX_AFTER``; 0: at once).
    Raises StoreLocked from ``ensure_collection`` if another process holds the store.

    Locks: ``_lock`` serialises every engine call; ``_writes`` (taken first) every call
    that changes the shard's files, so that ``build_index`` can copy them while searches go on.
    """

    def __init__(self, root: str | os.PathLike[str], *, exact: bool = False, upsert_batch: int = 256,
                 full_flush_s: float = FULL_FLUSH_S, payload_index_after: int | None = None):
        self.root = Path(root)
        self._index_after = PAYLOAD_INDEX_AFTER if payload_index_after is None else max(0, payload_index_after)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._force_exact = exact
        self._exact = qe.SearchParams(exact=True)
        self._hnsw = qe.SearchParams(exact=False)
        self._upsert_batch = max(1, upsert_batch)
        self._full_flush_s = full_flush_s
        self._last_full = time.monotonic()
        self._open: dict[str, OpenShard] = {}
        self._lock = threading.RLock()
        self._writes = threading.RLock()
        self._closed = False
        self._building = False  # an index build runs (``build_index``)
        self._child: subprocess.Popen | None = None  # its child process, once started

    # --- collections -------------------------------------------------------------

    def ensure_collection(self, name: str, dim: int, model_id: str) -> None:
        check_collection_name(name)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        with self._writes, self._lock:
            if self._closed:
                raise RuntimeError("vector index is closed")
            cur = self._open.get(name)
            if cur is not None:
                if (cur.model_id, cur.dim) != (model_id, dim):
                    raise CollectionMismatch(name, _describe(cur.model_id, cur.dim), _describe(model_id, dim))
                return
            cdir = self.root / name
            meta_path = cdir / META_FILE
            cdir.mkdir(mode=0o700, parents=True, exist_ok=True)
            stored = edge_integrity.read_record(name, meta_path)
            rel = SHARD_DIR if stored is None else stored.get("shard", SHARD_DIR)
            if not isinstance(rel, str) or not SHARD_REL.match(rel):
                raise DamagedCollection(name, str(cdir), f"{META_FILE} names no shard folder ({rel!r})")
            sdir = cdir / rel
            built_points = stored.get("built_points", 0) if stored is not None else 0
            built_points = built_points if isinstance(built_points, int) else 0
            has_shard = sdir.is_dir() and any(sdir.iterdir())
            if stored is not None:
                if (stored["model_id"], stored["dim"]) != (model_id, dim):
                    raise CollectionMismatch(
                        name, _describe(stored["model_id"], stored["dim"]), _describe(model_id, dim)
                    )
                closed = stored.get("closed")
                if isinstance(closed, dict) and closed and not has_shard:
                    raise DamagedCollection(name, str(cdir), "its shard folder is gone")
                if isinstance(closed, dict) and has_shard:
                    changed = changed_files(sdir, closed)
                    if changed:
                        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
                        raise DamagedCollection(name, str(cdir), "files changed after memvault closed it: "
                                                + ", ".join(changed[:3]) + more)
            elif has_shard:
                # The record is written before the shard: a shard without one was not
                # finished by memvault, or lost its record since.
                raise DamagedCollection(name, str(cdir), f"its shard has no {META_FILE}")
            else:
                edge_integrity.write_record(meta_path, edge_integrity.record(model_id, dim))
            if has_shard:  # on a disk too small to load it the process would die (SIGBUS) half-way
                edge_disk.check_load(self.root, sdir)
            else:
                edge_disk.check_create(self.root, 0 if self._index_after else
                                       len(KEYWORD_FIELDS) + len(FLOAT_FIELDS) + len(PREFIX_FIELDS))
            if stored is not None and "closed" in stored:
                # Open from now on, before the engine touches a file: loading a shard rewrites
                # some (it applies and deletes its journals), so a process that dies while
                # loading (a full tmpfs kills it with SIGBUS) must leave no closing record
                # to compare them with; the next start then checks the index against SQLite.
                edge_integrity.write_record(meta_path, edge_integrity.record(model_id, dim, rel, built_points))
            shard = self._open_shard(name, sdir, dim, model_id, has_shard)
            try:
                with self._engine(name):
                    payload_indexed = self._ensure_indexes(shard, self._index_after)
                    windows = self._has_windows(shard)
            except BaseException:
                shard.close()
                raise
            indexed = has_hnsw(sdir)
            self._open[name] = OpenShard(shard, dim, model_id, sdir, name, rel, dirty=True, indexed=indexed,
                                         built_points=built_points if indexed else 0, payload_indexed=payload_indexed,
                                         windows=windows)
            edge_integrity.remove_leftovers(cdir, sdir)
            log.info("vector collection %s open at %s (%s)", name, sdir, _describe(model_id, dim))

    def drop_collection(self, name: str) -> None:
        check_collection_name(name)
        self._stop_build()
        with self._writes, self._lock:
            cur = self._open.pop(name, None)
            cdir = self.root / name
            sdir = edge_integrity.current_dir(cdir)
            if cur is not None:
                cur.shard.close()
            elif sdir.is_dir() and any(sdir.iterdir()):
                self._probe_lock(name, sdir)
            if cdir.exists():
                # Drop the record first: a crash half-way then leaves a shard with no record,
                # which ensure_collection refuses instead of trusting.
                (cdir / META_FILE).unlink(missing_ok=True)
                shutil.rmtree(cdir)

    def set_aside(self, name: str) -> str | None:
        """Move the folder of collection ``name`` to ``<root>.broken-<UTC time>/<name>`` (closing
        it first if open) and return the new path; keep the newest ``BROKEN_KEPT`` such folders.

        A store another process holds is refused (StoreLocked), never moved under it.
        Returns "" when there is no folder to move, or when its disk has too little room to
        keep it and rebuild the collection beside it (older set-aside copies are deleted
        first; if that is not enough, the damaged files are deleted, with a WARNING line).
        """
        check_collection_name(name)
        self._stop_build()
        with self._writes, self._lock:
            cur = self._open.pop(name, None)
            cdir = self.root / name
            sdir = edge_integrity.current_dir(cdir)
            if cur is not None:
                try:
                    cur.shard.close()
                except BaseException as exc:  # a damaged shard may fail to close; it is moved anyway
                    if not (isinstance(exc, Exception) or is_panic(exc)):
                        raise
                    log.warning("closing damaged vector collection %s: %s", name, exc)
            elif sdir.is_dir() and any(sdir.iterdir()):
                self._probe_lock(name, sdir)
            return edge_integrity.move_aside(self.root, name)

    # --- writes ------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        with self._writes, self._lock:
            cur = self._get(collection)
            edge_disk.check_write(self.root, len(points), cur.dim)  # a full disk kills a mapped write (SIGBUS)
            edge_points = [self._edge_point(p, cur.dim) for p in points]
            cur.written_since += len(edge_points)
            if any(PARENT in p.payload for p in points):
                cur.windows = True
            for i in range(0, len(edge_points), self._upsert_batch):
                self._update(collection, qe.UpdateOperation.upsert_points(edge_points[i : i + self._upsert_batch]))
            self._index_payload_when_due(collection, cur)

    def update_sparse(self, collection: str, vectors: Mapping[str, SparseVector]) -> None:
        pvs = [
            qe.PointVectors(canonical_id(i), {KEYWORDS: qe.SparseVector(list(v.indices), [float(x) for x in v.values])})
            for i, v in vectors.items()
            if v.indices
        ]
        with self._writes, self._lock:
            for i in range(0, len(pvs), self._upsert_batch):
                self._update(collection, qe.UpdateOperation.update_vectors(pvs[i : i + self._upsert_batch]))

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict) -> None:
        if not ids:
            return
        # By filter, so that ids without a point are skipped instead of failing the batch.
        op = qe.UpdateOperation.set_payload_by_filter(_items_filter(ids), payload)
        with self._writes, self._lock:
            if PARENT in payload:
                self._get(collection).windows = True
            self._update(collection, op)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        op = qe.UpdateOperation.delete_points_by_filter(_items_filter(ids))
        with self._writes, self._lock:
            self._update(collection, op)

    def delete_by_filter(self, collection: str, flt: VectorFilter) -> None:
        f = edge_filter(flt)
        if f is None:
            raise ValueError("delete_by_filter needs at least one condition; use drop_collection to empty")
        with self._writes, self._lock:
            self._get(collection)  # UnknownCollection even when nothing can match
            if flt.matches_nothing():
                return
            self._update(collection, qe.UpdateOperation.delete_points_by_filter(f))

    # --- reads -------------------------------------------------------------------

    def search_dense(self, collection: str, vector: Sequence[float], flt: VectorFilter, limit: int, *,
                     exact: bool = False) -> list[Hit]:
        with self._lock:
            cur = self._get(collection)
            query = qe.Query.Nearest(dense_list(vector, cur.dim), using=DENSE)
            return self._query(cur, query, flt, limit, self._exact if exact or self._force_exact or not cur.indexed
                               else self._hnsw)

    def search_dense_many(self, collection: str, vectors: Sequence[Sequence[float]], flt: VectorFilter, limit: int,
                          *, exact: bool = False) -> list[list[Hit]]:
        """One ``query_batch`` for every vector: the engine's exact search checks the filter and
        reads each point once for all of them, where separate queries repeat both."""
        with self._lock:
            cur = self._get(collection)
            queries = [qe.Query.Nearest(dense_list(v, cur.dim), using=DENSE) for v in vectors]
            return self._query_many(cur, queries, flt, limit, self._exact if exact or self._force_exact
                                    or not cur.indexed else self._hnsw)

    def search_sparse(self, collection: str, sparse: SparseVector, flt: VectorFilter, limit: int) -> list[Hit]:
        with self._lock:
            cur = self._get(collection)
            if not sparse.indices:
                return []
            query = qe.Query.Nearest(qe.SparseVector(list(sparse.indices), list(sparse.values)), using=KEYWORDS)
            # Keyword search through the inverted index is exact already; exact=True would scan every point.
            return self._query(cur, query, flt, limit, self._hnsw)

    def retrieve(self, collection: str, ids: Sequence[str]) -> dict[str, StoredPoint]:
        wanted: list[qe.PointId] = [canonical_id(i) for i in ids]
        with self._lock:
            cur = self._get(collection)
            if not wanted:
                return {}
            with self._engine(collection):
                records = cur.shard.retrieve(wanted, True, True)
        return {str(r.id): stored_point(r.id, r.vector, r.payload) for r in records}

    def ids(self, collection: str) -> set[str]:
        out: set[str] = set()
        with self._lock:
            cur = self._get(collection)
            offset = None
            while True:
                with self._engine(collection):
                    records, offset = cur.shard.scroll(
                        qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=[PARENT], with_vector=False)
                    )
                out.update(item_id(r.id, r.payload) for r in records)
                if offset is None:
                    return out

    def count(self, collection: str, flt: VectorFilter | None = None) -> int:
        with self._lock:
            cur = self._get(collection)
            if flt is not None and flt.matches_nothing():
                return 0
            with self._engine(collection):
                items = first_points_of(flt)
                return cur.shard.count(qe.CountRequest(exact=True, filter=edge_filter(items)))

    # --- lifecycle ---------------------------------------------------------------

    def flush(self) -> None:
        """Make the writes acknowledged so far survive an OS crash or power loss: fsync the WAL
        files of every shard written since (Python's ``os.fsync`` releases the GIL: calls go
        on). Every ``full_flush_s`` also Qdrant Edge's own ``flush()`` (segments written out,
        WAL trimmed), which holds the GIL for its whole run (every thread stalls, for
        hundreds of ms on a loaded disk), so it is kept rare. An idle store costs nothing.
        Skipped while a write or an index build's copy runs (the next timer catches up)."""
        if not self._writes.acquire(blocking=False):
            return
        try:
            with self._lock:
                opened = [cur for cur in self._open.values() if cur.wal_dirty or cur.dirty]
                full = time.monotonic() - self._last_full >= self._full_flush_s
            for cur in opened:  # writes wait (we hold ``_writes``), searches go on
                if full and cur.dirty:
                    with self._lock, self._engine(cur.name):
                        cur.shard.flush()
                    cur.dirty = False
                elif cur.wal_dirty:
                    _fsync_folder(cur.path / "wal")
                cur.wal_dirty = False
            if full:
                self._last_full = time.monotonic()
        finally:
            self._writes.release()

    def close(self) -> None:
        self._stop_build()
        with self._writes, self._lock:
            if self._closed:
                return
            self._closed = True
            opened, self._open = self._open, {}
            failed: BaseException | None = None
            for name, cur in opened.items():  # every collection, even after one failed
                try:
                    with self._engine(name):
                        try:
                            cur.shard.flush()
                        finally:
                            cur.shard.close()
                except Exception as exc:  # no closing record: the next start checks it against SQLite
                    failed = failed or exc
                    continue
                # Only a clean close leaves a closing record (see the module docstring).
                meta = edge_integrity.record(cur.model_id, cur.dim, cur.rel, cur.built_points)
                try:
                    meta["closed"] = shard_files(cur.path)
                    edge_integrity.write_record(self.root / name / META_FILE, meta)
                except OSError as exc:  # the folder went away under us: the next start checks it
                    log.warning("vector collection %s: no closing record written (%s)", name, exc)
                log.debug("vector collection %s closed", name)
            if failed is not None:
                raise failed

    def check_room(self, collection: str, points: int) -> None:
        with self._lock:
            dim = self._get(collection).dim
        edge_disk.check_write(self.root, points, dim)

    def disk_report(self) -> tuple[bool, str]:
        """(room left for writes, one line: the index's allocated size, set-aside copies, free space)."""
        use = edge_disk.usage(self.root)
        line = use.describe()
        if use.free < 2 * edge_disk.WRITE_RESERVE:
            line += f"; too little room to write: {edge_disk.what_to_free(self.root)}"
        elif use.copies:
            line += f"; {edge_disk.what_to_free(self.root)} when you no longer need them"
        return use.free >= 2 * edge_disk.WRITE_RESERVE, line

    # --- helpers -----------------------------------------------------------------

    @contextmanager
    def _engine(self, name: str) -> Iterator[None]:
        """Turn a panic of the engine (a BaseException) into DamagedCollection, and its
        full-disk errors into DiskFull (which names the disk and what to free)."""
        try:
            yield
        except edge_disk.DiskFull:
            raise
        except BaseException as exc:
            if isinstance(exc, Exception) and _NO_SPACE.search(str(exc)):
                raise edge_disk.DiskFull(self.root, "the engine", edge_disk.WRITE_RESERVE) from exc
            if is_panic(exc):
                raise DamagedCollection(name, str(self.root / name), f"Qdrant Edge failed: {exc}") from exc
            raise

    @staticmethod
    def _probe_lock(name: str, sdir: Path) -> None:
        """Raise StoreLocked if another holder has the shard of a collection not open here.

        Qdrant Edge 0.9 holds an exclusive ``flock`` on the shard's ``wal`` folder while the
        shard is loaded, so taking and releasing that lock answers without loading (a damaged
        shard may take long to fail). Without ``fcntl`` or a ``wal`` folder, the shard is
        loaded and closed instead; one that fails to load for another reason is left to the caller.
        """
        wal = sdir / "wal"
        if fcntl is not None and wal.is_dir():
            fd = os.open(wal, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError as exc:
                raise StoreLocked(str(sdir)) from exc
            finally:
                os.close(fd)
            return
        try:
            qe.EdgeShard.load(str(sdir)).close()
        except BaseException as exc:
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            if "WouldBlock" in str(exc):
                raise StoreLocked(str(sdir)) from exc
            log.debug("vector collection %s does not load (%s)", name, exc)

    def _get(self, name: str) -> OpenShard:
        cur = self._open.get(name)
        if cur is None:
            raise UnknownCollection(name)
        return cur

    def _update(self, name: str, op: qe.UpdateOperation) -> None:
        """Apply ``op`` (caller holds ``_writes`` and ``_lock``); journalled while an index build runs.
        Raises DiskFull, before touching the shard, when the disk keeps less than ``WRITE_RESERVE`` free."""
        cur = self._get(name)
        edge_disk.check_write(self.root, 0, cur.dim)
        cur.dirty = cur.wal_dirty = True  # before: even a failed op may have reached the WAL
        try:
            with self._engine(name):
                cur.shard.update(op)
        finally:  # kept even when it failed: the replay then fails the same way and the build is dropped
            if cur.journal is not None:
                cur.journal.append(op)
                if len(cur.journal) > JOURNAL_MAX:
                    log.info("vector collection %s: more than %d writes during the index build; giving it up",
                             name, JOURNAL_MAX)
                    cur.journal = None

    def _query(self, cur: OpenShard, query: qe.Query, flt: VectorFilter, limit: int,
               params: qe.SearchParams, *, fetch: int | None = None) -> list[Hit]:
        """Top ``limit`` items for ``query``, fetching ``fetch`` points (default ``limit``) first."""
        if limit <= 0 or flt.matches_nothing():
            return []
        fetch = limit if fetch is None else fetch
        while True:  # several points may be one item's: fetch more until ``limit`` items (or all)
            with self._engine(cur.name):
                points = cur.shard.query(self._request(query, flt, fetch, params, cur.windows))
            hits, enough = self._items(points, limit, fetch, cur.windows)
            if enough:
                return hits
            fetch *= 4

    def _query_many(self, cur: OpenShard, queries: list[qe.Query], flt: VectorFilter, limit: int,
                    params: qe.SearchParams) -> list[list[Hit]]:
        """``_query`` of each of ``queries``, the first fetch of all of them in one ``query_batch``
        (a query whose ``limit`` points hold fewer items goes on alone, as ``_query`` would)."""
        if not queries or limit <= 0 or flt.matches_nothing():
            return [[] for _ in queries]
        batch = qe.QueryBatchRequest([self._request(q, flt, limit, params, cur.windows) for q in queries])
        with self._engine(cur.name):
            answers = cur.shard.query_batch(batch)
        out = []
        for query, points in zip(queries, answers, strict=True):
            hits, enough = self._items(points, limit, limit, cur.windows)
            out.append(hits if enough else self._query(cur, query, flt, limit, params, fetch=limit * 4))
        return out

    @staticmethod
    def _request(query: qe.Query, flt: VectorFilter, fetch: int, params: qe.SearchParams,
                 windows: bool) -> qe.QueryRequest:
        """The request of one search; the hits' ``parent`` is read only when the shard may hold
        window points (``OpenShard.windows``): reading payloads is a good part of a search's cost."""
        return qe.QueryRequest(limit=fetch, query=query, filter=edge_filter(flt), params=params,
                               with_payload=[PARENT] if windows else False, with_vector=False)

    @staticmethod
    def _has_windows(shard: qe.EdgeShard) -> bool:
        """Whether ``shard`` holds a point with a ``parent`` (a later window of an item)."""
        return shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must_not=[qe.IsEmptyCondition(PARENT)]))) > 0

    @staticmethod
    def _items(points: Sequence[qe.ScoredPoint], limit: int, fetch: int, windows: bool = True
               ) -> tuple[list[Hit], bool]:
        """The best ``limit`` items of ``points`` (the answer to a fetch of ``fetch`` points),
        and whether that is the answer: ``limit`` items, or every matching point fetched.
        ``windows``: the shard may hold window points (``OpenShard.windows``); without them
        every point is its own item, and the best ``limit`` points are the answer."""
        if not windows:
            return [Hit(str(p.id), float(p.score)) for p in points[:limit]], len(points) >= limit or len(points) < fetch
        hits = best_per_item([(item_id(p.id, p.payload), float(p.score)) for p in points], limit)
        return hits, len(hits) >= limit or len(points) < fetch

    @staticmethod
    def _edge_point(p: Point, dim: int) -> qe.Point:
        vectors: dict = {DENSE: dense_list(p.dense, dim)}
        if p.sparse.indices:
            vectors[KEYWORDS] = qe.SparseVector(list(p.sparse.indices), [float(v) for v in p.sparse.values])
        return qe.Point(canonical_id(p.id), vectors, dict(p.payload))

    @staticmethod
    def _open_shard(name: str, sdir: Path, dim: int, model_id: str, exists: bool) -> qe.EdgeShard:
        config = edge_build.edge_config(dim, cold_vectors=not exists and edge_disk.on_tmpfs(sdir.parent))
        try:
            # load() with a config also checks it against the stored segments.
            return qe.EdgeShard.load(str(sdir), config) if exists else qe.EdgeShard.create(str(sdir), config)
        except BaseException as exc:  # qdrant_edge raises bare Exception, or a panic (BaseException)
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            msg = str(exc) or type(exc).__name__
            if "WouldBlock" in msg:
                raise StoreLocked(str(sdir)) from exc
            if not exists:
                raise
            # The record says this model and dim, so a shard that does not load with them is damaged.
            raise DamagedCollection(name, str(sdir.parent), f"Qdrant Edge cannot load it ({msg})") from exc

    @staticmethod
    def _ensure_indexes(shard: qe.EdgeShard, after: int) -> bool:
        """Make the missing payload indexes of a shard that has some, or holds at least ``after``
        points (see ``PAYLOAD_INDEX_AFTER``); returns whether it has them now."""
        info = shard.info()
        have = set(info.payload_schema)
        if not have and info.points_count < after:
            return False
        for op in edge_build.payload_index_ops(have):
            shard.update(op)
        return True

    def _index_payload_when_due(self, name: str, cur: OpenShard) -> None:
        """After a write: make the payload indexes once the collection reached ``PAYLOAD_INDEX_AFTER``
        points (through ``_update``, so that an index build's journal keeps them)."""
        if cur.payload_indexed:
            return
        with self._engine(name):
            info = cur.shard.info()
        if info.points_count < self._index_after:
            return
        ops = edge_build.payload_index_ops(set(info.payload_schema))
        try:
            edge_disk.check_create(self.root, len(ops))
        except edge_disk.DiskFull as exc:  # the write itself went through: the indexes wait for room
            log.warning("vector collection %s: payload indexes not made yet: %s", name, exc)
            return
        for op in ops:
            self._update(name, op)
        cur.payload_indexed = True
        log.info("vector collection %s: %d points, payload indexes made", name, info.points_count)
