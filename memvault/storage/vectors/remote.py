"""The vector engine on a Qdrant server or cluster, through ``qdrant-client``.

Used when ``MEMVAULT_QDRANT_URL`` is set. Same collections as the embedded engine: named
vectors ``"dense"`` (cosine) and ``"keywords"`` (sparse, IDF modifier), the same payload
indexes, the same filters.

The embedding model id and dimension live in the collection's own metadata
(``metadata={"memvault": {"model_id": ..., "dim": ...}}``; collection metadata is a
recent server feature, believed 1.16+, not checked against a server here). A server that
drops the metadata is refused at creation with a clear error rather than trusted. ``path_prefix`` uses ``MatchPrefix``, which needs
a server recent enough to know it (the server rejects the filter otherwise).

Writes use ``wait=True``: when a call returns, the server has applied it and holds it in
its WAL; ``flush()`` has nothing to add (durability is the server's configuration).
The search uses the server's HNSW index as configured there (no ``exact``).

Threads: a client talking to a server is shared across threads as is (httpx clients are
thread-safe); a local-mode client (``QdrantClient(location=":memory:")`` or ``path=``,
pure Python, used by the tests) is serialised with a lock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from qdrant_client import QdrantClient, models

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
    StoredPoint,
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

log = logging.getLogger(__name__)

META_KEY = "memvault"
SCROLL_PAGE = 2048


def _describe(model_id: str, dim: int) -> str:
    return f"model {model_id!r} (dim {dim})"


def client_filter(flt: VectorFilter | None) -> models.Filter | None:
    """Translate a VectorFilter into a ``qdrant_client.models.Filter`` (None = no condition)."""
    if flt is None:
        return None
    must: list[Any] = []
    for c in flt.conditions():
        if c.op == "eq":
            must.append(models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value)))
        elif c.op == "any":
            must.append(models.FieldCondition(key=c.key, match=models.MatchAny(any=c.value)))
        elif c.op == "range":
            must.append(models.FieldCondition(key=c.key, range=models.Range(**engine_bounds(c))))
        elif c.op == "alive":
            must.append(
                models.Filter(
                    should=[
                        models.IsEmptyCondition(is_empty=models.PayloadField(key=c.key)),
                        models.FieldCondition(key=c.key, range=models.Range(**engine_bounds(c))),
                    ]
                )
            )
        elif c.op == "prefix":
            must.append(models.FieldCondition(key=c.key, match=models.MatchPrefix(prefix=c.value)))
        elif c.op == "absent":
            must.append(models.IsEmptyCondition(is_empty=models.PayloadField(key=c.key)))
        elif c.op == "absent_or_eq":
            must.append(models.Filter(should=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key=c.key)),
                models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value)),
            ]))
        else:  # pragma: no cover - Condition.op is a closed set
            raise ValueError(f"unknown condition {c.op!r}")
    return models.Filter(must=must) if must else None


def _items_filter(ids: Sequence[str]) -> models.Filter:
    """The points of items ``ids``: those ids themselves and the points whose ``parent`` is one."""
    canon = [canonical_id(i) for i in ids]
    return models.Filter(should=[models.HasIdCondition(has_id=list(canon)),
                                 models.FieldCondition(key=PARENT, match=models.MatchAny(any=canon))])


def _is_local(client: QdrantClient) -> bool:
    inner = getattr(client, "_client", None)
    return type(inner).__name__ in {"QdrantLocal", "AsyncQdrantLocal"}


class RemoteVectorIndex(VectorIndex):
    """VectorIndex over a Qdrant server (see the module docstring).

    client: a ready QdrantClient (tests pass ``QdrantClient(location=":memory:")``);
    otherwise one is made from url (e.g. ``http://localhost:6333``) and api_key.
    timeout: seconds per request for a client made here.
    """

    def __init__(
        self,
        client: QdrantClient | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        timeout: int = 30,
    ):
        if client is None:
            if not url:
                raise ValueError("RemoteVectorIndex needs a client or a url")
            client = QdrantClient(url=url, api_key=api_key, timeout=timeout)
        self.client = client
        self._lock: contextlib.AbstractContextManager = (
            threading.RLock() if _is_local(client) else contextlib.nullcontext()
        )
        self._dims: dict[str, int] = {}
        self._closed = False

    # --- collections -------------------------------------------------------------

    def ensure_collection(self, name: str, dim: int, model_id: str) -> None:
        check_collection_name(name)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        wanted = _describe(model_id, dim)
        with self._lock:
            if not self.client.collection_exists(name):
                try:
                    self._create(name, dim, model_id)
                except Exception:
                    if not self.client.collection_exists(name):
                        raise
                    # Another process created it first: check what it made, below.
            info = self.client.get_collection(name)
            meta = (info.config.metadata or {}).get(META_KEY)
            if not isinstance(meta, dict) or "model_id" not in meta or "dim" not in meta:
                raise CollectionMismatch(name, "an unrecorded model (no memvault metadata)", wanted)
            if (meta["model_id"], int(meta["dim"])) != (model_id, dim):
                raise CollectionMismatch(name, _describe(meta["model_id"], int(meta["dim"])), wanted)
            vectors = info.config.params.vectors
            size = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
            if size != dim:
                raise CollectionMismatch(name, f"dense vector size {size}", wanted)
            self._ensure_indexes(name, set(info.payload_schema or {}))
            self._dims[name] = dim

    def drop_collection(self, name: str) -> None:
        check_collection_name(name)
        with self._lock:
            self._dims.pop(name, None)
            if self.client.collection_exists(name):
                self.client.delete_collection(name)

    # --- writes ------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        dim = self._dim(collection)
        structs = [self._struct(p, dim) for p in points]
        if not structs:
            return
        with self._lock:
            self.client.upsert(collection, points=structs, wait=True)

    def update_sparse(self, collection: str, vectors: Mapping[str, SparseVector]) -> None:
        self._dim(collection)
        pvs = [models.PointVectors(id=canonical_id(i), vector={
                   KEYWORDS: models.SparseVector(indices=list(v.indices), values=[float(x) for x in v.values])})
               for i, v in vectors.items() if v.indices]
        if not pvs:
            return
        with self._lock:
            self.client.update_vectors(collection, points=pvs, wait=True)

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict) -> None:
        self._dim(collection)
        if not ids:
            return
        selector = models.FilterSelector(filter=_items_filter(ids))
        with self._lock:
            self.client.set_payload(collection, payload=payload, points=selector, wait=True)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        self._dim(collection)
        if not ids:
            return
        selector = models.FilterSelector(filter=_items_filter(ids))
        with self._lock:
            self.client.delete(collection, points_selector=selector, wait=True)

    def delete_by_filter(self, collection: str, flt: VectorFilter) -> None:
        self._dim(collection)
        f = client_filter(flt)
        if f is None:
            raise ValueError("delete_by_filter needs at least one condition; use drop_collection to empty")
        if flt.matches_nothing():
            return
        with self._lock:
            self.client.delete(collection, points_selector=models.FilterSelector(filter=f), wait=True)

    # --- reads -------------------------------------------------------------------

    def search_dense(self, collection: str, vector: Sequence[float], flt: VectorFilter, limit: int, *,
                     exact: bool = False) -> list[Hit]:
        query = dense_list(vector, self._dim(collection))
        return self._query(collection, query, DENSE, flt, limit, exact=exact)

    def search_sparse(self, collection: str, sparse: SparseVector, flt: VectorFilter, limit: int) -> list[Hit]:
        self._dim(collection)
        if not sparse.indices:
            return []
        query = models.SparseVector(indices=list(sparse.indices), values=[float(v) for v in sparse.values])
        return self._query(collection, query, KEYWORDS, flt, limit)

    def retrieve(self, collection: str, ids: Sequence[str]) -> dict[str, StoredPoint]:
        self._dim(collection)
        if not ids:
            return {}
        with self._lock:
            records = self.client.retrieve(collection, [canonical_id(i) for i in ids], with_payload=True,
                                           with_vectors=True)
        return {str(r.id): stored_point(r.id, r.vector, r.payload) for r in records}

    def ids(self, collection: str) -> set[str]:
        self._dim(collection)
        out: set[str] = set()
        offset = None
        with self._lock:
            while True:
                records, offset = self.client.scroll(
                    collection, limit=SCROLL_PAGE, offset=offset, with_payload=[PARENT], with_vectors=False
                )
                out.update(item_id(r.id, r.payload) for r in records)
                if offset is None:
                    return out

    def count(self, collection: str, flt: VectorFilter | None = None) -> int:
        self._dim(collection)
        if flt is not None and flt.matches_nothing():
            return 0
        with self._lock:
            items = first_points_of(flt)
            return self.client.count(collection, count_filter=client_filter(items), exact=True).count

    # --- lifecycle ---------------------------------------------------------------

    def flush(self) -> None:
        """Nothing to do: writes return once the server has them (``wait=True``)."""

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._dims.clear()
            self.client.close()

    # --- helpers -----------------------------------------------------------------

    def _dim(self, collection: str) -> int:
        dim = self._dims.get(collection)
        if dim is None:
            raise UnknownCollection(collection)
        return dim

    def _query(self, collection: str, query: Any, using: str, flt: VectorFilter, limit: int, *,
               exact: bool = False) -> list[Hit]:
        if limit <= 0 or flt.matches_nothing():
            return []
        fetch = limit
        while True:  # several points may be one item's: fetch more until ``limit`` items (or all)
            with self._lock:
                res = self.client.query_points(
                    collection,
                    query=query,
                    using=using,
                    query_filter=client_filter(flt),
                    limit=fetch,
                    search_params=models.SearchParams(exact=True) if exact else None,
                    with_payload=[PARENT],
                    with_vectors=False,
                )
            hits = best_per_item([(item_id(p.id, p.payload), float(p.score)) for p in res.points], limit)
            if len(hits) >= limit or len(res.points) < fetch:
                return hits
            fetch *= 4

    @staticmethod
    def _struct(p: Point, dim: int) -> models.PointStruct:
        vector: dict[str, Any] = {DENSE: dense_list(p.dense, dim)}
        if p.sparse.indices:
            vector[KEYWORDS] = models.SparseVector(
                indices=list(p.sparse.indices), values=[float(v) for v in p.sparse.values]
            )
        return models.PointStruct(id=canonical_id(p.id), vector=vector, payload=dict(p.payload))

    def _create(self, name: str, dim: int, model_id: str) -> None:
        self.client.create_collection(
            name,
            vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={KEYWORDS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata={META_KEY: {"model_id": model_id, "dim": dim}},
        )
        meta = (self.client.get_collection(name).config.metadata or {}).get(META_KEY)
        if not isinstance(meta, dict) or meta.get("model_id") != model_id:
            self.client.delete_collection(name)
            raise RuntimeError(
                "The Qdrant server did not keep the collection metadata memvault records its "
                "embedding model in; use a newer Qdrant server (collection metadata support)."
            )
        log.info("created Qdrant collection %s (%s)", name, _describe(model_id, dim))

    def _ensure_indexes(self, name: str, have: set[str]) -> None:
        wanted: list[tuple[str, Any]] = [(f, models.PayloadSchemaType.KEYWORD) for f in KEYWORD_FIELDS]
        wanted += [(f, models.PayloadSchemaType.FLOAT) for f in FLOAT_FIELDS]
        wanted += [
            (f, models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, prefix=True)) for f in PREFIX_FIELDS
        ]
        for field_name, schema in wanted:
            if field_name not in have:
                self.client.create_payload_index(name, field_name, field_schema=schema, wait=True)
