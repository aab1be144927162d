"""The vector engine interface: what memvault asks of Qdrant, whichever Qdrant it is.

Two implementations sit behind it: ``edge.EdgeVectorIndex`` (Qdrant Edge embedded in the
process, the default) and ``remote.RemoteVectorIndex`` (qdrant-client against a Qdrant
server). The engine is an index, never the truth: every point can be rebuilt from SQLite.

Each collection holds two named vectors per point:

- ``"dense"``: cosine, dimension fixed when the collection is made (the embedding model's);
- ``"keywords"``: sparse (term id -> weight), scored as a dot product with the IDF modifier.

Fusion of the two channels (RRF) is policy, not engine: each search returns one channel's
ranked hits and ``memvault.policy`` fuses them.

Payload fields the filters understand (all optional on a point):
``user_id``, ``project``, ``kind``, ``status``, ``collection``, ``path`` (strings),
``tags`` (list of strings), ``created_at``, ``expires_at`` (unix seconds, float; a null or
absent ``expires_at`` means the point never expires), ``private_to`` (string; null or
absent on a point every reader may see).

Items and points: an item (a memory, a document chunk) is one point, or several when
its text is longer than the model reads at once (one point per window of the text).
The first point of an item has the item's id as its own and no ``parent``; the later
ones carry the item's id in payload ``parent`` (``PARENT``). Every method but
``upsert`` and ``update_sparse`` speaks of items: a search returns at most one hit per
item (its best point, with that point's score), ``ids`` lists item ids, ``count``
counts first points, and ``delete`` / ``set_payload`` given an item id reach all its
points.
"""

from __future__ import annotations

import math
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

DENSE = "dense"
"""Name of the dense (cosine) vector in every collection."""
KEYWORDS = "keywords"
"""Name of the sparse (IDF-modified dot product) vector in every collection."""

PARENT = "parent"
"""Payload field naming the item a point belongs to, when an item has several points."""

KEYWORD_FIELDS: tuple[str, ...] = ("user_id", "project", "kind", "tags", "status", "collection", PARENT,
                                   "private_to")
"""Payload fields given a keyword index."""
FLOAT_FIELDS: tuple[str, ...] = ("created_at", "expires_at")
"""Payload fields given a float (range) index."""
PREFIX_FIELDS: tuple[str, ...] = ("path",)
"""Payload fields given a keyword index with prefix matching (``VectorFilter.path_prefix``)."""

_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel lists of term ids and weights.

    indices: distinct term ids (uint32, 0 .. 2**32-1); values: weights, same length.
    An empty vector is allowed (a text with no keywords); it matches nothing.
    Raises ValueError on mismatched lengths, repeated ids or ids out of the uint32 range.
    """

    indices: list[int]
    values: list[float]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError(
                f"SparseVector: {len(self.indices)} indices but {len(self.values)} values"
            )
        if len(set(self.indices)) != len(self.indices):
            raise ValueError("SparseVector: term ids must be distinct (sum the weights of repeats)")
        if self.indices and (min(self.indices) < 0 or max(self.indices) > 0xFFFFFFFF):
            raise ValueError("SparseVector: term ids must fit in uint32")


@dataclass
class Point:
    """One indexed item.

    id: UUID string (any case; engines return the canonical lowercase form).
    dense: the embedding, ``dim`` floats (list, tuple or 1-d numpy array).
    sparse: keyword weights (may be empty).
    payload: JSON-able dict; see the module docstring for the fields filters read
        (``parent``: the item's id, on every point of an item but its first).
    """

    id: str
    dense: Sequence[float]
    sparse: SparseVector
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One search result: item id (canonical lowercase UUID string: the point's ``parent``,
    else its own id) and the score of the item's best point (cosine similarity in [-1, 1]
    for dense; IDF-weighted dot product >= 0 for sparse)."""

    id: str
    score: float


@dataclass(frozen=True)
class StoredPoint:
    """One point as the engine holds it (``VectorIndex.retrieve``): id (canonical), dense
    vector (as stored: engines normalise cosine vectors to length 1), the term ids of its
    keyword vector, and its payload."""

    id: str
    dense: list[float]
    terms: frozenset[int]
    payload: dict[str, Any]


_FLOAT = {float}


def stored_point(point_id: Any, vectors: Any, payload: Any) -> StoredPoint:
    """A StoredPoint from what an engine returns for one point: ``vectors`` maps vector names to
    a list of floats (dense) or an object with ``indices`` (sparse); anything else reads as
    absent (an empty dense vector, no terms), which the caller's checks then reject."""
    named = vectors if isinstance(vectors, Mapping) else {}
    dense = named.get(DENSE)
    if isinstance(dense, list) and set(map(type, dense)) <= _FLOAT:  # what an engine returns: one pass in C
        values = list(dense)
    else:
        values = [float(x) for x in dense] if isinstance(dense, list) and all(
            isinstance(x, (int, float)) for x in dense) else []
    indices = getattr(named.get(KEYWORDS), "indices", None) or ()
    return StoredPoint(id=str(point_id), dense=values, terms=frozenset(int(i) for i in indices),
                       payload=dict(payload) if isinstance(payload, Mapping) else {})


def item_id(point_id: object, payload: Mapping[str, Any] | None) -> str:
    """The item a point belongs to: its payload's ``parent``, else the point's own id."""
    parent = (payload or {}).get(PARENT)
    return str(parent) if parent else str(point_id)


def best_per_item(scored: Sequence[tuple[str, float]], limit: int) -> list[Hit]:
    """Hits from (item id, score) pairs ordered best first: the first (best) of each item, at most ``limit``."""
    out: dict[str, Hit] = {}
    for item, score in scored:
        if item not in out:
            out[item] = Hit(item, score)
            if len(out) >= limit:
                break
    return list(out.values())


@dataclass
class VectorFilter:
    """Conditions every returned / counted / deleted point must meet (all ANDed).

    ``None`` means "no condition on this field". An empty list (``projects=[]``) matches
    nothing. Times are unix seconds.

    user_id: payload ``user_id`` equals.
    projects: payload ``project`` is any of these (``""`` is the global scope).
    kinds: payload ``kind`` is any of these.
    tags_any: payload ``tags`` (a list) contains any of these.
    status: payload ``status`` equals (default ``"active"``; ``None`` = any status).
    created_from / created_to: payload ``created_at`` within [from, to], both inclusive.
    alive_at: drop points whose ``expires_at`` <= alive_at; null / absent = never expires.
    equals: extra exact matches on string payload fields (e.g. ``{"collection": "docs"}``).
    path_prefix: payload ``path`` starts with this string: byte-wise, case-sensitive, on
        the whole stored value (Qdrant ``MatchPrefix``, served by a keyword index with the
        prefix option). Give ``"src/"`` rather than ``"src"`` to stay within a folder.
    absent: payload fields that must have no value (absent, null or []).
    absent_or_equals: payload fields that must have no value or equal the string given
        (e.g. ``{"private_to": reader}``: points for every reader, or for this one).
    """

    user_id: str | None = None
    projects: list[str] | None = None
    kinds: list[str] | None = None
    tags_any: list[str] | None = None
    status: str | None = "active"
    created_from: float | None = None
    created_to: float | None = None
    alive_at: float | None = None
    equals: dict[str, str] | None = None
    path_prefix: str | None = None
    absent: list[str] | None = None
    absent_or_equals: dict[str, str] | None = None
    first_points: bool = False
    """Only the first point of each item (the one without ``parent``): counts items, not points."""

    def matches_nothing(self) -> bool:
        """True when an any-of list is empty, so no point can match."""
        return any(v is not None and len(v) == 0 for v in (self.projects, self.kinds, self.tags_any))

    def conditions(self) -> list[Condition]:
        """This filter as engine-neutral conditions (ANDed), for the adapters to translate."""
        out: list[Condition] = []
        if self.user_id is not None:
            out.append(Condition("eq", "user_id", self.user_id))
        if self.projects is not None:
            out.append(Condition("any", "project", list(self.projects)))
        if self.kinds is not None:
            out.append(Condition("any", "kind", list(self.kinds)))
        if self.tags_any is not None:
            out.append(Condition("any", "tags", list(self.tags_any)))
        if self.status is not None:
            out.append(Condition("eq", "status", self.status))
        if self.created_from is not None or self.created_to is not None:
            out.append(Condition("range", "created_at", gte=self.created_from, lte=self.created_to))
        if self.alive_at is not None:
            out.append(Condition("alive", "expires_at", gt=self.alive_at))
        for key, value in (self.equals or {}).items():
            out.append(Condition("eq", key, value))
        if self.path_prefix is not None:
            out.append(Condition("prefix", "path", self.path_prefix))
        for key in self.absent or ():
            out.append(Condition("absent", key))
        for key, value in (self.absent_or_equals or {}).items():
            out.append(Condition("absent_or_eq", key, value))
        if self.first_points:
            out.append(Condition("absent", PARENT))
        return out


RANGE_SLACK_ULPS = 1
"""How many float steps (``math.nextafter``) each range bound is widened by before it reaches the engine."""


def engine_bounds(c: Condition) -> dict[str, float]:
    """The bounds to hand the engine for a ``range`` (``gte``/``lte``) or ``alive`` (``gt``)
    condition, as keyword arguments of a range (``gte``, ``lte``, ``gt``).

    Qdrant's payload index of an optimized (immutable) segment may hold a float one step
    (one ulp) off the value in the payload, so a bound placed exactly on a stored value
    can leave that point out: on an HNSW-indexed store, ``lte=X`` missed the points created
    at exactly X for about one value in ten, while un-indexed segments were exact. Every
    inclusive bound is therefore widened by ``RANGE_SLACK_ULPS`` steps (``lte`` up, ``gte``
    down), so that a point at the bound is always included; a point a step or two outside
    it may come back too, and callers that need the exact bound apply it to the rows they
    read from SQLite (recall does). The exclusive ``gt`` of ``alive`` moves the same steps
    up, so that a point expiring at exactly that time is never kept (one expiring a step
    later may be left out, which SQLite's own check of expiry would do a moment later).
    """
    out: dict[str, float] = {}
    if c.gte is not None:
        out["gte"] = _step(c.gte, -math.inf)
    if c.lte is not None:
        out["lte"] = _step(c.lte, math.inf)
    if c.gt is not None:
        out["gt"] = _step(c.gt, math.inf)
    return out


def _step(x: float, toward: float) -> float:
    for _ in range(RANGE_SLACK_ULPS):
        x = math.nextafter(float(x), toward)
    return x


def first_points_of(flt: VectorFilter | None) -> VectorFilter:
    """``flt`` (None: every point, any status) narrowed to the first point of each item, for
    ``VectorIndex.count``: an item of several points counts once."""
    return replace(flt or VectorFilter(status=None), first_points=True)


@dataclass(frozen=True)
class Condition:
    """One engine-neutral filter condition on payload field ``key``.

    op: ``eq`` (value equals), ``any`` (value is / list contains any of ``value``),
    ``range`` (``gte`` <= value <= ``lte``, either bound optional),
    ``alive`` (value is null/absent, or value > ``gt``), ``prefix`` (string starts with),
    ``absent`` (no value: absent, null or []), ``absent_or_eq`` (no value, or equals ``value``).
    """

    op: Literal["eq", "any", "range", "alive", "prefix", "absent", "absent_or_eq"]
    key: str
    value: Any = None
    gte: float | None = None
    lte: float | None = None
    gt: float | None = None


class CollectionMismatch(RuntimeError):
    """The collection was built with another embedding model or dimension."""

    def __init__(self, collection: str, stored: str, wanted: str) -> None:
        super().__init__(
            f"Vector collection {collection!r} was built with {stored}, but this server uses "
            f"{wanted}. Run `memvault reindex` to re-embed it with the current model, or set "
            f"MEMVAULT_EMBEDDING_MODEL back to the model it was built with."
        )
        self.collection = collection
        self.stored = stored
        self.wanted = wanted


class StoreLocked(RuntimeError):
    """Another process holds the embedded vector store (Qdrant Edge allows one process)."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"The vector store in {path} is open in another process (embedded Qdrant Edge "
            f"allows one process per store). Stop the other memvault process, or give this "
            f"one its own MEMVAULT_DATA_DIR, or run a Qdrant server and set MEMVAULT_QDRANT_URL "
            f"for both."
        )
        self.path = path


class DamagedCollection(RuntimeError):
    """A collection's files cannot be used: unreadable, refused by the engine, or changed
    after memvault closed them. The index is derived from SQLite, so the cure is to set the
    collection aside (``VectorIndex.set_aside``) and build it again.

    collection: its name; where: its folder; reason: what was found, for a person.
    """

    def __init__(self, collection: str, where: str, reason: str) -> None:
        super().__init__(f"vector collection {collection!r} in {where} is damaged: {reason}")
        self.collection = collection
        self.where = where
        self.reason = reason


class UnknownCollection(KeyError):
    """An operation named a collection that ``ensure_collection`` has not opened."""

    def __init__(self, collection: str) -> None:
        super().__init__(f"collection {collection!r} is not open; call ensure_collection first")
        self.collection = collection

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


def check_collection_name(name: str) -> str:
    """Return ``name`` if it is a safe collection / folder name (``[A-Za-z0-9][A-Za-z0-9_-]*``,
    at most 64 characters); raise ValueError otherwise."""
    if not _COLLECTION_NAME.match(name):
        raise ValueError(f"invalid collection name {name!r}: use letters, digits, '_' and '-'")
    return name


def canonical_id(point_id: str) -> str:
    """The canonical lowercase hyphenated form of a UUID string; ValueError if not a UUID."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError as exc:
        raise ValueError(f"point id {point_id!r} is not a UUID") from exc


def dense_list(vector: Sequence[float], dim: int) -> list[float]:
    """``vector`` as a list of ``dim`` Python floats; ValueError on another length."""
    values = vector.tolist() if hasattr(vector, "tolist") else list(vector)
    if len(values) != dim:
        raise ValueError(f"dense vector has {len(values)} dimensions, the collection {dim}")
    return [float(v) for v in values]


@dataclass(frozen=True)
class IndexState:
    """A collection's HNSW index: ``points`` in all, ``hnsw``: whether a segment has an HNSW
    graph, ``unindexed``: points searched exactly (all of them without HNSW; else those
    written since the last build, from the appendable segments), ``building``: a build runs."""

    points: int
    hnsw: bool
    unindexed: int
    building: bool


class VectorIndex(ABC):
    """A vector engine holding named collections of points (see the module docstring).

    Every method but ``ensure_collection``, ``flush`` and ``close`` raises
    UnknownCollection for a collection not yet opened with ``ensure_collection``.
    Writes are durable against a process crash when they return (Edge: WAL; server:
    ``wait=True``). Implementations are safe to call from several threads.
    """

    @abstractmethod
    def ensure_collection(self, name: str, dim: int, model_id: str) -> None:
        """Open collection ``name`` (creating it with payload indexes if absent).

        dim: dense dimension; model_id: the embedding model's id, recorded at creation.
        Raises CollectionMismatch if it was built with another model or dim,
        StoreLocked (Edge) if another process holds it, DamagedCollection (Edge) if its
        files cannot be used (see ``set_aside``), ValueError on a bad name. Idempotent.
        """

    @abstractmethod
    def drop_collection(self, name: str) -> None:
        """Delete collection ``name`` and all its points (for ``memvault reindex``).
        No error if it does not exist; StoreLocked (Edge) if another process holds it."""

    @abstractmethod
    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace ``points`` (whole point: vectors and payload).
        Raises ValueError on a non-UUID id or a dense vector of the wrong dimension."""

    @abstractmethod
    def update_sparse(self, collection: str, vectors: Mapping[str, SparseVector]) -> None:
        """Replace the keyword (sparse) vector of each point id in ``vectors``; its dense
        vector and payload are kept. Empty sparse vectors are skipped (a point's term set
        never changes with its weighting). Raises the engine's error when an id has no point."""

    @abstractmethod
    def set_payload(self, collection: str, ids: Sequence[str], payload: dict) -> None:
        """Merge ``payload`` into the payload of items ``ids`` (every point of each; given keys
        overwritten, others kept). Ids without a point are skipped (the index may lag SQLite)."""

    @abstractmethod
    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete items ``ids`` (the points with these ids and every point whose ``parent`` is
        one of them); ids without a point are ignored."""

    @abstractmethod
    def delete_by_filter(self, collection: str, flt: VectorFilter) -> None:
        """Delete every point matching ``flt``. Raises ValueError if ``flt`` has no
        condition at all (use ``drop_collection`` to empty a collection)."""

    @abstractmethod
    def search_dense(
        self, collection: str, vector: Sequence[float], flt: VectorFilter, limit: int, *, exact: bool = False
    ) -> list[Hit]:
        """Top ``limit`` items by cosine similarity of their best point to ``vector``, among
        the points matching ``flt``, best first. ``exact``: compare with every matching
        point instead of walking an HNSW graph (slower on a large collection; an approximate
        search may miss a point without anything being wrong)."""

    def search_dense_many(
        self, collection: str, vectors: Sequence[Sequence[float]], flt: VectorFilter, limit: int, *,
        exact: bool = False
    ) -> list[list[Hit]]:
        """``search_dense`` of each of ``vectors`` with the same filter and limit: one hit list
        per vector, in order, each exactly what ``search_dense`` returns for it. An engine that
        can runs them in one pass over the points (the filter checked once per point, not
        once per vector); this default runs them one after the other."""
        return [self.search_dense(collection, v, flt, limit, exact=exact) for v in vectors]

    @abstractmethod
    def search_sparse(
        self, collection: str, sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[Hit]:
        """Top ``limit`` items by IDF-modified dot product of their best point with ``sparse``,
        among the points matching ``flt``, best first. Points sharing no term with the
        query are not returned; an empty query returns []."""

    @abstractmethod
    def retrieve(self, collection: str, ids: Sequence[str]) -> dict[str, StoredPoint]:
        """The stored points ``ids`` (vectors and payload) by canonical id; ids without a
        point are left out."""

    def set_aside(self, name: str) -> str | None:
        """Move collection ``name`` out of the way so that ``ensure_collection`` makes it anew,
        keeping its files for inspection; returns where they went ("" when there was
        nothing to move).

        Engines whose collections are not files of this process return None and change
        nothing (a Qdrant server's collection may serve other processes). Raises
        StoreLocked when another process holds it.
        """
        return None

    def check_room(self, collection: str, points: int) -> None:
        """Raise OSError (ENOSPC, naming the disk and what to free) when a write of ``points``
        points to ``collection`` would not fit on the index's disk; engines whose files are
        not this process's never raise. Lets a caller refuse before writing anything elsewhere."""
        return None

    def disk_report(self) -> tuple[bool, str] | None:
        """What the index's files take on their disk, for ``doctor``: (enough room left to
        write, one line); None for engines whose files are not this process's (a server)."""
        return None

    def index_state(self, collection: str) -> IndexState | None:
        """The collection's HNSW index (Edge); None for engines that index by themselves (a Qdrant server)."""
        return None

    def build_index(self, collection: str, *, indexing_threshold_kb: int = 1) -> dict | None:
        """Build the collection's HNSW index without stalling calls (Edge: in a child process,
        then swapped in); blocks until done. None: nothing built (not needed by this engine,
        or given up). See ``EdgeVectorIndex.build_index``."""
        return None

    @abstractmethod
    def ids(self, collection: str) -> set[str]:
        """Every item id in the collection (canonical lowercase UUID strings): each point's
        ``parent``, else its own id."""

    @abstractmethod
    def count(self, collection: str, flt: VectorFilter | None = None) -> int:
        """Exact number of items matching ``flt`` (every item if None): an item of several
        points counts once, through its first point (the one without ``parent``)."""

    @abstractmethod
    def flush(self) -> None:
        """Make every acknowledged write survive an OS crash / power loss (fsync)."""

    @abstractmethod
    def close(self) -> None:
        """Flush and release everything (Edge: the store's lock). Idempotent."""

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
