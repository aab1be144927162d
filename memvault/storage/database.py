"""One SQLite connection and the rules for using it: reads, and writes in transactions.

Every store (facts, tasks, profile, documents) talks to SQLite through a
:class:`Database`, never through the raw aiosqlite connection, so that these rules hold
for all of them:

1. A write happens only inside ``async with db.transaction() as tx:``: ``BEGIN
   IMMEDIATE`` on entry, ``COMMIT`` when the block ends, ``ROLLBACK`` when it raises
   (cancellation included); or, for one statement that stands alone, through
   :meth:`Database.write_one` (its own transaction). Only those execute statements that write;
   :meth:`Database.fetchall` / :meth:`Database.fetchone` refuse them
   (:class:`WriteOutsideTransaction`).
2. One transaction at a time per connection, and no read beside it: a second task
   waits until the first has committed or rolled back. On a connection shared by
   several stores, this keeps one task's statements out of another's transaction
   and keeps readers from seeing half of one.
3. No nesting: opening a transaction, or reading through the Database, while the
   same task holds a transaction raises :class:`NestedTransaction` (it would wait for
   itself). Inside a transaction, read with ``tx.fetchall`` / ``tx.fetchone``.

A statement counts as a read when it starts with ``SELECT`` or is a ``PRAGMA`` that
sets nothing (no ``=``).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
import anyio

__all__ = ["Database", "Transaction", "NestedTransaction", "WriteOutsideTransaction"]

# Anchored at the start, one run of blanks per place: linear in the statement's length.
_READ = re.compile(r"\A\s*(?:SELECT\b|PRAGMA\s+[\w.]+(?:\s*\([^)]*\))?\s*(?:;\s*)?$)", re.IGNORECASE)


class NestedTransaction(RuntimeError):
    """A task that holds a transaction opened another one, or read outside it."""


class WriteOutsideTransaction(RuntimeError):
    """A statement that writes was given to a read method of :class:`Database`."""


class Transaction:
    """The open transaction handed out by :meth:`Database.transaction`; usable only inside that block."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._open = True

    def _check(self) -> aiosqlite.Connection:
        if not self._open:
            raise RuntimeError("this transaction has ended; open a new one with `async with db.transaction()`")
        return self._conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Cursor:
        """Run one statement (any kind); returns its cursor (``lastrowid``, ``fetchone``)."""
        return await self._check().execute(sql, list(params))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per parameter row."""
        await self._check().executemany(sql, rows)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of a query, as the transaction sees them."""
        return list(await self._check().execute_fetchall(sql, list(params)))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """First row of a query, or None."""
        cur = await self._check().execute(sql, list(params))
        return await cur.fetchone()


class Database:
    """An aiosqlite connection opened in autocommit mode (``isolation_level=None``), with the
    module's rules for reads and transactions. Create one per connection and share it."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Hold the connection for one read or one transaction (rules 2 and 3)."""
        me = asyncio.current_task()
        if me is not None and self._owner is me:
            raise NestedTransaction(
                "this task already holds a transaction on this connection; use its tx.execute / tx.fetchall "
                "instead of opening another or reading through the Database"
            )
        async with self._lock:
            self._owner = me
            try:
                yield
            finally:
                self._owner = None

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of a read-only statement (``SELECT`` or a ``PRAGMA`` without ``=``).

        Raises WriteOutsideTransaction for any other statement, NestedTransaction when
        this task holds a transaction.
        """
        if not _READ.match(sql):
            raise WriteOutsideTransaction(
                f"{sql.split(None, 1)[0] if sql.strip() else 'empty'} statement outside a transaction; "
                "writes go through `async with db.transaction() as tx: await tx.execute(...)`"
            )
        async with self._turn():
            return list(await self._conn.execute_fetchall(sql, list(params)))

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[aiosqlite.Connection]:
        """``async with db.turn() as conn:`` the raw connection for a few reads that belong
        together (rule 2: no other task's statement runs in between), e.g. a count and the
        connection's change counter read at the same moment. Only reads: writes go through
        :meth:`transaction` or :meth:`write_one`. Raises NestedTransaction as the reads do."""
        async with self._turn():
            yield self._conn

    async def write_one(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement that writes, as its own transaction (autocommit: SQLite makes a lone
        statement atomic), without the BEGIN / COMMIT round trips of :meth:`transaction`.

        For a single statement whose effect stands alone (e.g. access statistics); several
        statements that must commit together need :meth:`transaction`. Raises
        NestedTransaction when this task holds a transaction, sqlite3 errors as execute does.
        """
        async with self._turn():
            await self._conn.execute(sql, list(params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """First row of a read-only statement, or None (same rules as :meth:`fetchall`)."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """``async with db.transaction() as tx:``: one ``BEGIN IMMEDIATE`` .. ``COMMIT`` unit.

        Commits when the block ends, rolls back and re-raises when it raises. Waits for
        any other task's transaction on this connection; raises NestedTransaction when
        this task already holds one; sqlite3.OperationalError when the database stays
        locked by another process past the busy timeout.
        """
        async with self._turn():
            with anyio.CancelScope(shield=True):  # a BEGIN sent must be seen through
                await self._conn.execute("BEGIN IMMEDIATE")
            tx = Transaction(self._conn)
            try:
                yield tx
                tx._open = False
                with anyio.CancelScope(shield=True):
                    await self._conn.execute("COMMIT")
            except BaseException:
                tx._open = False
                with anyio.CancelScope(shield=True):
                    if self._conn.in_transaction:
                        await self._conn.execute("ROLLBACK")
                raise

    async def checkpoint(self) -> None:
        """Copy the WAL into the main file and truncate it (``PRAGMA wal_checkpoint(TRUNCATE)``)."""
        async with self._turn():
            await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def close(self) -> None:
        """Close the connection (waits for a running transaction to end)."""
        async with self._turn():
            await self._conn.close()
