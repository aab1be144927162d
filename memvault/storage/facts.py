"""The fact store: SQLite (through aiosqlite), memvault's source of truth.

Holds every memory row and its history. Qdrant is only an index rebuilt from here.
WAL mode, a busy timeout, parameterised statements only, versioned migrations
(``storage.migrations``). Each public method is one unit of work: it either commits
whole or changes nothing (``storage.database`` holds the rules for reads and
transactions on the shared connection). Times are unix seconds (float). The rows and
their decoding are in ``storage.memories``: a row holding a value memvault never writes
is left out of every read, with one log line.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio

from memvault.policy.units import SECONDS_PER_DAY
from memvault.storage import rows as col
from memvault.storage.database import Database, Transaction
from memvault.storage.memories import CONSOLIDATED_FROM as CONSOLIDATED_FROM  # service imports it from here
from memvault.storage.memories import (
    HEAD_COLUMNS,
    MEMORY_COLUMNS,
    HistoryEntry,
    MemoryHead,
    MemoryRow,
    history_entry,
    memory_heads,
    memory_rows,
)
from memvault.storage.memories import MEMORY_STATUSES as MEMORY_STATUSES  # service imports it from here
from memvault.storage.migrations import migrate, schema_version

T = TypeVar("T")

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5_000

BESIDE_SCAN = 500
"""``FactStore.written_beside`` looks at most this many rows (by insertion order) on each
side of a memory for the one its writer wrote just before or after it."""

# ln of the smallest positive normal float: the floor of policy.ranking.recency, in log space.
_LN_MIN_RECENCY = math.log(sys.float_info.min)


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _alive(now: float, table: str = "") -> tuple[str, list[Any]]:
    t = f"{table}." if table else ""
    return f"({t}expires_at IS NULL OR {t}expires_at > ?)", [now]


def readable_sql(reader: str | None, table: str = "") -> tuple[str, list[Any]]:
    """SQL condition (and parameters) on ``memories`` (or its alias ``table``): readable by agent
    ``reader`` (shared, or private to it); None is the user, who reads every memory."""
    if reader is None:
        return "1", []
    t = f"{table}." if table else ""
    return f"({t}visibility = 'shared' OR {t}agent = ?)", [reader]


def _owned(private_to: str | None) -> tuple[str, list[Any]]:
    """SQL condition on ``memories``: in the slot of ``private_to`` (None: the shared memories)."""
    if private_to is None:
        return "visibility = 'shared'", []
    return "(visibility = 'private' AND agent = ?)", [private_to]


def _ln(x: float | None) -> float | None:
    return math.log(x) if x is not None and x > 0 else None


async def _ensure_ln(conn: aiosqlite.Connection) -> None:
    """Make SQL ``ln()`` available: SQLite builds without its math functions get a Python one."""
    try:
        await conn.execute("SELECT ln(2.0)")
    except sqlite3.OperationalError:
        await conn.create_function("ln", 1, _ln, deterministic=True)


class FactStore:
    """Async SQLite store of memories and their history.

    Open with ``await FactStore.open(path)``; the file and its WAL are created 0600.
    Raises sqlite3.DatabaseError subclasses on a corrupt file.
    """

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._db = Database(conn)
        self.path = path
        # (user_id, project) -> (active count, connection's total_changes, data_version) when counted
        self._counted: dict[tuple[str, str], tuple[int, int, int]] = {}

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    async def open(cls, path: Path) -> FactStore:
        """Open (creating if needed) the database at ``path`` and migrate it to the latest schema.

        Raises ``migrations.SchemaTooNew`` (nothing written) when the file is at a schema above
        ``LATEST_VERSION``; sqlite3 errors on an unreadable or corrupt file.
        """
        # The file checks below run once per process, at start-up, before any request is served.
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():  # noqa: ASYNC240 -- one stat at start-up
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        conn = await aiosqlite.connect(path, isolation_level=None)
        # Closed on any failure below (a file that is not SQLite fails at the first PRAGMA):
        # aiosqlite's thread is not a daemon, and an unclosed connection keeps the process alive.
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            # A hard forget must not leave the text in free pages of the file.
            await conn.execute("PRAGMA secure_delete = ON")
            await _ensure_ln(conn)
            store = cls(conn, path)
            await migrate(store._db, path)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await conn.close()
            raise
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(path) + suffix)
            if p.exists():  # noqa: ASYNC240 -- three stats at start-up
                os.chmod(p, 0o600)
        return store

    @property
    def database(self) -> Database:
        """The shared connection, for the other stores of the same file (tasks, profile).

        One connection per process keeps SQLite writes serialised in one place.
        """
        return self._db

    async def close(self) -> None:
        """Close the connection (checkpointing the WAL)."""
        await self._db.close()

    async def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return await schema_version(self._db)

    # ------------------------------------------------------------------ internals
    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[MemoryRow]:
        return memory_rows(await self._db.fetchall(sql, params))

    @staticmethod
    async def _history(tx: Transaction, row: MemoryRow, action: str, actor: str | None, at: float,
                       old: str | None, new: str | None, reason: str | None = None) -> None:
        await tx.execute(
            "INSERT INTO memory_history (memory_id, user_id, project, action, actor, at, old, new, reason)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            [row.id, row.user_id, row.project, action, actor, at, old, new, reason],
        )

    async def _supersede(self, tx: Transaction, old: MemoryRow, *, by: str, at: float,
                         actor: str | None) -> None:
        """Inside ``tx``: mark ``old`` superseded by the memory ``by`` (index entry pending)."""
        before = old.snapshot()
        old.status, old.superseded_by, old.updated_at = "superseded", by, at
        old.index_state = "pending"
        await tx.execute(
            "UPDATE memories SET status='superseded', superseded_by=?, updated_at=?, index_state='pending'"
            " WHERE id=?",
            [by, at, old.id],
        )
        await self._history(tx, old, "supersede", actor, at, before, old.snapshot(), f"superseded by {by}")

    # ------------------------------------------------------------------ reads
    async def get(self, ids: Iterable[str]) -> list[MemoryRow]:
        """Rows by id (any status), in no particular order; unknown ids are skipped."""
        return await self._by_ids(MEMORY_COLUMNS, ids, memory_rows)

    async def heads(self, ids: Iterable[str]) -> list[MemoryHead]:
        """``MemoryHead`` of each of ``ids`` (any status), in no particular order; unknown ids are
        skipped, unreadable rows left out (one log line each). What ranking reads of every
        candidate; ``get`` reads whole rows."""
        return await self._by_ids(HEAD_COLUMNS, ids, memory_heads)

    async def _by_ids(self, columns: str, ids: Iterable[str],
                      decode: Callable[[list[sqlite3.Row]], list[T]]) -> list[T]:
        """``decode`` of the ``columns`` of the ``memories`` rows of ``ids`` (each once), read
        500 ids a statement (SQLite's bound on parameters)."""
        ids = list(dict.fromkeys(ids))
        out: list[T] = []
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            out += decode(await self._db.fetchall(f"SELECT {columns} FROM memories WHERE id IN ({_marks(len(part))})",
                                                  part))
        return out

    async def superseded_by_ids(self, user_id: str, memory_id: str) -> list[str]:
        """Ids of ``user_id``'s memories that ``memory_id`` superseded (the versions it replaced),
        most recently changed first."""
        rows = await self._db.fetchall(
            "SELECT id FROM memories WHERE user_id = ? AND superseded_by = ? ORDER BY updated_at DESC, id",
            [user_id, memory_id])
        return [str(r[0]) for r in rows]

    async def written_beside(self, ids: Iterable[str], now: float, *, reader: str | None = None,
                             levels: int = 1) -> dict[str, tuple[str | None, str | None]]:
        """For each memory in ``ids``: (the memory written just before it, the one written just
        after it), by insertion order, among the active, unexpired memories of the same user,
        project and writing agent that ``reader`` may read (None: the user, every memory); None
        at either end. Unknown ids are left out. ``levels`` 2: also the same of each memory so
        named that is not in ``ids`` (what a second call with those would answer), in the same
        statement; any other value: 1.

        Insertion order is SQLite's rowid (a memory's place in the table, never reused while
        the row exists); a reinforced memory keeps its place. A memory the reader may not read
        is skipped as if it did not exist, so the answer says nothing about it. Only the
        ``BESIDE_SCAN`` rows on each side are looked at (other writers' memories in between
        count), so each id costs two bounded index range scans however large the project.
        """
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        alive, a = _alive(now, "s")
        readable, rd = readable_sql(reader, "s")
        scan = [*a, *rd]  # the parameters of one side

        def side(m: str, before: bool) -> str:
            """The id written just before (or after) the memory of row alias ``m``."""
            span = (f"BETWEEN {m}.rowid - {BESIDE_SCAN} AND {m}.rowid - 1" if before
                    else f"BETWEEN {m}.rowid + 1 AND {m}.rowid + {BESIDE_SCAN}")
            return (f"SELECT s.id FROM memories s WHERE s.user_id = {m}.user_id AND s.project = {m}.project"
                    f" AND s.status = 'active' AND s.agent IS {m}.agent AND {alive} AND {readable}"
                    f" AND s.rowid {span} ORDER BY s.rowid {'DESC' if before else 'ASC'} LIMIT 1")

        first = (f"SELECT m.id AS id, ({side('m', True)}) AS b, ({side('m', False)}) AS a FROM memories m"
                 f" WHERE m.id IN ({_marks(len(ids))})")
        if levels != 2:
            rows = await self._db.fetchall(first, [*scan, *scan, *ids])
            return {str(i): (before, after) for i, before, after in rows}
        # Two places: each row also names what was written beside the memories its first answer
        # names (row alias p: the memory x.b, then x.a); those not in ``ids`` join the answer.
        second = ", ".join(f"(SELECT ({side('p', before)}) FROM memories p WHERE p.id = x.{named})"
                           for named in ("b", "a") for before in (True, False))
        # (OFFSET keeps SQLite from flattening x into the outer query, which would run x's
        # subqueries again inside each of ``second``'s)
        rows = await self._db.fetchall(f"SELECT x.id, x.b, x.a, {second} FROM ({first} LIMIT -1 OFFSET 0) x",
                                       [*scan * 4, *scan, *scan, *ids])
        out: dict[str, tuple[str | None, str | None]] = {str(r[0]): (r[1], r[2]) for r in rows}
        for r in rows:
            for named, pair in ((r[1], (r[3], r[4])), (r[2], (r[5], r[6]))):
                if named is not None and named not in out:
                    out[str(named)] = pair
        return out

    async def active_by_hash(self, user_id: str, project: str, kind: str, content_hash: str,
                             now: float, *, private_to: str | None = None) -> list[MemoryRow]:
        """Every active, unexpired memory with this content hash in this scope and kind (one per key
        at most, in practice) in the slot of ``private_to`` (None: the shared memories; else that
        agent's private ones), oldest first."""
        alive, p = _alive(now)
        owned, o = _owned(private_to)
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id=? AND project=? AND kind=? AND content_hash=?"
            f" AND status='active' AND {alive} AND {owned} ORDER BY created_at",
            [user_id, project, kind, content_hash, *p, *o],
        )

    async def active_by_key(self, user_id: str, project: str, key: str, now: float, *,
                            private_to: str | None = None) -> list[MemoryRow]:
        """Active, unexpired memories holding ``key`` in exactly this scope, in the slot of
        ``private_to`` (None: the shared memories; else that agent's private ones)."""
        alive, p = _alive(now)
        owned, o = _owned(private_to)
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id=? AND project=? AND key=? AND status='active'"
            f" AND {alive} AND {owned}",
            [user_id, project, key, *p, *o],
        )

    async def select(self, user_id: str, *, projects: Sequence[str] | None = None,
                     kinds: Sequence[str] | None = None, tags_any: Sequence[str] | None = None,
                     key: str | None = None, ids: Sequence[str] | None = None,
                     created_before: float | None = None, statuses: Sequence[str] = ("active",),
                     now: float | None = None, limit: int | None = None,
                     content_hash: str | None = None, reader: str | None = None) -> list[MemoryRow]:
        """Rows of one user matching every given condition (AND); newest first.

        ``now`` given -> expired rows are left out. ``tags_any`` matches rows holding
        at least one of the tags. ``content_hash``: rows whose text normalises to it.
        ``reader``: only rows that agent reads (shared, or private to it); None: every row.
        """
        readable, r = readable_sql(reader)
        where = ["user_id = ?", readable]
        params: list[Any] = [user_id, *r]
        if projects is not None:
            where.append(f"project IN ({_marks(len(projects))})")
            params += list(projects)
        if kinds:
            where.append(f"kind IN ({_marks(len(kinds))})")
            params += list(kinds)
        if key is not None:
            where.append("key = ?")
            params.append(key)
        if ids is not None:
            where.append(f"id IN ({_marks(len(ids))})")
            params += list(ids)
        if content_hash is not None:
            where.append("content_hash = ?")
            params.append(content_hash)
        if created_before is not None:
            where.append("created_at < ?")
            params.append(created_before)
        if statuses:
            where.append(f"status IN ({_marks(len(statuses))})")
            params += list(statuses)
        if now is not None:
            alive, p = _alive(now)
            where.append(alive)
            params += p
        if tags_any:
            # json_each fails the whole query on one row of invalid JSON: CASE reads only valid ones.
            where.append(
                "CASE WHEN json_valid(memories.tags) THEN EXISTS (SELECT 1 FROM json_each(memories.tags)"
                f" WHERE json_each.value IN ({_marks(len(tags_any))})) ELSE 0 END"
            )
            params += list(tags_any)
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY created_at DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return await self._fetch(sql, params)

    async def count_active(self, user_id: str, project: str, now: float) -> int:
        """Number of active, unexpired memories in one scope.

        Visits every active row of the scope (time linear in them):
        writers that only need to know whether a cap is reached ask ``count_active_bound``.
        """
        alive, p = _alive(now)
        async with self._db.turn() as conn:
            version = await self._data_version(conn)
            changes = conn.total_changes
            cur = await conn.execute(
                f"SELECT COUNT(*) FROM memories WHERE user_id=? AND project=? AND status='active' AND {alive}",
                [user_id, project, *p],
            )
            row = await cur.fetchone()
        assert row is not None  # an aggregate without GROUP BY always returns one row
        self._counted[(user_id, project)] = (row[0], changes, version)
        return row[0]

    async def count_active_bound(self, user_id: str, project: str, now: float) -> int:
        """At least the number of active, unexpired memories in one scope; exact when just counted.

        The last ``count_active`` of the scope plus every row change this connection made
        since (each change adds at most one active memory; expiry only removes), as long as
        no other connection (another process) committed meanwhile (``PRAGMA data_version``);
        otherwise, and for a scope not counted yet, it counts (``count_active``). So a write
        far below a scope's cap costs one pragma instead of a visit of every row of the scope.
        """
        got = self._counted.get((user_id, project))
        if got is not None:
            count, changes, version = got
            async with self._db.turn() as conn:
                if await self._data_version(conn) == version:
                    return count + max(0, conn.total_changes - changes)
        return await self.count_active(user_id, project, now)

    @staticmethod
    async def _data_version(conn: aiosqlite.Connection) -> int:
        cur = await conn.execute("PRAGMA data_version")
        row = await cur.fetchone()
        assert row is not None  # this pragma always returns one row
        return int(row[0])

    async def lowest_retention(self, user_id: str, project: str, now: float, *, limit: int,
                               half_life_days: float, exclude: str | None = None) -> list[MemoryRow]:
        """The ``limit`` active, unexpired memories of one scope least worth keeping, lowest first.

        Ordered in SQL by the logarithm of ``policy.ranking.retention_score`` (importance x
        recency, recency = 0.5 ** (days since last access / ``half_life_days``), floored at
        the smallest normal float; a future last access counts as now), then by the oldest
        last access, then the oldest creation; ``exclude`` (an id) is never returned. Reads
        only the rows returned, whatever the size of the scope.
        """
        alive, p = _alive(now)
        decay = math.log(2.0) / (half_life_days * SECONDS_PER_DAY)  # ln(recency) lost per second without access
        where = "user_id=? AND project=? AND status='active' AND " + alive
        params: list[Any] = [user_id, project, *p]
        if exclude is not None:
            where += " AND id != ?"
            params.append(exclude)
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY"
            " (CASE WHEN typeof(importance) IN ('integer', 'real') AND importance > 0 THEN ln(importance)"
            " ELSE -1.0e308 END)"
            " + MAX(?, -MAX(0.0, ? - last_accessed_at) * ?), last_accessed_at, created_at LIMIT ?",
            [*params, _LN_MIN_RECENCY, now, decay, int(limit)],
        )

    async def active_scopes(self, now: float) -> list[tuple[str, str]]:
        """Every (user id, project) holding at least one active, unexpired memory, sorted."""
        alive, p = _alive(now)
        rows = await self._db.fetchall(
            f"SELECT DISTINCT user_id, project FROM memories WHERE status='active' AND {alive} ORDER BY 1, 2", p)
        return [(str(u), str(pr)) for u, pr in rows]

    async def has_project(self, user_id: str, project: str) -> bool:
        """Whether ``user_id`` has or had a memory (any status) in ``project``."""
        row = await self._db.fetchone("SELECT 1 FROM memories WHERE user_id=? AND project=? LIMIT 1",
                                      [user_id, project])
        return row is not None

    async def counts_by_kind(self, user_id: str, projects: Sequence[str], now: float, *,
                             reader: str | None = None) -> dict[str, int]:
        """Active, unexpired memories per kind over the given projects that agent ``reader``
        reads (None: all of them)."""
        alive, p = _alive(now)
        readable, r = readable_sql(reader)
        rows = await self._db.fetchall(
            f"SELECT kind, COUNT(*) FROM memories WHERE user_id=? AND project IN ({_marks(len(projects))})"
            f" AND status='active' AND {alive} AND {readable} GROUP BY kind",
            [user_id, *projects, *p, *r],
        )
        return {k: n for k, n in rows}

    async def pending(self, limit: int = 1000) -> list[MemoryRow]:
        """Rows whose index entry is not confirmed (crash between SQLite and Qdrant)."""
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE index_state='pending' LIMIT ?", [limit]
        )

    async def indexable_ids(self, now: float) -> set[str]:
        """Ids that should have a vector: active and unexpired."""
        alive, p = _alive(now)
        rows = await self._db.fetchall(f"SELECT id FROM memories WHERE status='active' AND {alive}", p)
        return {r[0] for r in rows}

    async def count_indexable(self, now: float) -> int:
        """Number of rows that should have a vector (active and unexpired), all users."""
        alive, p = _alive(now)
        row = await self._db.fetchone(f"SELECT COUNT(*) FROM memories WHERE status='active' AND {alive}", p)
        assert row is not None  # an aggregate without GROUP BY always returns one row
        return int(row[0])

    async def sample_indexable(self, now: float, n: int) -> list[MemoryRow]:
        """Up to ``n`` rows that should have a vector, picked at random (unreadable rows left out)."""
        alive, p = _alive(now)
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE status='active' AND {alive} ORDER BY random() LIMIT ?",
            [*p, int(n)],
        )

    async def count_group(self, user_id: str, project: str, now: float, *, kind: str | None = None,
                          tag: str | None = None, created_to: float | None = None) -> int:
        """Number of rows that should have a vector in one (user, project), optionally of one
        ``kind``, holding ``tag``, or created at or before ``created_to`` (unix s)."""
        alive, p = _alive(now)
        where, params = ["user_id=?", "project=?", "status='active'", alive], [user_id, project, *p]
        if kind is not None:
            where.append("kind=?")
            params.append(kind)
        if tag is not None:
            where.append("CASE WHEN json_valid(tags) THEN EXISTS (SELECT 1 FROM json_each(memories.tags)"
                         " WHERE json_each.value = ?) ELSE 0 END")
            params.append(tag)
        if created_to is not None:
            where.append("created_at <= ?")
            params.append(created_to)
        row = await self._db.fetchone(f"SELECT COUNT(*) FROM memories WHERE {' AND '.join(where)}", params)
        assert row is not None  # an aggregate without GROUP BY always returns one row
        return int(row[0])

    async def expired(self, now: float, limit: int = 1000) -> list[MemoryRow]:
        """Rows (any status) whose expiry has passed."""
        return await self._fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?",
            [now, limit],
        )

    async def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of one memory, oldest first."""
        found = await self._db.fetchall(
            "SELECT seq, memory_id, action, actor, at, old, new, reason FROM memory_history"
            " WHERE memory_id=? ORDER BY seq",
            [memory_id],
        )
        return col.readable(found, history_entry, "memory_history", lambda r: f"seq {r[0]!r}")

    # ------------------------------------------------------------------ writes
    async def add(self, row: MemoryRow, *, supersede: Sequence[MemoryRow] = (), actor: str | None,
                  reason: str | None = None, consolidated_from: Sequence[str] = ()) -> None:
        """Insert ``row`` (index_state pending) and mark ``supersede`` rows superseded by it.

        One transaction; history gets an ``add`` entry (its ``new`` snapshot naming
        ``consolidated_from``, when given: the row merges those memories) and one
        ``supersede`` per old row.
        """
        async with self._db.transaction() as tx:
            await self._insert(tx, row, supersede, actor=actor, reason=reason, consolidated_from=consolidated_from)

    async def _insert(self, tx: Transaction, row: MemoryRow, supersede: Sequence[MemoryRow], *, actor: str | None,
                      reason: str | None, consolidated_from: Sequence[str], at: float | None = None) -> None:
        await tx.execute(
            f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({_marks(22)})",
            [row.id, row.user_id, row.project, row.kind, row.key, row.content,
             json.dumps(row.tags, ensure_ascii=False), row.importance, row.confidence, row.source,
             row.created_at, row.updated_at, row.last_accessed_at, row.access_count, row.expires_at,
             row.status, row.superseded_by, row.content_hash, row.embedding_model, "pending",
             row.visibility, row.agent],
        )
        when = row.created_at if at is None else at
        await self._history(tx, row, "add", actor, when, None, row.snapshot(consolidated_from), reason)
        for old in supersede:
            await self._supersede(tx, old, by=row.id, at=when, actor=actor)

    async def consolidate(self, merges: Sequence[tuple[MemoryRow, Sequence[MemoryRow]]], *, now: float,
                          actor: str | None, reason: str) -> None:
        """Write each merged row and mark its members superseded by it, all in one transaction.

        ``merges``: (merged row, its members). The merged row keeps its own ``created_at``
        (the earliest member's); its ``add`` history entry is dated ``now`` (unix s) and
        names the members (``consolidated_from``); each member gets a ``supersede`` entry.
        Rows are left pending for the index.
        """
        if not merges:
            return
        async with self._db.transaction() as tx:
            for row, members in merges:
                await self._insert(tx, row, members, actor=actor, reason=reason,
                                   consolidated_from=[m.id for m in members], at=now)

    async def reinforce(self, row: MemoryRow, *, importance: float, now: float, actor: str | None,
                        reason: str, key: str | None = None, tags: Sequence[str] | None = None,
                        expires_at: float | None = None, supersede: Sequence[MemoryRow] = (),
                        consolidated_from: Sequence[str] = ()) -> MemoryRow:
        """Count a repeated write: access_count + 1, importance = max(old, new), touched now.

        The same write may also give the row a ``key``, new ``tags`` (the full list) or an
        ``expires_at`` (unix s), and mark ``supersede`` rows superseded by it; None leaves a
        field as it is. When the key, tags or expiry change, the row's index entry is marked
        pending (its payload must be rewritten, then ``mark_indexed``). One transaction;
        history gets a ``reinforce`` entry (naming ``consolidated_from``, when given) and one
        ``supersede`` per old row.
        """
        before = row.snapshot()
        new_key = row.key if key is None else key
        new_tags = list(row.tags) if tags is None else list(tags)
        new_expiry = row.expires_at if expires_at is None else expires_at
        payload_changed = (new_key, new_tags, new_expiry) != (row.key, row.tags, row.expires_at)
        row.access_count += 1
        row.importance = max(row.importance, importance)
        row.last_accessed_at = row.updated_at = now
        row.key, row.tags, row.expires_at = new_key, new_tags, new_expiry
        if payload_changed:
            row.index_state = "pending"
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE memories SET access_count=?, importance=?, last_accessed_at=?, updated_at=?, key=?, tags=?,"
                " expires_at=?, index_state=? WHERE id=?",
                [row.access_count, row.importance, now, now, row.key, json.dumps(row.tags, ensure_ascii=False),
                 row.expires_at, row.index_state, row.id],
            )
            await self._history(tx, row, "reinforce", actor, now, before, row.snapshot(consolidated_from), reason)
            for old in supersede:
                await self._supersede(tx, old, by=row.id, at=now, actor=actor)
        return row

    async def restore(self, rows: Sequence[MemoryRow], *, now: float, actor: str | None, reason: str,
                      displace: Sequence[tuple[MemoryRow, str]] = (), retire: Sequence[MemoryRow] = ()) -> None:
        """Bring ``rows`` (deleted or superseded) back as active, mark each ``displace``
        row superseded by the id paired with it (a restored row taking its key slot back),
        and each ``retire`` row deleted (soft, history ``delete`` with ``reason``: a merge
        undone).

        Each restored row: status active, no ``superseded_by``, updated and last accessed
        ``now`` (unix s), index entry pending (the caller indexes it, then ``mark_indexed``).
        One transaction; history gets a ``restore`` entry per row (old and new snapshots),
        a ``supersede`` per displaced row and a ``delete`` per retired row. The ``MemoryRow``
        objects are updated too.
        """
        if not rows and not retire:
            return
        async with self._db.transaction() as tx:
            for row in rows:
                before = row.snapshot()
                row.status, row.superseded_by, row.index_state = "active", None, "pending"
                row.updated_at = row.last_accessed_at = now
                await tx.execute(
                    "UPDATE memories SET status='active', superseded_by=NULL, updated_at=?, last_accessed_at=?,"
                    " index_state='pending' WHERE id=?",
                    [now, now, row.id],
                )
                await self._history(tx, row, "restore", actor, now, before, row.snapshot(), reason)
            for old, by in displace:
                await self._supersede(tx, old, by=by, at=now, actor=actor)
            for gone in retire:
                await self._set_status(tx, gone, "deleted", action="delete", now=now, actor=actor, reason=reason)

    async def touch(self, ids: Sequence[str], now: float) -> None:
        """Record a read: last_accessed_at = now, access_count + 1 (not a history event)."""
        if not ids:
            return
        # One statement, atomic on its own: no BEGIN / COMMIT round trips on the reply's path.
        await self._db.write_one(
            f"UPDATE memories SET last_accessed_at=?, access_count=access_count+1 WHERE id IN ({_marks(len(ids))})",
            [now, *ids],
        )

    async def mark_indexed(self, ids: Sequence[str]) -> None:
        """The index now agrees with these rows."""
        if not ids:
            return
        async with self._db.transaction() as tx:
            for i in range(0, len(ids), 500):
                part = list(ids[i : i + 500])
                await tx.execute(f"UPDATE memories SET index_state='indexed' WHERE id IN ({_marks(len(part))})", part)

    async def set_status(self, rows: Sequence[MemoryRow], status: str, *, action: str, now: float,
                         actor: str | None, reason: str | None = None) -> None:
        """Soft change of status (``deleted`` by forget or eviction). History keeps the content."""
        if not rows:
            return
        async with self._db.transaction() as tx:
            for row in rows:
                await self._set_status(tx, row, status, action=action, now=now, actor=actor, reason=reason)

    async def _set_status(self, tx: Transaction, row: MemoryRow, status: str, *, action: str, now: float,
                          actor: str | None, reason: str | None) -> None:
        before = row.snapshot()
        row.status, row.updated_at, row.index_state = status, now, "pending"
        await tx.execute(
            "UPDATE memories SET status=?, updated_at=?, index_state='pending' WHERE id=?",
            [status, now, row.id],
        )
        await self._history(tx, row, action, actor, now, before, row.snapshot(), reason)

    async def purge(self, rows: Sequence[MemoryRow], *, action: str, now: float, actor: str | None,
                    reason: str | None = None) -> None:
        """Hard delete: the rows go, and every history entry of them loses its content and
        who made it (``old``, ``new``, ``actor`` and ``reason``: a source or a reason may name
        what the memory said).

        One ``action`` entry per id stays, with no content, so that the erasure itself is
        on record. The caller removes the vectors.
        """
        if not rows:
            return
        ids = [[row.id] for row in rows]
        # Three statements for the whole batch, not three per row: the connection serves no
        # read while this transaction is open (one round trip to SQLite's thread per statement).
        async with self._db.transaction() as tx:
            await tx.executemany("DELETE FROM memories WHERE id=?", ids)
            await tx.executemany("UPDATE memory_history SET old=NULL, new=NULL, actor=NULL, reason=NULL"
                                 " WHERE memory_id=?", ids)
            await tx.executemany(
                "INSERT INTO memory_history (memory_id, user_id, project, action, actor, at, old, new, reason)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                [[row.id, row.user_id, row.project, action, actor, now, None, None, reason] for row in rows],
            )
        # Move the erased pages out of the WAL into the (secure-deleted) main file.
        await self._db.checkpoint()
