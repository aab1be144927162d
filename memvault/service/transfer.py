"""``memvault export`` / ``memvault import``: a data dir's records as versioned JSON Lines.

The format (``FORMAT``, version ``VERSION``), one JSON object per line, UTF-8:

- line 1, the header: ``{"format": "memvault-export", "version": 2, "exported_at": ISO 8601
  UTC, "memvault": version that wrote it, "embedding_model": the model configured there,
  "filters": {"user": ..., "project": ...}}``;
- then one line per record, ``{"type": ..., <fields>}``, the types and fields of
  ``storage.portable.RECORDS`` in that order (memories, memory history, tasks, task
  history, document files), each type in a fixed order, so that exporting what an import
  wrote gives the same lines. Times are unix seconds.

Versioning: a reader of version N reads files of version N and ignores fields it does
not know; a change that removes a field or changes what one means gets a new version.
Version 2 added a memory's ``visibility`` and ``agent``: an older reader would have
imported private memories as shared, so it must refuse the file. This version reads
version 1 files too: their memories are shared, writer unknown (``Field.since``,
``Field.default``).

Import never overwrites: a memory whose id the target knows (a row, or the history an
erased one leaves), a task with the same (user, project, task id) or a document file
with the same (project, collection, path) is skipped, with its history. Every record is
checked for secrets as ``remember`` and ``set_task_state`` check their input; one that
holds a secret is skipped, with its history, and reported. The file is validated whole
before anything is written, and everything is written in one transaction. Imported
active memories are left ``pending`` for the vector index, which takes them at the next
start (``indexing.settle_pending``); documents are registered without chunks and are
read again by the next index run over their folder.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from memvault import __version__
from memvault.clock import to_iso
from memvault.config import Settings
from memvault.policy.keywords import DOC_KEYWORD_SCHEME
from memvault.policy.secrets import SecretFinding, find_secret
from memvault.service.datadir import prepare_data_dir
from memvault.service.documents.owner import owned_key, split_key
from memvault.service.errors import InvalidArgument, StoreUnavailable
from memvault.service.failures import open_failure
from memvault.service.scope.project import canonical_project
from memvault.storage import portable as p
from memvault.storage.facts import FactStore
from memvault.storage.migrations import LATEST_VERSION

FORMAT = "memvault-export"
VERSION = 2
READS = (1, 2)
"""The format versions this memvault imports."""
NOT_INDEXED = "(imported; not indexed yet)"
"""``doc_files.embedding_model`` of an imported document: no model matches, so the next index run reads it."""
SHOWN = 5
"""Skipped identities a summary names per record type."""


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _readable_db(settings: Settings) -> None:
    """Raise StoreUnavailable unless the data dir holds a database this version can read."""
    db = settings.db_path
    if not db.is_file():
        raise StoreUnavailable(f"there is no memvault database at {db}; check --data-dir (or MEMVAULT_DATA_DIR)")
    try:
        version = p.schema_version(db)
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read {db}: {exc}") from exc
    if version > LATEST_VERSION:
        raise StoreUnavailable(f"{db} was written by a newer memvault (database schema {version}); this version "
                               f"reads schema {LATEST_VERSION} at most. Export with the memvault that wrote it.")


def export_lines(settings: Settings, now: float, *, user: str | None = None,
                 project: str | None = None) -> Iterator[str]:
    """The export of ``settings``' data dir, line by line (no newline): the header, then every
    record of ``user`` and ``project`` (None: all; '' = the global scope), see the module
    docstring. ``now``: the export time (unix s). Reads a snapshot without blocking writers.
    Raises StoreUnavailable when there is no readable database.
    """
    _readable_db(settings)
    yield _line({"format": FORMAT, "version": VERSION, "exported_at": to_iso(now), "memvault": __version__,
                 "embedding_model": settings.embedding.embedding_model,
                 "filters": {"user": user, "project": project}})
    try:
        for rt, fields in p.read_records(settings.db_path, user=user, project=project):
            yield _line({"type": rt.name, **fields})
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read {settings.db_path}: {exc}") from exc


# ----------------------------------------------------------------------------- reading a file

@dataclass
class Record:
    """One record line of an export: its 1-based ``line``, type and checked fields."""

    line: int
    type: p.RecordType
    fields: dict[str, Any]

    @property
    def identity(self) -> tuple[Any, ...]:
        """The values of the type's identifying fields."""
        return tuple(self.fields[n] for n in self.type.identity)

    def shown(self) -> str:
        """How a summary names the record: a memory id, a task id, a document path."""
        f = self.fields
        if self.type is p.TASK:
            return f"{f['task_id']} (user {f['user_id']}, project {f['project'] or '(global)'})"
        if self.type is p.DOC_FILE:
            return f["abs_path"]
        return str(self.identity[0])


@dataclass
class Parsed:
    """A whole export file, checked: its header and its records in file order."""

    header: dict[str, Any]
    records: list[Record]


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json(text: str, n: int) -> dict[str, Any]:
    try:
        obj = json.loads(text, parse_constant=_no_constants)
    except ValueError as exc:
        raise InvalidArgument(f"line {n}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InvalidArgument(f"line {n}: a record is a JSON object, got {type(obj).__name__}")
    return obj


def check_header(obj: dict[str, Any]) -> None:
    """Raise InvalidArgument unless ``obj`` is the header of an export this version reads."""
    supported = f"this memvault reads format {FORMAT!r} version {' or '.join(map(str, READS))}"
    if obj.get("format") != FORMAT:
        raise InvalidArgument(f"line 1: not a memvault export (format {obj.get('format')!r}); {supported}")
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidArgument(f"line 1: version is {version!r}, not a whole number; {supported}")
    if version not in READS:
        newer = "; a newer memvault wrote it: import it with that version" if version > VERSION else ""
        raise InvalidArgument(f"line 1: export format version {version} is not supported; {supported}{newer}")


def _record(obj: dict[str, Any], n: int, version: int) -> Record:
    kind = obj.get("type")
    rt = p.BY_NAME.get(kind) if isinstance(kind, str) else None
    if rt is None:
        raise InvalidArgument(f"line {n}: type is {kind!r}, not one of {', '.join(p.BY_NAME)}")
    # A field newer than the file's version is not in it: it takes its default (ignored if given).
    obj = {**obj, **{f.name: f.default for f in rt.fields if f.since > version}}
    missing = [f.name for f in rt.fields if f.name not in obj]
    if missing:
        raise InvalidArgument(f"line {n}: {rt.name} record without {', '.join(missing)}")
    for f in rt.fields:
        problem = p.check_value(f, obj[f.name])
        if problem:
            raise InvalidArgument(f"line {n}: {rt.name} field {f.name} {problem}")
    fields = {f.name: obj[f.name] for f in rt.fields}  # unknown fields are ignored (see versioning)
    if isinstance(fields.get("project"), str):  # an export of a store that spelt one repository two ways
        project, owner = split_key(fields["project"])
        fields["project"] = canonical_project(project) if owner is None else owned_key(canonical_project(project), owner)
    if rt is p.MEMORY and not _canonical_uuid(fields["id"]):
        raise InvalidArgument(f"line {n}: memory id {fields['id'][:40]!r} is not a UUID in canonical form")
    return Record(n, rt, fields)


def _canonical_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def parse_export(lines: Iterable[str]) -> Parsed:
    """Check a whole export file (its lines, newlines allowed) and return it.

    Blank lines are ignored. Raises InvalidArgument naming the line (1-based) and what is
    wrong: not JSON, an unknown header, format or version, an unknown type, a missing
    field, a field of the wrong type, a memory / task / document given twice. Fields newer
    than the file's version take their defaults.
    """
    header: dict[str, Any] | None = None
    records: list[Record] = []
    first: dict[tuple[str, tuple[Any, ...]], int] = {}
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        obj = _json(raw, n)
        if header is None:
            if n != 1:
                raise InvalidArgument(f"line {n}: the header must be line 1")
            check_header(obj)
            header = obj
            continue
        rec = _record(obj, n, header["version"])
        if rec.type in (p.MEMORY, p.TASK, p.DOC_FILE):
            seen = first.setdefault((rec.type.name, rec.identity), n)
            if seen != n:
                raise InvalidArgument(f"line {n}: {rec.type.name} {rec.shown()} is already on line {seen}")
        records.append(rec)
    if header is None:
        raise InvalidArgument(f"the file is empty; an export starts with a {FORMAT!r} header line")
    return Parsed(header, records)


# ----------------------------------------------------------------------------- secrets

def _texts(rec: Record) -> list[str]:
    """The texts of a record checked for secrets: what ``remember`` and ``set_task_state`` check."""
    f, t = rec.fields, rec.type
    if t is p.MEMORY:
        return [f["content"], f["key"] or "", f["source"] or "", f["project"], *f["tags"]]
    if t is p.MEMORY_HISTORY:
        out = [f["reason"] or "", f["actor"] or ""]
        for snap in (f["old"], f["new"]):
            if snap:
                out += [v for k in ("content", "key", "source") if isinstance(v := snap.get(k), str)]
                out += [x for x in snap.get("tags") or [] if isinstance(x, str)]
        return out
    if t is p.TASK:
        return [f["task_id"], f["title"], f["outcome"] or "", json.dumps(f["state"], ensure_ascii=False)]
    if t is p.TASK_HISTORY:
        return [f["title"], json.dumps(f["state"], ensure_ascii=False)]
    return [f["path"], f["abs_path"]]


def find_secrets(records: Iterable[Record]) -> dict[int, SecretFinding]:
    """Blocking: the first secret of each record that holds one, by line number. Each distinct
    text is scanned once (a memory's history repeats its content)."""
    out: dict[int, SecretFinding] = {}
    seen: dict[str, SecretFinding | None] = {}

    def scan(text: str) -> SecretFinding | None:
        if text not in seen:
            seen[text] = find_secret(text)
        return seen[text]

    for rec in records:
        found = next((s for s in map(scan, _texts(rec)) if s), None)
        if found is not None:
            out[rec.line] = found
    return out


# ----------------------------------------------------------------------------- importing

@dataclass
class Counts:
    """What an import did with the records of one type."""

    imported: int = 0
    skipped_existing: int = 0
    skipped_secret: int = 0


@dataclass
class ImportSummary:
    """The outcome of an import (or of a dry run: what it would do).

    counts: per record type name; existing: per type, how the skipped-existing records
    are named (every one; a summary shows the first ``SHOWN``); secrets: (type, name,
    finding kind) of each record skipped for a secret it holds (history entries skipped
    with their memory or task are counted, not named).
    """

    dry_run: bool
    counts: dict[str, Counts] = field(default_factory=lambda: {rt.name: Counts() for rt in p.RECORDS})
    existing: dict[str, list[str]] = field(default_factory=dict)
    secrets: list[tuple[str, str, str]] = field(default_factory=list)


_PARENT = {p.MEMORY_HISTORY.name: p.MEMORY, p.TASK_HISTORY.name: p.TASK}


async def _plan(parsed: Parsed, secrets: dict[int, SecretFinding], fetch: p.Fetch | None,
                summary: ImportSummary) -> list[Record]:
    """The records to write, counting every other one in ``summary``. ``fetch``: reads the
    target (None: it holds nothing yet)."""
    known: dict[str, set[tuple[Any, ...]]] = {}
    for rt in p.RECORDS:
        known[rt.name] = await p.known_identities(fetch, rt) if fetch is not None else set()
    for child, parent_type in _PARENT.items():
        known[child] |= known[parent_type.name]
    withheld: dict[str, set[tuple[Any, ...]]] = {rt.name: set() for rt in p.RECORDS}
    write = []
    for rec in parsed.records:
        name, counts = rec.type.name, summary.counts[rec.type.name]
        parent = _PARENT.get(name)
        if rec.identity in known[name]:
            counts.skipped_existing += 1
            if parent is None:
                summary.existing.setdefault(name, []).append(rec.shown())
        elif parent is not None and rec.identity in withheld[parent.name]:
            counts.skipped_secret += 1
        elif rec.line in secrets:
            counts.skipped_secret += 1
            withheld[name].add(rec.identity)
            summary.secrets.append((name, rec.shown() if parent is None else f"{rec.shown()} (line {rec.line})",
                                    secrets[rec.line].kind))
        else:
            counts.imported += 1
            write.append(rec)
    return write


def _extra(rec: Record) -> dict[str, Any]:
    """The columns the target fills itself for ``rec``."""
    if rec.type is p.MEMORY:
        return {"index_state": "pending" if rec.fields["status"] == "active" else "indexed"}
    if rec.type is p.DOC_FILE:
        return {"chunk_ids": "[]", "embedding_model": NOT_INDEXED, "keyword_scheme": DOC_KEYWORD_SCHEME}
    return {}


def _ro_fetch(settings: Settings) -> p.Fetch | None:
    """A read-only reader of the target for a dry run (None when it has no database yet)."""
    db = settings.db_path
    if not db.is_file():
        return None
    _readable_db(settings)

    async def fetch(sql: str) -> list[Any]:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    return fetch


async def import_records(settings: Settings, parsed: Parsed, *, dry_run: bool = False) -> ImportSummary:
    """Write ``parsed`` (from ``parse_export``) into ``settings``' data dir; returns what was done.

    Records the target already knows and records holding a secret are skipped (see the
    module docstring); the rest is written in one transaction, so a failure writes
    nothing. ``dry_run``: nothing is written (no database or folder is created), the
    summary says what would be. The caller makes sure no other process serves the data
    dir meanwhile (the CLI holds the owner lock). Raises StoreUnavailable when the
    database cannot be opened.
    """
    summary = ImportSummary(dry_run=dry_run)
    secrets = await anyio.to_thread.run_sync(find_secrets, parsed.records)
    if dry_run:
        await _plan(parsed, secrets, _ro_fetch(settings), summary)
        return summary
    prepare_data_dir(settings.storage.data_dir, settings.db_path)
    try:
        facts = await FactStore.open(settings.db_path)
    except Exception as exc:
        raise StoreUnavailable(open_failure(exc, settings.storage.data_dir, settings.db_path)) from exc
    try:
        async with facts.database.transaction() as tx:
            for rec in await _plan(parsed, secrets, tx.fetchall, summary):
                await p.insert(tx, rec.type, rec.fields, _extra(rec))
    finally:
        await facts.close()
    return summary
