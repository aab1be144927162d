"""The tables an export carries, read whole in one snapshot and written back row by row.

What each record type of a ``memvault export`` holds is declared once here (``RECORDS``):
its table, its fields with their kinds, its order and what identifies a row. Reading
(``read_records``) uses a read-only connection in one read transaction, so a running
owner is never blocked (WAL) and the export is one consistent moment of the database.
Writing (``insert``) happens inside a :class:`~memvault.storage.database.Transaction`
the caller holds for the whole import. Only what recreates a row is exported: ``seq``
numbers, index states and document chunks are the target's own.

Field kinds (``Field.kind``): ``text``, ``opt_text``, ``number`` (finite float; times are
unix seconds), ``opt_number``, ``integer``, ``strings`` (a JSON array of strings, stored as
JSON text), ``object`` (a JSON object, stored as JSON text), ``opt_object``.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.policy.tasks import state_json
from memvault.storage import rows as col
from memvault.storage.database import Transaction
from memvault.storage.memories import MEMORY_STATUSES
from memvault.storage.snapshot import read_snapshot
from memvault.vocabulary import KINDS, TASK_STATUSES, VISIBILITIES

FIELD_KINDS = ("text", "opt_text", "number", "opt_number", "integer", "strings", "object", "opt_object")


@dataclass(frozen=True)
class Field:
    """One exported column: ``name`` (the column and the JSON key), ``kind`` (one of
    ``FIELD_KINDS``), ``choices`` (the allowed values of a text field; empty = any),
    ``since`` (the export format version that added it) and ``default`` (its value in a
    record of an older version, which does not hold it)."""

    name: str
    kind: str
    choices: tuple[str, ...] = ()
    since: int = 1
    default: Any = None


@dataclass(frozen=True)
class RecordType:
    """One record type of the export: ``name`` (the ``type`` value), the ``table`` it comes from,
    its ``fields``, the ``order`` of its rows, the fields that ``identify`` a row, the columns
    holding the user and the project a filter restricts (``user_column`` None: no filter by
    user)."""

    name: str
    table: str
    fields: tuple[Field, ...]
    order: str
    identity: tuple[str, ...]
    user_column: str | None = "user_id"
    project_column: str = "project"

    @property
    def names(self) -> tuple[str, ...]:
        """The field names, in column order."""
        return tuple(f.name for f in self.fields)


def _f(spec: str, choices: Sequence[str] = ()) -> tuple[Field, ...]:
    """``"a:text b:opt_number"`` -> Fields (every field of ``spec`` gets ``choices``)."""
    return tuple(Field(n, k, tuple(choices)) for n, k in (p.split(":") for p in spec.split()))


MEMORY = RecordType(
    "memory", "memories",
    _f("id:text user_id:text project:text") + _f("kind:text", KINDS)
    + _f("key:opt_text content:text tags:strings importance:number confidence:number source:opt_text "
         "created_at:number updated_at:number last_accessed_at:number access_count:integer expires_at:opt_number")
    + _f("status:text", MEMORY_STATUSES) + _f("superseded_by:opt_text content_hash:text embedding_model:text")
    # Version 2: who reads a memory and which agent wrote it (version 1: shared, writer unknown).
    + (Field("visibility", "text", VISIBILITIES, since=2, default="shared"), Field("agent", "opt_text", since=2)),
    order="user_id, project, created_at, id", identity=("id",),
)
MEMORY_HISTORY = RecordType(
    "memory_history", "memory_history",
    _f("memory_id:text user_id:text project:text action:text actor:opt_text at:number old:opt_object "
       "new:opt_object reason:opt_text"),
    order="memory_id, seq", identity=("memory_id",),
)
TASK = RecordType(
    "task", "tasks",
    _f("user_id:text project:text task_id:text title:text") + _f("status:text", TASK_STATUSES)
    + _f("version:integer state:object created_at:number updated_at:number expires_at:number ttl_days:opt_number "
         "outcome:opt_text episode_id:opt_text actor:opt_text"),
    order="user_id, project, task_id", identity=("user_id", "project", "task_id"),
)
TASK_HISTORY = RecordType(
    "task_history", "task_history",
    _f("user_id:text project:text task_id:text version:integer title:text") + _f("status:text", TASK_STATUSES)
    + _f("state:object at:number actor:opt_text"),
    order="user_id, project, task_id, version, seq", identity=("user_id", "project", "task_id"),
)
DOC_FILE = RecordType(
    "doc_file", "doc_files",
    _f("project:text collection:text abs_path:text path:text size:integer mtime:number content_hash:text "
       "format:text indexed_by:opt_text indexed_at:number"),
    order="project, collection, abs_path", identity=("project", "collection", "abs_path"),
    user_column="indexed_by",
)

RECORDS: tuple[RecordType, ...] = (MEMORY, MEMORY_HISTORY, TASK, TASK_HISTORY, DOC_FILE)
"""Every record type, in the order an export writes them."""
BY_NAME = {r.name: r for r in RECORDS}


def decode_value(f: Field, value: Any) -> Any:
    """A stored value of field ``f`` -> its export value (JSON columns decoded). Raises BadValue."""
    optional = f.kind.startswith("opt_")
    if optional and value is None:
        return None
    kind = f.kind.removeprefix("opt_")
    if kind == "text":
        got: Any = col.choice(value, f.name, f.choices) if f.choices else col.text(value, f.name)
    elif kind == "number":
        got = col.number(value, f.name)
    elif kind == "integer":
        got = col.integer(value, f.name)
    elif kind == "strings":
        got = col.json_strings(value, f.name)
    else:
        got = col.json_object(value, f.name)
    return got


def encode_value(f: Field, value: Any) -> Any:
    """An export value of field ``f`` (already checked by ``check_value``) -> what the column stores."""
    if value is None:
        return None
    if f.kind == "strings":
        return json.dumps(value, ensure_ascii=False)
    if f.kind.endswith("object"):
        return state_json(value) if f.name == "state" else json.dumps(value, ensure_ascii=False)
    if f.kind.endswith("number"):
        return float(value)
    return value


def check_value(f: Field, value: Any) -> str | None:
    """What is wrong with ``value`` as field ``f`` of an export record (None: nothing)."""
    kind = f.kind.removeprefix("opt_")
    if value is None:
        return None if f.kind.startswith("opt_") else "is null; it is required"
    if kind == "text":
        if not isinstance(value, str):
            return f"is {type(value).__name__}, not a string"
        if f.choices and value not in f.choices:
            return f"is {value[:40]!r}, not one of {', '.join(f.choices)}"
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"is {json.dumps(value)[:40]}, not a finite number"
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"is {json.dumps(value)[:40]}, not a whole number"
    elif kind == "strings":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            return "is not an array of strings"
    elif not isinstance(value, dict):
        return f"is {type(value).__name__}, not an object"
    return None


def schema_version(db_path: Path) -> int:
    """``PRAGMA user_version`` of the database at ``db_path`` (read-only). Raises sqlite3.Error."""
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as con:
        return int(con.execute("PRAGMA user_version").fetchone()[0])


def _where(rt: RecordType, user: str | None, project: str | None) -> tuple[str, list[Any]]:
    where, params = [], []
    if user is not None and rt.user_column is not None:
        where.append(f"{rt.user_column} IS ?")
        params.append(user)
    if project is not None:
        where.append(f"{rt.project_column} = ?")
        params.append(project)
    return (" WHERE " + " AND ".join(where)) if where else "", params


def read_records(db_path: Path, *, user: str | None = None, project: str | None = None
                 ) -> Iterator[tuple[RecordType, dict[str, Any]]]:
    """Every exportable row of the database at ``db_path``, as (record type, fields), in
    ``RECORDS`` order then each type's ``order``; ``user`` / ``project`` (None: all) keep the
    rows of that user (documents: indexed by that user) and that project ('' = global).

    Read-only connection, one read transaction (a consistent snapshot; writers are not
    blocked). A row holding a value memvault never writes is left out with one log line
    (``storage.rows``). Raises sqlite3.Error when the file cannot be read.
    """
    with read_snapshot(db_path) as con:
        for rt in RECORDS:
            where, params = _where(rt, user, project)
            cur = con.execute(f"SELECT {', '.join(rt.names)} FROM {rt.table}{where} ORDER BY {rt.order}", params)

            def decode(row: Sequence[Any], rt: RecordType = rt) -> dict[str, Any]:
                return {f.name: decode_value(f, v) for f, v in zip(rt.fields, row, strict=True)}

            def shown(row: Sequence[Any], rt: RecordType = rt) -> str:
                return _shown_identity(rt, row)

            for fields in col.readable(cur, decode, rt.table, shown):
                yield rt, fields


def _shown_identity(rt: RecordType, row: Sequence[Any]) -> str:
    at = {n: i for i, n in enumerate(rt.names)}
    return ", ".join(f"{n} {row[at[n]]!r}" for n in rt.identity)


Fetch = Callable[[str], Awaitable[list[Any]]]
"""Runs one SELECT without parameters on the target and returns its rows."""


async def known_identities(fetch: Fetch, rt: RecordType) -> set[tuple[Any, ...]]:
    """The identities (``rt.identity`` values) the target already holds for record type ``rt``.

    Memories: every id with a row or any history (an erased memory keeps its history
    entry, and is not brought back). Memory history: the memory ids with history.
    """
    cols = ", ".join(rt.identity)
    found = {tuple(r) for r in await fetch(f"SELECT DISTINCT {cols} FROM {rt.table}")}
    if rt is MEMORY:
        found |= {tuple(r) for r in await fetch("SELECT DISTINCT memory_id FROM memory_history")}
    return found


async def insert(tx: Transaction, rt: RecordType, fields: dict[str, Any], extra: dict[str, Any]) -> None:
    """Insert one record of type ``rt`` (checked fields) with the target's own columns ``extra``."""
    names = [*rt.names, *extra]
    values = [*(encode_value(f, fields.get(f.name)) for f in rt.fields), *extra.values()]
    await tx.execute(f"INSERT INTO {rt.table} ({', '.join(names)}) VALUES ({','.join('?' * len(names))})", values)
