"""The rules of memvault.storage.database on a real SQLite file: writes only in
transactions, one transaction at a time, no nesting, rollback on error."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import anyio
import pytest

import memvault
from memvault.storage.database import (
    Database,
    NestedTransaction,
    WriteOutsideTransaction,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    conn = await aiosqlite.connect(tmp_path / "t.db", isolation_level=None)
    await conn.execute("PRAGMA journal_mode = WAL")
    await conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    d = Database(conn)
    yield d
    await d.close()


async def values(db: Database) -> list[str]:
    return [r[0] for r in await db.fetchall("SELECT v FROM t ORDER BY id")]


async def test_a_transaction_commits_when_its_block_ends(db: Database, tmp_path: Path) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO t (v) VALUES (?)", ["a"])
        await tx.executemany("INSERT INTO t (v) VALUES (?)", [["b"], ["c"]])
        assert [r[0] for r in await tx.fetchall("SELECT v FROM t ORDER BY id")] == ["a", "b", "c"]
    other = sqlite3.connect(tmp_path / "t.db")  # another connection sees the commit
    assert [r[0] for r in other.execute("SELECT v FROM t ORDER BY id")] == ["a", "b", "c"]
    other.close()


async def test_an_error_rolls_everything_back_and_the_connection_stays_usable(db: Database) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO t (id, v) VALUES (1, 'kept')")
    with pytest.raises(sqlite3.IntegrityError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (id, v) VALUES (2, 'gone')")
            await tx.execute("INSERT INTO t (id, v) VALUES (1, 'clash')")
    with pytest.raises(ValueError, match="caller gave up"):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (id, v) VALUES (3, 'gone too')")
            raise ValueError("caller gave up")
    assert await values(db) == ["kept"]
    async with db.transaction() as tx:  # no transaction was left open
        await tx.execute("INSERT INTO t (id, v) VALUES (4, 'next')")
    assert await values(db) == ["kept", "next"]


async def test_cancelling_a_transaction_rolls_it_back(db: Database) -> None:
    inside = anyio.Event()

    async def writer() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (v) VALUES ('cancelled')")
            inside.set()
            await anyio.Event().wait()  # until cancelled

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await inside.wait()
        tg.cancel_scope.cancel()
    assert await values(db) == []
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO t (v) VALUES ('after')")
    assert await values(db) == ["after"]


@pytest.mark.parametrize("sql", ["INSERT INTO t (v) VALUES ('x')", "UPDATE t SET v = 'x'", "DELETE FROM t",
                                 "  delete from t", "PRAGMA user_version = 9", "CREATE TABLE u (x)", "BEGIN"])
async def test_reads_refuse_statements_that_write(db: Database, sql: str) -> None:
    with pytest.raises(WriteOutsideTransaction, match=r"outside a transaction; writes go through .*db\.transaction"):
        await db.fetchall(sql)
    assert await values(db) == []
    assert (await db.fetchone("PRAGMA user_version"))[0] == 0


async def test_nesting_raises_instead_of_waiting_for_itself(db: Database) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO t (v) VALUES ('outer')")
        with pytest.raises(NestedTransaction, match="already holds a transaction"):
            async with db.transaction():
                pass
        with pytest.raises(NestedTransaction, match="use its tx.execute / tx.fetchall"):
            await db.fetchall("SELECT v FROM t")
    assert await values(db) == ["outer"]  # the inner refusals did not undo the outer write


async def test_a_transaction_object_is_dead_after_its_block(db: Database) -> None:
    async with db.transaction() as tx:
        pass
    with pytest.raises(RuntimeError, match="this transaction has ended"):
        await tx.execute("INSERT INTO t (v) VALUES ('late')")
    assert await values(db) == []


async def test_another_task_never_sees_half_a_transaction(db: Database) -> None:
    """A reader that starts between two statements of a writer waits for the commit.

    On a bare shared connection the reader's SELECT would run between the two INSERTs
    and see one row; here it sees both.
    """
    first_written, reader_started = anyio.Event(), anyio.Event()
    seen: list[list[str]] = []

    async def writer() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (v) VALUES ('one')")
            first_written.set()
            await reader_started.wait()
            await tx.execute("INSERT INTO t (v) VALUES ('two')")

    async def reader() -> None:
        await first_written.wait()
        reader_started.set()
        seen.append(await values(db))

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        tg.start_soon(reader)
    assert seen == [["one", "two"]]


async def test_two_writers_take_turns(db: Database) -> None:
    """Two tasks writing at once on one connection both commit whole (no 'cannot start a
    transaction within a transaction')."""
    a_inside, b_waiting = anyio.Event(), anyio.Event()

    async def a() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (v) VALUES ('a1')")
            a_inside.set()
            await b_waiting.wait()
            await tx.execute("INSERT INTO t (v) VALUES ('a2')")

    async def b() -> None:
        await a_inside.wait()
        b_waiting.set()
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (v) VALUES ('b1')")

    async with anyio.create_task_group() as tg:
        tg.start_soon(a)
        tg.start_soon(b)
    assert await values(db) == ["a1", "a2", "b1"]


def test_no_store_writes_transaction_statements_itself() -> None:
    """BEGIN / COMMIT / ROLLBACK are spelled out in storage/database.py (the async store) and
    storage/snapshot.py (the standard library's read-only snapshot) only."""
    root = Path(memvault.__file__).parent
    pattern = re.compile(r"""["'](?:BEGIN|COMMIT|ROLLBACK)\b""")
    offenders = [str(p.relative_to(root.parent)) for p in root.rglob("*.py")
                 if p.name not in ("database.py", "snapshot.py") and pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"use Database.transaction() instead of writing BEGIN/COMMIT in: {offenders}"


async def test_write_one_commits_a_lone_statement_and_waits_for_a_transaction(db: Database, tmp_path: Path) -> None:
    await db.write_one("INSERT INTO t (v) VALUES (?)", ["alone"])
    other = sqlite3.connect(tmp_path / "t.db")  # committed: another connection reads it
    assert [r[0] for r in other.execute("SELECT v FROM t")] == ["alone"]
    other.close()
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO t (v) VALUES ('in tx')")
        with pytest.raises(NestedTransaction, match="already holds a transaction"):
            await db.write_one("INSERT INTO t (v) VALUES ('nested')")
    assert await values(db) == ["alone", "in tx"]
