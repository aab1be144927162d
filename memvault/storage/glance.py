"""Blocking, read-only reads of the store for client hooks (``memvault context``): no writes, no model.

A hook runs in a fresh process on every session start and must answer in a few hundred
milliseconds, Python start-up included, beside a running owner. So this module uses the
standard ``sqlite3`` module alone: ``storage.database`` (aiosqlite, anyio) and the async
stores cost about 170 ms more to import, more than half of that budget. The connection
is opened read-only (``mode=ro``, ``query_only``) inside one read transaction: in WAL
mode the owner's writers neither block it nor are blocked by it, and every query sees
one snapshot. The queries keep the stores' rules: active, unexpired rows of one user;
rows holding a value memvault never writes are left out (``storage.rows``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.policy.ranking import retention_score
from memvault.storage import rows as col
from memvault.storage.migrations import LATEST_VERSION
from memvault.storage.snapshot import read_snapshot
from memvault.vocabulary import OPEN_TASK_STATUSES

__all__ = ["GlanceMemory", "GlanceTask", "SchemaMismatch", "glance_snapshot", "keyed_memories",
           "ranked_memories", "open_tasks", "CANDIDATES"]

CANDIDATES = 200
"""Memories read per (scope, order) before ranking: the most important and the most recently used."""

_COLUMNS = "id, project, kind, key, content, importance, updated_at, last_accessed_at"


class SchemaMismatch(RuntimeError):
    """The database's schema version is not the one this memvault reads (it is migrated on the next start)."""


@dataclass(frozen=True)
class GlanceMemory:
    """One active memory as the hook needs it. Times in unix seconds."""

    id: str
    project: str
    kind: str
    key: str | None
    content: str
    importance: float
    updated_at: float
    last_accessed_at: float


@dataclass(frozen=True)
class GlanceTask:
    """One open task: id, title, status, state (JSON object), last update (unix seconds)."""

    task_id: str
    project: str
    title: str
    status: str
    state: dict[str, Any]
    updated_at: float


@contextmanager
def glance_snapshot(db_path: Path, *, busy_timeout_ms: int = 250) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``db_path`` inside one read transaction.

    Raises FileNotFoundError when the file does not exist (nothing is created),
    SchemaMismatch when its schema version is not ``LATEST_VERSION``, sqlite3.Error when
    it cannot be opened or read (waiting at most ``busy_timeout_ms`` for a lock).
    """
    if not db_path.is_file():
        raise FileNotFoundError(f"no memvault database at {db_path}")
    with read_snapshot(db_path, busy_timeout_ms) as con:
        (version,) = con.execute("PRAGMA user_version").fetchone()
        if version != LATEST_VERSION:
            raise SchemaMismatch(f"schema version {version}, this memvault reads {LATEST_VERSION}")
        yield con


def _memory(r: Sequence[Any]) -> GlanceMemory:
    return GlanceMemory(id=col.text(r[0], "id"), project=col.text(r[1], "project"), kind=col.text(r[2], "kind"),
                        key=col.opt_text(r[3], "key"), content=col.text(r[4], "content"),
                        importance=col.number(r[5], "importance"), updated_at=col.number(r[6], "updated_at"),
                        last_accessed_at=col.number(r[7], "last_accessed_at"))


def _marks(n: int) -> str:
    return ",".join("?" * n)


def keyed_memories(con: sqlite3.Connection, user_id: str, projects: Sequence[str], now: float,
                   limit: int) -> list[GlanceMemory]:
    """Active, unexpired shared memories with a key over ``projects``, newest update first, at most
    ``limit`` (the query of the profile's preferences). Private memories stay out of every
    glance: a hook acts for no agent, so only that agent's own MCP session reads them."""
    rows = con.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE user_id=? AND project IN ({_marks(len(projects))}) "
        "AND key IS NOT NULL AND status='active' AND visibility='shared' AND (expires_at IS NULL OR expires_at > ?) "
        "ORDER BY updated_at DESC LIMIT ?",
        [user_id, *projects, now, int(limit)],
    ).fetchall()
    return col.readable(rows, _memory, "memories", col.by_id)


def ranked_memories(con: sqlite3.Connection, user_id: str, project: str, now: float, limit: int, *,
                    half_life_days: float) -> list[GlanceMemory]:
    """The best ``limit`` active, unexpired shared memories without a key in ``project``, best first.

    Best = highest ``retention_score`` (importance x recency of last access, the score
    memvault keeps memories by), ties newest first. The candidates are the
    ``CANDIDATES`` most important and the ``CANDIDATES`` most recently used ones, so
    the ranking is exact for a scope of up to that many memories and reads two bounded
    index ranges for a bigger one. Raises ValueError for a bad ``half_life_days``.
    """
    where = ("user_id=? AND project=? AND key IS NULL AND status='active' AND visibility='shared' "
             "AND (expires_at IS NULL OR expires_at > ?)")
    params = [user_id, project, now]
    found: dict[str, GlanceMemory] = {}
    for order in ("importance DESC, updated_at DESC", "last_accessed_at DESC"):
        rows = con.execute(f"SELECT {_COLUMNS} FROM memories WHERE {where} ORDER BY {order} LIMIT ?",
                           [*params, CANDIDATES]).fetchall()
        for m in col.readable(rows, _memory, "memories", col.by_id):
            found.setdefault(m.id, m)
    ranked = sorted(found.values(), key=lambda m: (
        -retention_score(m.importance, m.last_accessed_at, now, half_life_days), -m.updated_at, m.id))
    return ranked[:limit]


def _task(r: Sequence[Any]) -> GlanceTask:
    return GlanceTask(task_id=col.text(r[0], "task_id"), project=col.text(r[1], "project"),
                      title=col.text(r[2], "title"), status=col.choice(r[3], "status", OPEN_TASK_STATUSES),
                      state=col.json_object(r[4], "state"), updated_at=col.number(r[5], "updated_at"))


def open_tasks(con: sqlite3.Connection, user_id: str, projects: Sequence[str], now: float,
               limit: int) -> list[GlanceTask]:
    """Unexpired open tasks over ``projects``: active before blocked, newest first, at most ``limit``."""
    rows = con.execute(
        f"SELECT task_id, project, title, status, state, updated_at FROM tasks WHERE user_id=? "
        f"AND project IN ({_marks(len(projects))}) AND status IN ({_marks(len(OPEN_TASK_STATUSES))}) "
        "AND expires_at > ? ORDER BY status != ?, updated_at DESC LIMIT ?",
        [user_id, *projects, *OPEN_TASK_STATUSES, now, OPEN_TASK_STATUSES[0], int(limit)],
    ).fetchall()
    return col.readable(rows, _task, "tasks", lambda r: f"{r[1]}/{r[0]}")
