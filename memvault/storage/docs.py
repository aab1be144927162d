"""The document registry: which files are indexed, in which scope, as which chunks (SQLite).

Tables ``doc_files`` and ``doc_chunks`` (schema migration 2 in ``storage.migrations``).
SQLite is the truth for documents as for memories: a search hit counts only if its chunk
row exists here, so a file is visible either in its old version or in its new one, never
half-written (``replace_file`` and ``remove_files`` are single transactions; the rules
for reads and transactions are in ``storage.database``).

The store opens its own aiosqlite connection to the same database file (WAL mode lets it
write beside the fact store's connection; the busy timeout covers the overlap), so that
a long indexing run never interleaves its transactions with ``remember``'s on one
connection. Use it as ``async with DocStore.connect(path) as store:``; the schema must
already be migrated (``FactStore.open`` does that). Times are unix seconds. An unreadable
row (a value memvault never writes) is left out of every read, a file row with its
chunks, with one log line (``storage.rows``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from memvault.storage import rows as col
from memvault.storage.database import Database

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
SCHEMA_VERSION = 4  # the last migration that changed these tables

_FILE_COLS = (
    "id, project, collection, abs_path, path, size, mtime, content_hash, format, chunk_ids, "
    "embedding_model, indexed_by, indexed_at, keyword_scheme"
)
_CHUNK_COLS = "c.id, c.doc_id, c.seq, c.heading, c.symbol, c.start_line, c.end_line, c.page, c.text"


class SchemaTooOld(RuntimeError):
    """The database has no document tables yet (open it with FactStore first to migrate)."""


@dataclass
class DocFile:
    """One indexed file in one (project, collection).

    abs_path: resolved absolute path (the file's identity); path: the path cited in results.
    size: bytes; mtime: st_mtime (unix seconds); content_hash: sha256 hex of the bytes.
    chunk_ids: UUID strings of its chunks, in document order. id: row id (0 before insert).
    keyword_scheme: version of the chunk keyword weighting its points were written with
    (``policy.keywords.DOC_KEYWORD_SCHEME``; rows from before migration 4 read as 1).
    """

    project: str
    collection: str
    abs_path: str
    path: str
    size: int
    mtime: float
    content_hash: str
    format: str
    embedding_model: str
    keyword_scheme: int
    indexed_at: float
    chunk_ids: list[str] = field(default_factory=list)
    indexed_by: str | None = None
    id: int = 0


@dataclass
class ChunkRow:
    """One stored chunk: ``text`` is lines ``start_line..end_line`` (1-based, inclusive) of the file
    (``page`` for PDF, ``heading`` path or code ``symbol`` when known). ``file`` is filled by reads."""

    id: str
    seq: int
    heading: str | None
    symbol: str | None
    start_line: int
    end_line: int
    page: int | None
    text: str
    doc_id: int = 0
    file: DocFile | None = None


def _file(r: Iterable[Any]) -> DocFile:
    """A ``SELECT _FILE_COLS`` row -> DocFile; raises BadValue on a value memvault never writes."""
    (id_, project, collection, abs_path, path, size, mtime, content_hash, fmt, chunk_ids,
     model, indexed_by, indexed_at, keyword_scheme) = tuple(r)
    return DocFile(project=col.text(project, "project"), collection=col.text(collection, "collection"),
                   abs_path=col.text(abs_path, "abs_path"), path=col.text(path, "path"), size=col.integer(size, "size"),
                   mtime=col.number(mtime, "mtime"), content_hash=col.text(content_hash, "content_hash"),
                   format=col.text(fmt, "format"), embedding_model=col.text(model, "embedding_model"),
                   keyword_scheme=col.integer(keyword_scheme, "keyword_scheme"),
                   indexed_at=col.number(indexed_at, "indexed_at"), chunk_ids=col.json_strings(chunk_ids, "chunk_ids"),
                   indexed_by=col.opt_text(indexed_by, "indexed_by"), id=col.integer(id_, "id"))


def _chunk(r: Sequence[Any]) -> ChunkRow:
    """A ``SELECT _CHUNK_COLS`` row -> ChunkRow (``file`` not filled); raises BadValue."""
    cid, doc_id, seq, heading, symbol, start, end, page, text = r[:9]
    return ChunkRow(col.text(cid, "id"), col.integer(seq, "seq"), col.opt_text(heading, "heading"),
                    col.opt_text(symbol, "symbol"), col.integer(start, "start_line"), col.integer(end, "end_line"),
                    col.opt_integer(page, "page"), col.text(text, "text"), col.integer(doc_id, "doc_id"))


def _files(rows: Iterable[Sequence[Any]]) -> list[DocFile]:
    return col.readable(rows, _file, "doc_files", col.by_id)


def _marks(n: int) -> str:
    return ",".join("?" * n)


class DocStore:
    """Async access to the document registry over its own connection (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    @asynccontextmanager
    async def connect(cls, path: Path) -> AsyncIterator[DocStore]:
        """Open a connection to the database at ``path`` for the duration of the block.

        Raises SchemaTooOld when migration 2 has not run, sqlite3 errors on a bad file.
        """
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA foreign_keys = ON")
            await conn.execute("PRAGMA synchronous = NORMAL")
            cur = await conn.execute("PRAGMA user_version")
            row = await cur.fetchone()
            assert row is not None  # this pragma always returns one row
            (version,) = row
            if version < SCHEMA_VERSION:
                raise SchemaTooOld(f"{path} is at schema {version}; documents need {SCHEMA_VERSION}")
            yield cls(Database(conn))
        finally:
            await conn.close()

    # ------------------------------------------------------------------ reads
    async def files(self, project: str, collection: str) -> dict[str, DocFile]:
        """Every indexed file of one (project, collection), keyed by abs_path."""
        rows = await self._db.fetchall(
            f"SELECT {_FILE_COLS} FROM doc_files WHERE project=? AND collection=?", [project, collection]
        )
        return {f.abs_path: f for f in _files(rows)}

    async def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRow]:
        """Chunks by id with their file (``ChunkRow.file``); unknown ids are skipped."""
        out: dict[str, ChunkRow] = {}
        ids = list(dict.fromkeys(ids))
        files: dict[Any, DocFile | None] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            rows = await self._db.fetchall(
                f"SELECT {_CHUNK_COLS}, " + ", ".join(f"f.{c.strip()}" for c in _FILE_COLS.split(","))
                + f" FROM doc_chunks c JOIN doc_files f ON f.id = c.doc_id WHERE c.id IN ({_marks(len(part))})",
                part,
            )
            for r in rows:
                doc_id = r[1]
                if doc_id not in files:  # an unreadable file row is logged once and its chunks left out
                    files[doc_id] = col.decode_or_none(r[9:], _file, "doc_files", col.by_id)
                f = files[doc_id]
                c = col.decode_or_none(r, _chunk, "doc_chunks", col.by_id) if f is not None else None
                if c is not None:
                    c.file = f
                    out[c.id] = c
        return out

    async def chunks_of(self, file_id: int) -> list[ChunkRow]:
        """The chunks of one file, in document order (``file`` not filled)."""
        rows = await self._db.fetchall(
            f"SELECT {_CHUNK_COLS} FROM doc_chunks c WHERE c.doc_id=? ORDER BY c.seq", [file_id]
        )
        return col.readable(rows, _chunk, "doc_chunks", col.by_id)

    async def stale_files(self, keyword_scheme: int) -> list[DocFile]:
        """Every file (all projects and collections) whose points were written under another
        keyword weighting than ``keyword_scheme``, in row order."""
        rows = await self._db.fetchall(
            f"SELECT {_FILE_COLS} FROM doc_files WHERE keyword_scheme != ? ORDER BY id", [keyword_scheme]
        )
        return _files(rows)

    async def all_chunk_ids(self) -> set[str]:
        """Every chunk id in the registry (all projects): the points the index should hold."""
        return {r[0] for r in await self._db.fetchall("SELECT id FROM doc_chunks")}

    async def count_chunks(self) -> int:
        """Number of chunk rows (all projects): the points the ``docs`` collection should hold."""
        row = await self._db.fetchone("SELECT COUNT(*) FROM doc_chunks")
        assert row is not None  # an aggregate without GROUP BY always returns one row
        return int(row[0])

    async def sample_chunks(self, n: int) -> list[ChunkRow]:
        """Up to ``n`` chunks picked at random (all projects), with their file (``ChunkRow.file``)."""
        rows = await self._db.fetchall("SELECT id FROM doc_chunks ORDER BY random() LIMIT ?", [int(n)])
        return list((await self.chunks([r[0] for r in rows])).values())

    async def count_chunks_in(self, project: str, collection: str) -> int:
        """Number of chunk rows of one (project, collection)."""
        row = await self._db.fetchone(
            "SELECT COUNT(*) FROM doc_chunks WHERE doc_id IN (SELECT id FROM doc_files WHERE project=? AND collection=?)",
            [project, collection],
        )
        assert row is not None  # an aggregate without GROUP BY always returns one row
        return int(row[0])

    async def count(self, project: str | None = None, collection: str | None = None) -> tuple[int, int]:
        """(files, chunks) registered, optionally for one project and/or collection."""
        where, params = [], []
        if project is not None:
            where.append("project=?")
            params.append(project)
        if collection is not None:
            where.append("collection=?")
            params.append(collection)
        w = (" WHERE " + " AND ".join(where)) if where else ""
        # Chunks counted from their rows: a file row's chunk_ids may be unreadable JSON.
        row = await self._db.fetchone(
            f"SELECT COUNT(*), (SELECT COUNT(*) FROM doc_chunks WHERE doc_id IN (SELECT id FROM doc_files{w}))"
            f" FROM doc_files{w}", [*params, *params]
        )
        assert row is not None  # an aggregate without GROUP BY always returns one row
        files, chunks = row
        return int(files), int(chunks)

    # ------------------------------------------------------------------ writes
    async def replace_file(self, doc: DocFile, chunks: Sequence[ChunkRow]) -> DocFile:
        """Insert or replace ``doc`` (by project, collection, abs_path) with exactly ``chunks``.

        One transaction: the old chunk rows go, the new ones come, or nothing changes.
        ``doc.chunk_ids`` is set from ``chunks``; returns ``doc`` with its row id.
        """
        doc.chunk_ids = [c.id for c in chunks]
        async with self._db.transaction() as tx:
            row = await tx.fetchone(
                "SELECT id FROM doc_files WHERE project=? AND collection=? AND abs_path=?",
                [doc.project, doc.collection, doc.abs_path],
            )
            values = [doc.path, doc.size, doc.mtime, doc.content_hash, doc.format,
                      json.dumps(doc.chunk_ids), doc.embedding_model, doc.indexed_by, doc.indexed_at,
                      doc.keyword_scheme]
            if row is None:
                cur = await tx.execute(
                    "INSERT INTO doc_files (project, collection, abs_path, path, size, mtime, content_hash, format,"
                    " chunk_ids, embedding_model, indexed_by, indexed_at, keyword_scheme)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [doc.project, doc.collection, doc.abs_path, *values],
                )
                assert cur.lastrowid is not None  # set by every successful INSERT
                doc.id = cur.lastrowid
            else:
                doc.id = row[0]
                await tx.execute("DELETE FROM doc_chunks WHERE doc_id=?", [doc.id])
                await tx.execute(
                    "UPDATE doc_files SET path=?, size=?, mtime=?, content_hash=?, format=?, chunk_ids=?,"
                    " embedding_model=?, indexed_by=?, indexed_at=?, keyword_scheme=? WHERE id=?",
                    [*values, doc.id],
                )
            await tx.executemany(
                "INSERT INTO doc_chunks (id, doc_id, seq, heading, symbol, start_line, end_line, page, text)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                [(c.id, doc.id, c.seq, c.heading, c.symbol, c.start_line, c.end_line, c.page, c.text)
                 for c in chunks],
            )
        return doc

    async def set_keyword_scheme(self, doc: DocFile, keyword_scheme: int) -> None:
        """Record that ``doc``'s points now carry the keyword weighting ``keyword_scheme``."""
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE doc_files SET keyword_scheme=? WHERE id=?", [keyword_scheme, doc.id])
        doc.keyword_scheme = keyword_scheme

    async def set_index_version(self, doc: DocFile, embedding_model: str, keyword_scheme: int) -> None:
        """Record that ``doc``'s points were all written again with ``embedding_model`` and ``keyword_scheme``."""
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE doc_files SET embedding_model=?, keyword_scheme=? WHERE id=?",
                             [embedding_model, keyword_scheme, doc.id])
        doc.embedding_model, doc.keyword_scheme = embedding_model, keyword_scheme

    async def touch_file(self, doc: DocFile, *, size: int, mtime: float, path: str) -> None:
        """Record a new size / mtime / cited path for a file whose content did not change."""
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE doc_files SET size=?, mtime=?, path=? WHERE id=?", [size, mtime, path, doc.id])
        doc.size, doc.mtime, doc.path = size, mtime, path

    async def remove_files(self, docs: Sequence[DocFile]) -> None:
        """Delete files and their chunk rows in one transaction (the caller drops the points)."""
        if not docs:
            return
        async with self._db.transaction() as tx:
            for i in range(0, len(docs), 500):
                part = [d.id for d in docs[i : i + 500]]
                await tx.execute(f"DELETE FROM doc_chunks WHERE doc_id IN ({_marks(len(part))})", part)
                await tx.execute(f"DELETE FROM doc_files WHERE id IN ({_marks(len(part))})", part)
