"""Task state (working memory) in SQLite: one versioned JSON object per task, with history.

Tables ``tasks`` and ``task_history`` (migration 3). A task is keyed by (user_id,
project, task_id). Every write stores the whole new version and appends it to the
history, which keeps the newest ``history_max`` versions per task. ``expires_at`` is
the idle TTL of an open task or the retention of a finished one; expired rows are
left out of every read and purged by ``sweep``. Times are unix seconds (float). An
unreadable row (a value memvault never writes) is left out too, with one log line
(``storage.rows``); read by its id, it is as good as absent.

The store shares the fact store's SQLite connection (``FactStore.database``: one
transaction at a time, see ``storage.database``); callers still serialise their
read-then-write sequences with the runtime's write lock, as every fact-store writer does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memvault.policy.tasks import state_json
from memvault.storage import rows as col
from memvault.storage.database import Database
from memvault.storage.facts import FactStore
from memvault.vocabulary import (
    FINISHED_TASK_STATUSES,
    OPEN_TASK_STATUSES,
    TASK_STATUSES,
    TaskStatus,
    is_task_status,
)

_COLUMNS = ("user_id, project, task_id, title, status, version, state, created_at, updated_at, expires_at, "
            "ttl_days, outcome, episode_id, actor")


@dataclass
class TaskRow:
    """One task as stored. ``state`` is a JSON object (dict); times in unix seconds."""

    user_id: str
    project: str
    task_id: str
    title: str
    status: TaskStatus  # only checked statuses are written
    version: int
    state: dict[str, Any]
    created_at: float
    updated_at: float
    expires_at: float
    ttl_days: float | None = None
    outcome: str | None = None
    episode_id: str | None = None
    actor: str | None = None


@dataclass
class TaskVersion:
    """One past (or the current) version of a task from ``task_history``."""

    version: int
    title: str
    status: TaskStatus
    state: dict[str, Any] = field(default_factory=dict)
    at: float = 0.0
    actor: str | None = None


def _status(value: Any, column: str = "status") -> TaskStatus:
    if not isinstance(value, str) or not is_task_status(value):
        raise col.BadValue(column, f"is {value!r}, not one of {', '.join(TASK_STATUSES)}")
    return value


def _task(r: Sequence[Any]) -> TaskRow:
    """A ``SELECT _COLUMNS`` row -> TaskRow; raises BadValue on a value memvault never writes."""
    (user_id, project, task_id, title, status, version, state, created_at, updated_at, expires_at, ttl_days,
     outcome, episode_id, actor) = tuple(r)
    return TaskRow(user_id=col.text(user_id, "user_id"), project=col.text(project, "project"),
                   task_id=col.text(task_id, "task_id"), title=col.text(title, "title"), status=_status(status),
                   version=col.integer(version, "version"), state=col.json_object(state, "state"),
                   created_at=col.number(created_at, "created_at"), updated_at=col.number(updated_at, "updated_at"),
                   expires_at=col.number(expires_at, "expires_at"), ttl_days=col.opt_number(ttl_days, "ttl_days"),
                   outcome=col.opt_text(outcome, "outcome"), episode_id=col.opt_text(episode_id, "episode_id"),
                   actor=col.opt_text(actor, "actor"))


def _task_key(r: Sequence[Any]) -> str:
    return f"task {r[2]!r} of user {r[0]!r}, project {r[1]!r}"


def _version(r: Sequence[Any]) -> TaskVersion:
    v, title, status, state, at, actor = r
    return TaskVersion(col.integer(v, "version"), col.text(title, "title"), _status(status),
                       col.json_object(state, "state"), col.number(at, "at"), col.opt_text(actor, "actor"))


class TaskStore:
    """Async access to the task tables over the fact store's connection (see module doc)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def on(cls, facts: FactStore) -> TaskStore:
        """A task store sharing ``facts``' connection (schema migrated by ``FactStore.open``)."""
        return cls(facts.database)

    # ------------------------------------------------------------------ reads
    async def get(self, user_id: str, projects: Sequence[str], task_id: str, now: float) -> TaskRow | None:
        """The unexpired task ``task_id`` in the first of ``projects`` that holds one, else None."""
        for project in projects:
            row = await self._db.fetchone(
                f"SELECT {_COLUMNS} FROM tasks WHERE user_id=? AND project=? AND task_id=? AND expires_at > ?",
                [user_id, project, task_id, now],
            )
            if row is not None:
                task = col.decode_or_none(row, _task, "tasks", _task_key)
                if task is not None:  # an unreadable one is left out (logged), as if absent
                    return task
        return None

    async def list_tasks(self, user_id: str, projects: Sequence[str], now: float, *, include_done: bool = False,
                   limit: int = 20) -> tuple[list[TaskRow], int]:
        """Unexpired tasks over ``projects``, open ones first (active before blocked), newest first.

        Returns (at most ``limit`` rows, total number matching).
        """
        statuses = TASK_STATUSES if include_done else OPEN_TASK_STATUSES
        marks = ",".join("?" * len(projects))
        smarks = ",".join("?" * len(statuses))
        where = (f"user_id=? AND project IN ({marks}) AND status IN ({smarks}) AND expires_at > ?")
        params = [user_id, *projects, *statuses, now]
        row = await self._db.fetchone(f"SELECT COUNT(*) FROM tasks WHERE {where}", params)
        assert row is not None  # an aggregate without GROUP BY always returns one row
        (total,) = row
        # finished last, then the open statuses in their order, then newest first
        fmarks = ",".join("?" * len(FINISHED_TASK_STATUSES))
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM tasks WHERE {where} ORDER BY status IN ({fmarks}), "
            "status != ?, updated_at DESC LIMIT ?",
            [*params, *FINISHED_TASK_STATUSES, OPEN_TASK_STATUSES[0], int(limit)],
        )
        return col.readable(rows, _task, "tasks", _task_key), total

    async def history(self, user_id: str, project: str, task_id: str, limit: int) -> list[TaskVersion]:
        """Stored versions of one task, newest first, at most ``limit``."""
        rows = await self._db.fetchall(
            "SELECT version, title, status, state, at, actor FROM task_history"
            " WHERE user_id=? AND project=? AND task_id=? ORDER BY version DESC LIMIT ?",
            [user_id, project, task_id, int(limit)],
        )
        return col.readable(rows, _version, "task_history", lambda r: f"version {r[0]!r} of task {task_id!r}")

    # ------------------------------------------------------------------ writes
    async def write(self, row: TaskRow, *, history_max: int) -> None:
        """Store ``row`` as the task's current version and append it to the history.

        Sweep first (``sweep``) so that an expired row with the same key is gone and the
        task starts over at version 1. History beyond ``history_max`` versions of this
        task is dropped. One transaction.
        """
        key = [row.user_id, row.project, row.task_id]
        state = state_json(row.state)
        async with self._db.transaction() as tx:
            await tx.execute(
                f"INSERT INTO tasks ({_COLUMNS}) VALUES ({','.join('?' * 14)})"
                " ON CONFLICT (user_id, project, task_id) DO UPDATE SET title=excluded.title,"
                " status=excluded.status, version=excluded.version, state=excluded.state,"
                " updated_at=excluded.updated_at, expires_at=excluded.expires_at, ttl_days=excluded.ttl_days,"
                " outcome=excluded.outcome, episode_id=excluded.episode_id, actor=excluded.actor",
                [*key, row.title, row.status, row.version, state, row.created_at, row.updated_at, row.expires_at,
                 row.ttl_days, row.outcome, row.episode_id, row.actor],
            )
            await tx.execute(
                "INSERT INTO task_history (user_id, project, task_id, version, title, status, state, at, actor)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                [*key, row.version, row.title, row.status, state, row.updated_at, row.actor],
            )
            await tx.execute(
                "DELETE FROM task_history WHERE user_id=? AND project=? AND task_id=? AND version <= ?",
                [*key, row.version - history_max],
            )

    async def set_episode(self, row: TaskRow, episode_id: str) -> None:
        """Record the id of the episode memory written when ``row`` finished."""
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE tasks SET episode_id=? WHERE user_id=? AND project=? AND task_id=? AND version=?",
                [episode_id, row.user_id, row.project, row.task_id, row.version],
            )
        row.episode_id = episode_id

    async def sweep(self, now: float, limit: int = 1000) -> int:
        """Purge up to ``limit`` expired tasks with their history; returns how many went."""
        keys = await self._db.fetchall(
            "SELECT user_id, project, task_id FROM tasks WHERE expires_at <= ? LIMIT ?", [now, int(limit)]
        )
        if not keys:
            return 0
        async with self._db.transaction() as tx:
            for key in keys:
                await tx.execute("DELETE FROM tasks WHERE user_id=? AND project=? AND task_id=?", list(key))
                await tx.execute("DELETE FROM task_history WHERE user_id=? AND project=? AND task_id=?", list(key))
        return len(keys)
