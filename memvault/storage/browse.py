"""Read-only queries behind the local web page: paged memories, projects, tasks, documents.

Shares the fact store's connection (``FactStore.database``) and never writes. Every
memory query is for one user. Pages are ``LIMIT``/``OFFSET`` over ``created_at DESC, id``
(a stable order), with the total count of the same conditions, so a page costs one
count and one bounded read whatever the store holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memvault.storage import rows as col
from memvault.storage.database import Database
from memvault.storage.facts import FactStore
from memvault.storage.memories import MEMORY_COLUMNS, MemoryRow, memory_rows

LIFE_STATES = ("active", "expired", "superseded", "deleted")
"""What the page's status filter offers: ``active`` = status active and unexpired; ``expired``
= status active with its TTL passed (erased at the next sweep); the others as stored."""


@dataclass(frozen=True)
class MemoryQuery:
    """Conditions of a memory page (AND); None = no condition. Times in unix seconds."""

    projects: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    tag: str | None = None
    states: Sequence[str] = ("active",)  # of LIFE_STATES
    created_from: float | None = None
    created_to: float | None = None
    visibility: str | None = None  # shared | private


@dataclass(frozen=True)
class TaskLine:
    """One task as listed (any status, expired ones left out); times in unix seconds."""

    project: str
    task_id: str
    title: str
    status: str
    version: int
    updated_at: float
    expires_at: float


@dataclass(frozen=True)
class DocCollection:
    """Indexed documents of one (project, collection): file and chunk counts, last index time (unix s)."""

    project: str
    collection: str
    files: int
    chunks: int
    last_indexed_at: float


@dataclass(frozen=True)
class DocFile:
    """One indexed file: where it is cited from, its chunk count, size (bytes) and last index time (unix s)."""

    project: str
    collection: str
    path: str
    chunks: int
    size: int
    indexed_at: float


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _where(user_id: str, q: MemoryQuery, now: float) -> tuple[str, list[Any]]:
    where: list[str] = ["user_id = ?"]
    params: list[Any] = [user_id]
    if q.projects is not None:
        where.append(f"project IN ({_marks(len(q.projects))})")
        params += list(q.projects)
    if q.kinds:
        where.append(f"kind IN ({_marks(len(q.kinds))})")
        params += list(q.kinds)
    if q.tag is not None:
        where.append("CASE WHEN json_valid(memories.tags) THEN EXISTS (SELECT 1 FROM json_each(memories.tags)"
                     " WHERE json_each.value = ?) ELSE 0 END")
        params.append(q.tag)
    if q.visibility is not None:
        where.append("visibility = ?")
        params.append(q.visibility)
    if q.created_from is not None:
        where.append("created_at >= ?")
        params.append(q.created_from)
    if q.created_to is not None:
        where.append("created_at <= ?")
        params.append(q.created_to)
    states = []
    for s in q.states:
        if s == "active":
            states.append("(status = 'active' AND (expires_at IS NULL OR expires_at > ?))")
            params.append(now)
        elif s == "expired":
            states.append("(status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?)")
            params.append(now)
        elif s in LIFE_STATES:
            states.append("status = ?")
            params.append(s)
        else:
            raise ValueError(f"unknown state {s!r}; one of {LIFE_STATES}")
    if states:
        where.append("(" + " OR ".join(states) + ")")
    return " AND ".join(where), params


class BrowseReader:
    """Read-only queries of the web page over the fact store's connection (see the module doc)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def on(cls, facts: FactStore) -> BrowseReader:
        """A reader on ``facts``' connection."""
        return cls(facts.database)

    async def page(self, user_id: str, q: MemoryQuery, now: float, *, offset: int, limit: int
                   ) -> tuple[list[MemoryRow], int]:
        """(At most ``limit`` memories from ``offset`` on, newest first; how many match in all)."""
        where, params = _where(user_id, q, now)
        row = await self._db.fetchone(f"SELECT COUNT(*) FROM memories WHERE {where}", params)
        assert row is not None  # an aggregate without GROUP BY always returns one row
        # The page's ids first (sorting ids, not whole rows), then their rows: half the time at 10k.
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT id FROM memories WHERE {where}"
            " ORDER BY created_at DESC, id LIMIT ? OFFSET ?) ORDER BY created_at DESC, id",
            [*params, int(limit), int(offset)],
        )
        return memory_rows(rows), int(row[0])

    async def projects(self, user_id: str) -> list[tuple[str, int]]:
        """(project, number of memories in any status) of every project of the user, by project."""
        rows = await self._db.fetchall(
            "SELECT project, COUNT(*) FROM memories WHERE user_id = ? GROUP BY project ORDER BY project", [user_id])
        return [(col.text(r[0], "project"), int(r[1])) for r in rows]

    async def tags(self, user_id: str, limit: int = 200) -> list[str]:
        """The user's tags (of memories in any status), most used first, at most ``limit``."""
        rows = await self._db.fetchall(
            "SELECT json_each.value, COUNT(*) FROM memories, json_each(memories.tags)"
            " WHERE user_id = ? AND json_valid(memories.tags) GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ?",
            [user_id, int(limit)])
        return [str(r[0]) for r in rows if isinstance(r[0], str)]

    async def tasks(self, user_id: str, now: float, limit: int) -> list[TaskLine]:
        """The user's unexpired tasks in every project and status, newest update first, at most ``limit``."""
        rows = await self._db.fetchall(
            "SELECT project, task_id, title, status, version, updated_at, expires_at FROM tasks"
            " WHERE user_id = ? AND expires_at > ? ORDER BY updated_at DESC LIMIT ?", [user_id, now, int(limit)])
        return [TaskLine(project=str(r[0]), task_id=str(r[1]), title=str(r[2]), status=str(r[3]),
                         version=int(r[4]), updated_at=float(r[5]), expires_at=float(r[6])) for r in rows]

    async def doc_files(self, limit: int) -> list[DocFile]:
        """Indexed files of every project and collection, most recently indexed first, at most ``limit``."""
        rows = await self._db.fetchall(
            "SELECT project, collection, path, CASE WHEN json_valid(chunk_ids) THEN json_array_length(chunk_ids)"
            " ELSE 0 END, size, indexed_at FROM doc_files ORDER BY indexed_at DESC, project, collection, path LIMIT ?",
            [int(limit)])
        return [DocFile(project=str(r[0]), collection=str(r[1]), path=str(r[2]), chunks=int(r[3] or 0),
                        size=int(r[4]), indexed_at=float(r[5])) for r in rows]

    async def doc_collections(self) -> list[DocCollection]:
        """Every (project, collection) with indexed files, by project then collection."""
        rows = await self._db.fetchall(
            "SELECT project, collection, COUNT(*), SUM(CASE WHEN json_valid(chunk_ids) THEN"
            " json_array_length(chunk_ids) ELSE 0 END), MAX(indexed_at) FROM doc_files GROUP BY 1, 2 ORDER BY 1, 2")
        return [DocCollection(project=str(r[0]), collection=str(r[1]), files=int(r[2]), chunks=int(r[3] or 0),
                              last_indexed_at=float(r[4])) for r in rows]
