"""One unreadable row never fails a scope: it is left out of the read and logged.

SQLite keeps whatever is written into it, so a row can hold a value memvault never
writes (edited by hand, damaged, written by a faulty program). For every JSON or typed
column the storage layer decodes (memories, which also make the profile; tasks and their
history; document files and chunks), one row is corrupted through sqlite3 directly
while the server runs, the tools that read that table are called, and each call must
succeed with every other row and without the corrupted one, with one log line naming the
table, the row and what is wrong. The value is then put back for the next case.

One in-process server serves the whole module (the cases only read, and each puts its
value back), so the sweep costs one start-up, not one per column.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, call_error, db_rows, inproc_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MEMORIES = {  # label -> (content, kind, key, tags)
    "staging": ("The staging database lives on host pg-staging-3 in Frankfurt", "fact", None, ["infra"]),
    "release": ("Release notes are written in the CHANGELOG before tagging", "procedure", None, ["release"]),
    "editor": ("Alice edits Go code in Neovim", "preference", "pref.editor", []),
    "shell": ("Alice uses fish as her login shell", "preference", "pref.shell", []),
}
DOCUMENTS = {
    "volcano.md": ("# Volcanoes\n\nThe caldera of Mount Vesuvius erupted in 79 AD and buried Pompeii under ash.\n",
                   "Vesuvius eruption that buried Pompeii"),
    "kiln.md": ("# Pottery kilns\n\nA stoneware glaze matures at cone 10 in a reduction atmosphere kiln.\n",
                "stoneware glaze cone 10 kiln"),
}
BLOB = b"\x00\xff"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the served fixture lives across the module's tests


@dataclass
class Served:
    client: Any
    data_dir: Path
    memory_ids: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
async def served(tmp_path_factory, memo_model, model_cache) -> AsyncIterator[Served]:
    base = tmp_path_factory.mktemp("unreadable")
    docs = base / "docs"
    docs.mkdir()
    for name, (text, _) in DOCUMENTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    async with inproc_client(base / "d", memo_model, model_cache, roots=[docs.as_uri()]) as c:
        s = Served(c, base / "d")
        for label, (content, kind, key, tags) in MEMORIES.items():
            args: dict[str, Any] = {"content": content, "kind": kind, "tags": tags}
            if key:
                args["key"] = key
            s.memory_ids[label] = (await call(c, "remember", **args))["id"]
        await call(c, "set_task_state", task_id="migrate-db", title="Move to Postgres 16", state={"step": "dump"})
        await call(c, "set_task_state", task_id="migrate-db", patch={"step": "restore"})
        await call(c, "set_task_state", task_id="write-docs", title="Document the API", state={"step": "outline"})
        assert (await call(c, "index_docs", paths=["."]))["added"] == len(DOCUMENTS)
        yield s


@contextmanager
def corrupted(data_dir: Path, table: str, column: str, value: Any, where: str, params: list[Any]) -> Iterator[str]:
    """Set ``column`` of the one row of ``table`` matching ``where`` to ``value`` (sqlite3, beside the
    server's connection); put the old value back on exit. Yields the row's id (first key column)."""
    con = sqlite3.connect(data_dir / "memvault.db", timeout=10, isolation_level=None)
    try:
        rows = con.execute(f"SELECT rowid, {column}, * FROM {table} WHERE {where}", params).fetchall()
        assert len(rows) == 1, (table, where, rows)
        rowid, old, row_id = rows[0][:3]
        con.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", [value, rowid])
        try:
            yield str(row_id)
        finally:  # by rowid: the corrupted column may be the one ``where`` looked at
            con.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", [old, rowid])
    finally:
        con.close()


def assert_logged(caplog, table: str, row: str, column: str) -> None:
    """At least one line says the row was left out, each naming the table, the row and the column."""
    lines = [r.getMessage() for r in caplog.records
             if r.name == "memvault.storage.rows" and r.levelno == logging.WARNING]
    assert lines, "no line says which row was left out"
    for line in lines:
        assert line.startswith(f"unreadable row left out: table {table}, ") and row in line, line
        assert f": {column} " in line, line


# ------------------------------------------------------------------ memories (and the profile)

MEMORY_CASES = [
    ("tags", "{not json"), ("tags", '{"infra": 1}'), ("tags", "[1, 2]"), ("tags", BLOB),
    ("importance", "high"), ("confidence", "sure"), ("created_at", "yesterday"), ("updated_at", "now"),
    ("last_accessed_at", "never"), ("access_count", "many"), ("expires_at", "someday"), ("kind", "bogus"),
    ("content", BLOB), ("source", BLOB), ("content_hash", BLOB), ("embedding_model", BLOB),
    ("superseded_by", BLOB), ("index_state", "weird"), ("key", BLOB),
]


@pytest.mark.parametrize(("column", "value"), MEMORY_CASES, ids=[f"{c}={v!r}" for c, v in MEMORY_CASES])
async def test_an_unreadable_memory_is_left_out_of_recall_profile_and_forget(served, caplog, column, value):
    target = "editor" if column == "key" else "staging"  # a keyed one: its key makes a profile preference
    c = served.client
    with corrupted(served.data_dir, "memories", column, value, "id=?", [served.memory_ids[target]]) as row:
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            for label, (content, *_) in MEMORIES.items():
                got = await call(c, "recall", query=content, k=5)
                ids = [m["id"] for m in got["memories"]]
                assert (served.memory_ids[label] in ids) == (label != target), (label, got)
            profile = await call(c, "get_profile")
            shown = {p["id"] for p in profile["preferences"].values()} | {f["id"] for f in profile["facts"]}
            assert shown == {i for label, i in served.memory_ids.items() if label != target}, profile
            got = await call(c, "forget", tags=["release", "infra"], dry_run=True)  # tags read in SQL
            assert {f["id"] for f in got["forgotten"]} == {served.memory_ids[label] for label in ("release", "staging")
                                                           if label != target}, got
        assert_logged(caplog, "memories", row, column)


# ------------------------------------------------------------------ tasks

TASK_CASES = [
    ("state", "{not json"), ("state", "[1, 2]"), ("status", "zombie"), ("version", "v2"), ("title", BLOB),
    ("created_at", "x"), ("updated_at", "x"), ("expires_at", "someday"), ("ttl_days", "long"),
    ("outcome", BLOB), ("actor", BLOB),
]


@pytest.mark.parametrize(("column", "value"), TASK_CASES, ids=[f"{c}={v!r}" for c, v in TASK_CASES])
async def test_an_unreadable_task_is_left_out_of_the_task_list_and_profile(served, caplog, column, value):
    c = served.client
    with corrupted(served.data_dir, "tasks", column, value, "task_id=?", ["migrate-db"]):
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            got = await call(c, "get_task_state")
            assert [t["task_id"] for t in got["tasks"]] == ["write-docs"], got
            profile = await call(c, "get_profile")
            assert [t["task_id"] for t in profile["open_tasks"]] == ["write-docs"], profile
            got = await call(c, "get_task_state", task_id="write-docs")
            assert got["task"]["state"] == {"step": "outline"}
            # read by its id, the unreadable task is as good as absent (and the log says why)
            assert "no task 'migrate-db'" in await call_error(c, "get_task_state", task_id="migrate-db")
        assert_logged(caplog, "tasks", "task 'migrate-db'", column)


TASK_HISTORY_CASES = [("state", "{not json"), ("state", '"dump"'), ("status", "zombie"), ("version", "one"),
                      ("title", BLOB), ("at", "then"), ("actor", BLOB)]


@pytest.mark.parametrize(("column", "value"), TASK_HISTORY_CASES, ids=[f"{c}={v!r}" for c, v in TASK_HISTORY_CASES])
async def test_an_unreadable_task_version_is_left_out_of_the_history(served, caplog, column, value):
    c = served.client
    with corrupted(served.data_dir, "task_history", column, value, "task_id=? AND version=1", ["migrate-db"]):
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            got = await call(c, "get_task_state", task_id="migrate-db", include_history=True)
            assert got["task"]["state"] == {"step": "restore"}
            assert [(h["version"], h["state"]) for h in got["history"]] == [(2, {"step": "restore"})], got
        assert_logged(caplog, "task_history", "of task 'migrate-db'", column)


# ------------------------------------------------------------------ documents

DOC_FILE_CASES = [("chunk_ids", "{not json"), ("chunk_ids", '"one"'), ("size", "big"), ("mtime", "x"),
                  ("indexed_at", "x"), ("keyword_scheme", "two"), ("path", BLOB), ("embedding_model", BLOB),
                  ("format", BLOB)]
DOC_CHUNK_CASES = [("start_line", "x"), ("end_line", "x"), ("page", "p"), ("seq", "first"), ("text", BLOB),
                   ("heading", BLOB)]


async def search_finds(c, name: str) -> bool:
    got = await call(c, "search_docs", query=DOCUMENTS[name][1], k=3)
    return name in [r["path"] for r in got["results"]]


@pytest.mark.parametrize(("column", "value"), DOC_FILE_CASES, ids=[f"{c}={v!r}" for c, v in DOC_FILE_CASES])
async def test_an_unreadable_document_file_is_left_out_of_search(served, caplog, column, value):
    c = served.client
    with corrupted(served.data_dir, "doc_files", column, value, "path=?", ["kiln.md"]) as row:
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            assert await search_finds(c, "volcano.md")
            assert not await search_finds(c, "kiln.md")
        assert_logged(caplog, "doc_files", f"id {row}", column)


@pytest.mark.parametrize(("column", "value"), DOC_CHUNK_CASES, ids=[f"{c}={v!r}" for c, v in DOC_CHUNK_CASES])
async def test_an_unreadable_document_chunk_is_left_out_of_search(served, caplog, column, value):
    c = served.client
    where = "doc_id=(SELECT id FROM doc_files WHERE path=?)"
    with corrupted(served.data_dir, "doc_chunks", column, value, where, ["kiln.md"]) as row:
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            assert await search_finds(c, "volcano.md")
            assert not await search_finds(c, "kiln.md")
        assert_logged(caplog, "doc_chunks", f"id '{row}'", column)


async def test_index_docs_rewrites_an_unreadable_document_file_row(tmp_path, mcp_client, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, (text, _) in DOCUMENTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    async with mcp_client(tmp_path / "d", roots=[docs.as_uri()]) as c:
        await call(c, "index_docs", paths=["."])
        con = sqlite3.connect(tmp_path / "d" / "memvault.db", isolation_level=None)
        con.execute("UPDATE doc_files SET chunk_ids='{not json' WHERE path='kiln.md'")
        con.close()
        with caplog.at_level(logging.WARNING, logger="memvault.storage.rows"):
            res = await call(c, "index_docs", paths=["."])  # the file reads as not indexed: indexed again
        assert (res["added"], res["unchanged"], res["chunks_total"]) == (1, 1, 2), res
        assert_logged(caplog, "doc_files", "id ", "chunk_ids")
        assert await search_finds(c, "kiln.md") and await search_finds(c, "volcano.md")
    assert db_rows(tmp_path / "d", "SELECT json_valid(chunk_ids) FROM doc_files") == [(1,), (1,)]
