"""Qdrant Edge (``qdrant-edge-py==0.9.0``, module ``qdrant_edge``) embedded in the process.

Layout under the root folder (``settings.vectors_dir``), one folder per collection::

    <root>/<collection>/collection.json   model id + dim (written before the shard)
    <root>/<collection>/shard/            the EdgeShard (segments, WAL, edge_config.json)

Choices, measured on 2 cores with 384-dim vectors at 10k and 100k points:

- WAL always on (Edge's default; never disabled): a write is in the WAL when ``update``
  returns, so it survives kill -9 without flush or close. ``flush()`` adds fsync for
  OS-crash / power-loss safety; the server calls it on a timer.
- ``optimize()`` is never called: it holds the GIL for seconds to minutes. Points stay in
  the plain appendable segment and are searched exactly (``SearchParams(exact=True)``),
  a few ms at 100k points.
- One process per store: a second ``EdgeShard.load`` on the same folder (another process
  or another object in this one) fails with ``WouldBlock``; that becomes StoreLocked.

Threads: an EdgeShard may be called from any thread (it is not thread-bound, and 2
readers + 2 writers + a flusher in parallel gave no error and no lost update), but every
call in 0.9.0 holds the GIL for its whole run (measured: a 20k-point upsert stalled all
other Python threads for 0.3 s; ``query_batch`` and ``flush`` likewise), so threads add no
parallelism. One lock per index serialises calls (free, given the GIL) so that ``close``
and ``drop_collection`` can never race an operation; upserts are cut into batches of
``upsert_batch`` points so that one big write never stalls the event loop for long.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import qdrant_edge as qe

from .base import (
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    KEYWORDS,
    PARENT,
    PREFIX_FIELDS,
    CollectionMismatch,
    Hit,
    Point,
    SparseVector,
    StoreLocked,
    UnknownCollection,
    VectorFilter,
    VectorIndex,
    best_per_item,
    canonical_id,
    check_collection_name,
    dense_list,
    item_id,
)

log = logging.getLogger(__name__)

META_FILE = "collection.json"
SHARD_DIR = "shard"
META_FORMAT = 1
SCROLL_PAGE = 2048


@dataclass
class _Open:
    shard: qe.EdgeShard
    dim: int
    model_id: str
    path: Path
    dirty: bool = False  # written since the last flush


def _describe(model_id: str, dim: int) -> str:
    return f"model {model_id!r} (dim {dim})"


def _edge_config(dim: int) -> qe.EdgeConfig:
    # wal_enabled left unset = enabled (and fixed at creation); never pass False.
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors={KEYWORDS: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )


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
            must.append(qe.FieldCondition(c.key, range=qe.RangeFloat(gte=c.gte, lte=c.lte)))
        elif c.op == "alive":
            # is_empty matches an absent key, null and [] alike.
            must.append(
                qe.Filter(
                    should=[
                        qe.IsEmptyCondition(c.key),
                        qe.FieldCondition(c.key, range=qe.RangeFloat(gt=c.gt)),
                    ]
                )
            )
        elif c.op == "prefix":
            must.append(qe.FieldCondition(c.key, match=qe.MatchPrefix(c.value)))
        else:  # pragma: no cover - Condition.op is a closed set
            raise ValueError(f"unknown condition {c.op!r}")
    return qe.Filter(must=must) if must else None


def _items_filter(ids: Sequence[str]) -> qe.Filter:
    """The points of items ``ids``: those ids themselves and the points whose ``parent`` is one."""
    id_set: set[qe.PointId] = {canonical_id(i) for i in ids}  # qe.PointId: a stub-only alias
    return qe.Filter(should=[qe.HasIdCondition(id_set),
                             qe.FieldCondition(PARENT, match=qe.MatchAny(sorted(str(i) for i in id_set)))])


class EdgeVectorIndex(VectorIndex):
    """VectorIndex over Qdrant Edge shards under ``root`` (see the module docstring).

    root: folder holding one sub-folder per collection (created 0700 if absent).
    exact: exact (brute-force) search; the only sane choice while optimize() is never run.
    upsert_batch: points per WAL record / GIL hold in ``upsert``.
    Raises StoreLocked from ``ensure_collection`` if another process holds the store.
    """

    def __init__(self, root: str | os.PathLike[str], *, exact: bool = True, upsert_batch: int = 256):
        self.root = Path(root)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._params = qe.SearchParams(exact=exact)
        self._upsert_batch = max(1, upsert_batch)
        self._open: dict[str, _Open] = {}
        self._lock = threading.RLock()
        self._closed = False

    # --- collections -------------------------------------------------------------

    def ensure_collection(self, name: str, dim: int, model_id: str) -> None:
        check_collection_name(name)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        with self._lock:
            if self._closed:
                raise RuntimeError("vector index is closed")
            cur = self._open.get(name)
            if cur is not None:
                if (cur.model_id, cur.dim) != (model_id, dim):
                    raise CollectionMismatch(name, _describe(cur.model_id, cur.dim), _describe(model_id, dim))
                return
            cdir = self.root / name
            sdir = cdir / SHARD_DIR
            meta_path = cdir / META_FILE
            cdir.mkdir(mode=0o700, parents=True, exist_ok=True)
            stored = self._read_meta(meta_path)
            has_shard = sdir.is_dir() and any(sdir.iterdir())
            if stored is not None:
                if (stored["model_id"], stored["dim"]) != (model_id, dim):
                    raise CollectionMismatch(
                        name, _describe(stored["model_id"], stored["dim"]), _describe(model_id, dim)
                    )
            elif has_shard:
                # The record is written before the shard, so this is a store we did not make.
                raise CollectionMismatch(name, f"an unrecorded model (no {meta_path})", _describe(model_id, dim))
            else:
                self._write_meta(meta_path, {"format": META_FORMAT, "model_id": model_id, "dim": dim})
            shard = self._open_shard(name, sdir, dim, model_id, has_shard)
            try:
                self._ensure_indexes(shard)
            except BaseException:
                shard.close()
                raise
            self._open[name] = _Open(shard, dim, model_id, sdir, dirty=True)
            log.info("vector collection %s open at %s (%s)", name, sdir, _describe(model_id, dim))

    def drop_collection(self, name: str) -> None:
        check_collection_name(name)
        with self._lock:
            cur = self._open.pop(name, None)
            cdir = self.root / name
            sdir = cdir / SHARD_DIR
            if cur is not None:
                cur.shard.close()
            elif sdir.is_dir() and any(sdir.iterdir()):
                # Not ours yet: take the shard's lock first, so that a store another
                # process is serving is refused (StoreLocked), never deleted under it.
                try:
                    qe.EdgeShard.load(str(sdir)).close()
                except Exception as exc:
                    if "WouldBlock" in str(exc):
                        raise StoreLocked(str(sdir)) from exc
                    log.warning("dropping unreadable vector collection %s: %s", name, exc)
            if cdir.exists():
                # Drop the record first: a crash half-way then leaves a shard with no record,
                # which ensure_collection refuses instead of trusting.
                (cdir / META_FILE).unlink(missing_ok=True)
                shutil.rmtree(cdir)

    # --- writes ------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        with self._lock:
            cur = self._get(collection)
            edge_points = [self._edge_point(p, cur.dim) for p in points]
            for i in range(0, len(edge_points), self._upsert_batch):
                cur.dirty = True
                cur.shard.update(qe.UpdateOperation.upsert_points(edge_points[i : i + self._upsert_batch]))

    def update_sparse(self, collection: str, vectors: Mapping[str, SparseVector]) -> None:
        pvs = [
            qe.PointVectors(canonical_id(i), {KEYWORDS: qe.SparseVector(list(v.indices), [float(x) for x in v.values])})
            for i, v in vectors.items()
            if v.indices
        ]
        with self._lock:
            for i in range(0, len(pvs), self._upsert_batch):
                self._update(collection, qe.UpdateOperation.update_vectors(pvs[i : i + self._upsert_batch]))

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict) -> None:
        if not ids:
            return
        # By filter, so that ids without a point are skipped instead of failing the batch.
        op = qe.UpdateOperation.set_payload_by_filter(_items_filter(ids), payload)
        with self._lock:
            self._update(collection, op)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        op = qe.UpdateOperation.delete_points_by_filter(_items_filter(ids))
        with self._lock:
            self._update(collection, op)

    def delete_by_filter(self, collection: str, flt: VectorFilter) -> None:
        f = edge_filter(flt)
        if f is None:
            raise ValueError("delete_by_filter needs at least one condition; use drop_collection to empty")
        with self._lock:
            self._get(collection)  # UnknownCollection even when nothing can match
            if flt.matches_nothing():
                return
            self._update(collection, qe.UpdateOperation.delete_points_by_filter(f))

    # --- reads -------------------------------------------------------------------

    def search_dense(self, collection: str, vector: Sequence[float], flt: VectorFilter, limit: int) -> list[Hit]:
        with self._lock:
            cur = self._get(collection)
            query = qe.Query.Nearest(dense_list(vector, cur.dim), using=DENSE)
            return self._query(cur, query, flt, limit)

    def search_sparse(self, collection: str, sparse: SparseVector, flt: VectorFilter, limit: int) -> list[Hit]:
        with self._lock:
            cur = self._get(collection)
            if not sparse.indices:
                return []
            query = qe.Query.Nearest(qe.SparseVector(list(sparse.indices), list(sparse.values)), using=KEYWORDS)
            return self._query(cur, query, flt, limit)

    def ids(self, collection: str) -> set[str]:
        out: set[str] = set()
        with self._lock:
            cur = self._get(collection)
            offset = None
            while True:
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
            return cur.shard.count(qe.CountRequest(exact=True, filter=edge_filter(flt)))

    # --- lifecycle ---------------------------------------------------------------

    def flush(self) -> None:
        """fsync the shards written since the last flush (GIL held: ~15 ms after a small write
        at 10k points, ~90 ms after a bulk load); an idle store costs nothing, so a short
        timer is cheap."""
        with self._lock:
            for cur in self._open.values():
                if cur.dirty:
                    cur.shard.flush()
                    cur.dirty = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            opened, self._open = self._open, {}
            for name, cur in opened.items():
                try:
                    cur.shard.flush()
                finally:
                    cur.shard.close()
                log.debug("vector collection %s closed", name)

    # --- helpers -----------------------------------------------------------------

    def _get(self, name: str) -> _Open:
        cur = self._open.get(name)
        if cur is None:
            raise UnknownCollection(name)
        return cur

    def _update(self, name: str, op: qe.UpdateOperation) -> None:
        cur = self._get(name)
        cur.dirty = True  # before: even a failed op may have reached the WAL
        cur.shard.update(op)

    def _query(self, cur: _Open, query: qe.Query, flt: VectorFilter, limit: int) -> list[Hit]:
        if limit <= 0 or flt.matches_nothing():
            return []
        fetch = limit
        while True:  # several points may be one item's: fetch more until ``limit`` items (or all)
            request = qe.QueryRequest(
                limit=fetch,
                query=query,
                filter=edge_filter(flt),
                params=self._params,
                with_payload=[PARENT],
                with_vector=False,
            )
            points = cur.shard.query(request)
            hits = best_per_item([(item_id(p.id, p.payload), float(p.score)) for p in points], limit)
            if len(hits) >= limit or len(points) < fetch:
                return hits
            fetch *= 4

    @staticmethod
    def _edge_point(p: Point, dim: int) -> qe.Point:
        vectors: dict = {DENSE: dense_list(p.dense, dim)}
        if p.sparse.indices:
            vectors[KEYWORDS] = qe.SparseVector(list(p.sparse.indices), [float(v) for v in p.sparse.values])
        return qe.Point(canonical_id(p.id), vectors, dict(p.payload))

    @staticmethod
    def _open_shard(name: str, sdir: Path, dim: int, model_id: str, exists: bool) -> qe.EdgeShard:
        config = _edge_config(dim)
        try:
            # load() with a config also checks it against the stored segments.
            return qe.EdgeShard.load(str(sdir), config) if exists else qe.EdgeShard.create(str(sdir), config)
        except Exception as exc:  # qdrant_edge raises bare Exception
            msg = str(exc)
            if "WouldBlock" in msg:
                raise StoreLocked(str(sdir)) from exc
            if "incompatible" in msg.lower():
                raise CollectionMismatch(name, f"another configuration ({msg})", _describe(model_id, dim)) from exc
            raise

    @staticmethod
    def _ensure_indexes(shard: qe.EdgeShard) -> None:
        have = set(shard.info().payload_schema)
        # qe.PayloadSchemaParams is a stub-only alias (qdrant_edge's .pyi); a local annotation is never evaluated.
        wanted: list[tuple[str, qe.PayloadSchemaType | qe.PayloadSchemaParams]] = [
            (f, qe.PayloadSchemaType.Keyword) for f in KEYWORD_FIELDS
        ]
        wanted += [(f, qe.PayloadSchemaType.Float) for f in FLOAT_FIELDS]
        wanted += [(f, qe.KeywordIndexParams(prefix=True)) for f in PREFIX_FIELDS]
        for field_name, schema in wanted:
            if field_name not in have:
                shard.update(qe.UpdateOperation.create_field_index(field_name, schema))

    @staticmethod
    def _read_meta(path: Path) -> dict | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if not isinstance(data, dict) or "model_id" not in data or "dim" not in data:
            raise RuntimeError(f"{path} is not a memvault collection record; move it away and reindex")
        return data

    @staticmethod
    def _write_meta(path: Path, data: dict) -> None:
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
            fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
