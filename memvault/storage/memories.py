"""A memory as stored: the rows of ``memories`` and ``memory_history``, and reading them back.

``MemoryRow`` is one row of ``memories`` (``MEMORY_COLUMNS`` in order), ``HistoryEntry`` one
row of ``memory_history``; ``MEMORY_STATUSES``, ``HISTORY_ACTIONS`` and ``INDEX_STATES`` are
the values their columns take. ``row_from_sql`` / ``memory_rows`` / ``history_entry`` decode
query results, checking every value against its column (``storage.rows``): a row holding a
value memvault never writes is left out of a read, with one log line. The stores
(``storage.facts`` and the readers beside it) build their SQL on these.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from memvault.storage import rows as col
from memvault.vocabulary import KINDS, VISIBILITIES

MEMORY_COLUMNS = (
    "id, user_id, project, kind, key, content, tags, importance, confidence, source, created_at, "
    "updated_at, last_accessed_at, access_count, expires_at, status, superseded_by, content_hash, "
    "embedding_model, index_state, visibility, agent"
)


def readable_by(visibility: str, agent: str | None, reader: str | None) -> bool:
    """Whether agent ``reader`` reads a memory of this ``visibility`` written by ``agent``
    (None: the user, who reads every memory): a shared memory, or one's own private one."""
    return reader is None or visibility != "private" or agent == reader


@dataclass
class MemoryRow:
    """One memory record as stored: one row of ``memories``. Times in unix seconds."""

    id: str
    user_id: str
    project: str
    kind: str
    content: str
    importance: float
    created_at: float
    updated_at: float
    last_accessed_at: float
    content_hash: str
    embedding_model: str
    key: str | None = None
    tags: list[str] = field(default_factory=list)
    confidence: float = 1.0
    source: str | None = None
    access_count: int = 0
    expires_at: float | None = None
    status: str = "active"
    superseded_by: str | None = None
    index_state: str = "pending"
    visibility: str = "shared"
    agent: str | None = None

    @property
    def private_to(self) -> str | None:
        """The agent that alone reads this memory (its writer, when private); None when shared.

        Also the memory's slot owner: keys and duplicates are judged among the memories of
        one owner (the shared ones, or one agent's private ones)."""
        return self.agent if self.visibility == "private" else None

    def readable_by(self, reader: str | None) -> bool:
        """Whether agent ``reader`` reads this memory (None: the user, who reads every memory)."""
        return readable_by(self.visibility, self.agent, reader)

    def snapshot(self, consolidated_from: Sequence[str] = ()) -> str:
        """JSON of the row for the history table; ``consolidated_from`` (ids of the memories
        this one stands for, when it merges them) is added as a field of that name."""
        data = asdict(self)
        if consolidated_from:
            data[CONSOLIDATED_FROM] = list(consolidated_from)
        return json.dumps(data, ensure_ascii=False)


@dataclass
class HistoryEntry:
    """One change of one memory: action, who, when, old -> new (JSON snapshots or None)."""

    seq: int
    memory_id: str
    action: str
    actor: str | None
    at: float
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    reason: str | None


MEMORY_STATUSES = ("active", "superseded", "deleted")

HISTORY_ACTIONS = ("add", "reinforce", "supersede", "delete", "evict", "expire", "purge", "restore")
"""Values of ``memory_history.action``. ``restore`` (``FactStore.restore``) brings a deleted or
superseded memory back. A merge of memories (``consolidate``, or ``remember`` superseding two or
more ids) records ``consolidated_from`` on the merged memory (the ``new`` snapshot of its ``add``
or ``reinforce`` entry holds a ``consolidated_from`` list naming the sources) and a ``supersede``
on each source: ``FactStore.restore`` of the sources with the merged memory retired undoes it in
one transaction."""

CONSOLIDATED_FROM = "consolidated_from"
"""Field of a history ``new`` snapshot: the ids of the memories the memory merged (see HISTORY_ACTIONS)."""
INDEX_STATES = ("pending", "indexed")


_KIND_SET, _STATUS_SET = frozenset(KINDS), frozenset(MEMORY_STATUSES)
_INDEX_STATE_SET, _VISIBILITY_SET = frozenset(INDEX_STATES), frozenset(VISIBILITIES)
_finite = math.isfinite


def _num(v: Any) -> bool:
    """``v`` is what ``rows.number`` accepts as it is: a finite float, or an int (not a bool)."""
    t = type(v)
    return (t is float and _finite(v)) or t is int


def _opt_text(v: Any) -> bool:
    return v is None or type(v) is str


def row_from_sql(r: sqlite3.Row | tuple) -> MemoryRow:
    """A ``SELECT MEMORY_COLUMNS`` result tuple -> MemoryRow (tags decoded from JSON, every
    value checked against its column's type). Raises BadValue on a value memvault never writes.

    A row whose every value is of the exact type memvault writes (the rule, checked in one
    expression) is built directly; any other goes through the column-by-column checks of
    ``storage.rows``, which accept or refuse it and say why. Both give the same row: recall
    decodes up to ~200 candidate rows a call, where the checks cost more than the query."""
    (id_, user_id, project, kind, key, content, tags, importance, confidence, source, created_at,
     updated_at, last_accessed_at, access_count, expires_at, status, superseded_by, content_hash,
     embedding_model, index_state, visibility, agent) = tuple(r)
    if (type(id_) is str and type(user_id) is str and type(project) is str and type(kind) is str
            and kind in _KIND_SET and _opt_text(key) and type(content) is str and tags == "[]"
            and _num(importance) and _num(confidence) and _opt_text(source) and _num(created_at)
            and _num(updated_at) and _num(last_accessed_at) and type(access_count) is int
            and (expires_at is None or _num(expires_at)) and type(status) is str and status in _STATUS_SET
            and _opt_text(superseded_by) and type(content_hash) is str and type(embedding_model) is str
            and type(index_state) is str and index_state in _INDEX_STATE_SET and type(visibility) is str
            and visibility in _VISIBILITY_SET and _opt_text(agent)):
        return MemoryRow(
            id=id_, user_id=user_id, project=project, kind=kind, key=key, content=content, tags=[],
            importance=float(importance), confidence=float(confidence), source=source,
            created_at=float(created_at), updated_at=float(updated_at), last_accessed_at=float(last_accessed_at),
            access_count=access_count, expires_at=None if expires_at is None else float(expires_at),
            status=status, superseded_by=superseded_by, content_hash=content_hash, embedding_model=embedding_model,
            index_state=index_state, visibility=visibility, agent=agent,
        )
    return checked_row(r)


def checked_row(r: sqlite3.Row | tuple) -> MemoryRow:
    """``row_from_sql`` with every column checked by ``storage.rows`` (BadValue names the first
    that is wrong)."""
    (id_, user_id, project, kind, key, content, tags, importance, confidence, source, created_at,
     updated_at, last_accessed_at, access_count, expires_at, status, superseded_by, content_hash,
     embedding_model, index_state, visibility, agent) = tuple(r)
    return MemoryRow(
        id=col.text(id_, "id"), user_id=col.text(user_id, "user_id"), project=col.text(project, "project"),
        kind=col.choice(kind, "kind", KINDS), key=col.opt_text(key, "key"), content=col.text(content, "content"),
        tags=col.json_strings(tags, "tags"), importance=col.number(importance, "importance"),
        confidence=col.number(confidence, "confidence"), source=col.opt_text(source, "source"),
        created_at=col.number(created_at, "created_at"), updated_at=col.number(updated_at, "updated_at"),
        last_accessed_at=col.number(last_accessed_at, "last_accessed_at"),
        access_count=col.integer(access_count, "access_count"), expires_at=col.opt_number(expires_at, "expires_at"),
        status=col.choice(status, "status", MEMORY_STATUSES),
        superseded_by=col.opt_text(superseded_by, "superseded_by"),
        content_hash=col.text(content_hash, "content_hash"),
        embedding_model=col.text(embedding_model, "embedding_model"),
        index_state=col.choice(index_state, "index_state", INDEX_STATES),
        visibility=col.choice(visibility, "visibility", VISIBILITIES), agent=col.opt_text(agent, "agent"),
    )


HEAD_COLUMNS = "id, content, status, expires_at, visibility, agent, created_at, importance, last_accessed_at"
"""The columns of ``memories`` ``MemoryHead`` holds, in its order."""


@dataclass(slots=True)
class MemoryHead:
    """What ranking reads of a memory: the columns ``HEAD_COLUMNS`` of one row of ``memories``
    (times in unix seconds). Recall ranks every candidate (~170 at 10,000 memories) on these
    and reads the whole row (``MemoryRow``) only of those it returns: turning all 22 columns
    of every candidate into Python values and checking them cost more than the query. Not
    frozen, as ``MemoryRow``: a frozen dataclass is built ~5x slower (one ``object.__setattr__``
    per field)."""

    id: str
    content: str
    status: str
    expires_at: float | None
    visibility: str
    agent: str | None
    created_at: float
    importance: float
    last_accessed_at: float

    def readable_by(self, reader: str | None) -> bool:
        """As ``MemoryRow.readable_by``."""
        return readable_by(self.visibility, self.agent, reader)


def head_from_sql(r: sqlite3.Row | tuple) -> MemoryHead:
    """A ``SELECT HEAD_COLUMNS`` result tuple -> MemoryHead, each value checked against its
    column as ``row_from_sql`` checks it (the same direct path, and ``storage.rows`` for the
    rest). Raises BadValue on a value memvault never writes."""
    id_, content, status, expires_at, visibility, agent, created_at, importance, last_accessed_at = tuple(r)
    if (type(id_) is str and type(content) is str and type(status) is str and status in _STATUS_SET
            and (expires_at is None or _num(expires_at)) and type(visibility) is str
            and visibility in _VISIBILITY_SET and _opt_text(agent) and _num(created_at) and _num(importance)
            and _num(last_accessed_at)):
        return MemoryHead(id_, content, status, None if expires_at is None else float(expires_at), visibility,
                          agent, float(created_at), float(importance), float(last_accessed_at))
    return checked_head(r)


def checked_head(r: sqlite3.Row | tuple) -> MemoryHead:
    """``head_from_sql`` with every column checked by ``storage.rows`` (BadValue names the first
    that is wrong)."""
    id_, content, status, expires_at, visibility, agent, created_at, importance, last_accessed_at = tuple(r)
    return MemoryHead(
        col.text(id_, "id"), col.text(content, "content"), col.choice(status, "status", MEMORY_STATUSES),
        col.opt_number(expires_at, "expires_at"), col.choice(visibility, "visibility", VISIBILITIES),
        col.opt_text(agent, "agent"), col.number(created_at, "created_at"), col.number(importance, "importance"),
        col.number(last_accessed_at, "last_accessed_at"),
    )


def memory_heads(found: Iterable[sqlite3.Row | tuple]) -> list[MemoryHead]:
    """``head_from_sql`` of each readable row; unreadable ones are left out, one log line each."""
    return col.readable(found, head_from_sql, "memories", col.by_id)


def memory_rows(found: Iterable[sqlite3.Row | tuple]) -> list[MemoryRow]:
    """``row_from_sql`` of each readable row; unreadable ones are left out, one log line each."""
    return col.readable(found, row_from_sql, "memories", col.by_id)


def history_entry(r: Sequence[Any]) -> HistoryEntry:
    """A ``SELECT seq, memory_id, action, actor, at, old, new, reason`` tuple -> HistoryEntry
    (snapshots decoded). Raises BadValue on a value memvault never writes."""
    seq, mid, action, actor, at, old, new, reason = r
    return HistoryEntry(col.integer(seq, "seq"), col.text(mid, "memory_id"), col.text(action, "action"),
                        col.opt_text(actor, "actor"), col.number(at, "at"),
                        col.json_object(old, "old") if old else None, col.json_object(new, "new") if new else None,
                        col.opt_text(reason, "reason"))
