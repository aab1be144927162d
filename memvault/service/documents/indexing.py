"""Indexing documents: ``index_docs`` (incremental).

Indexing: paths are checked against the allowed roots (``ingest.pathguard``), walked
(``ingest.discovery``: .gitignore, default ignores, no binaries, no symlink escape), read
and chunked along headings / definitions / pages within the model's token window
(``ingest.readers``, ``ingest.chunking``, token counts from the embedder's tokenizer).
A file indexed with the same model and keyword weighting (``DOC_KEYWORD_SCHEME``) whose
size and mtime match the registry is unchanged without being read; else its bytes are
hashed and only a new hash (or a file indexed with another model or weighting) is
re-chunked and re-embedded. Chunks of several files are gathered into a batch
(``settings.documents.docs_batch_chunks``), embedded in short model runs, then committed
file by file; reading the next batch and storing the last run beside the model's runs
(``_index_files``). Every path named in the call that is not indexed is in the reply's
``skipped``, with its reason.

Stopping: a cancellation (SIGTERM to the owner, the client's cancel) lands between model
runs without waiting for the one in progress; each file's commit is shielded, so a file
is whole or absent, and the next run resumes with the files not yet committed.

Crash safety, per file: the new points are upserted under fresh ids, then one SQLite
transaction swaps the file's chunk rows, then the old points are deleted. A search hit
counts only when its chunk row exists, so a file is seen whole in its old or its new
version, never half; points left by a crash are orphans, invisible, and deleted at the
start of the next run. Registered chunks whose points are gone (a lost or rebuilt index)
are embedded again from the chunk text the registry stores (``documents.points``), by the
next run and by the start-up check (``index_health``); no file is read for that.

Vectors: the ``docs`` collection (``documents.collection``). Documents belong to a project (never read by another project); ``project == ""`` is global
and read by every project. Within a project they are shared by its users on this server,
except those indexed for one user alone (``owner``: ``documents.owner``), whose registry key
names that user.

Searching lives in ``documents.search``; the tools' result models in ``documents.models``.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import logging
import os
import re
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread
import numpy as np

from memvault.policy.keywords import DOC_KEYWORD_SCHEME
from memvault.service import validation as v
from memvault.service.documents.collection import (
    DOCS_COLLECTION,
    chunk_sparse,
    doc_payload,
    embed_text,
    ensure_docs_collection,
)
from memvault.service.documents.models import IndexDocsResult, SkippedPath
from memvault.service.documents.owner import owned_key
from memvault.service.documents.points import reweigh_stale, sync_points
from memvault.service.errors import InvalidArgument
from memvault.service.memory.models import Scope
from memvault.service.runtime import Runtime
from memvault.service.secret_scan import find_secret, find_secret_blocks
from memvault.storage.docs import ChunkRow, DocFile, DocStore
from memvault.storage.vectors.base import Point, SparseVector

if sys.version_info < (3, 11):  # anyio's dependency on 3.10
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from memvault.embedding.embedder import Embedder
    from memvault.ingest.chunking import Chunk
    from memvault.ingest.discovery import DiscoveredFile, Skipped

log = logging.getLogger(__name__)

DEFAULT_COLLECTION = "default"
"""Document collection used when the caller names none."""
HEADING_RESERVE_TOKENS = 32
"""Tokens of the model window kept for the heading line put before each chunk's text."""
MAX_PATHS = 100
MAX_PATH_CHARS = 4_096
MAX_PREFIX_CHARS = 1_000
MAX_SKIPPED = 100
"""Entries of ``IndexDocsResult.skipped`` at most (``skipped_total`` counts them all)."""


Progress = Callable[[int, int, int], None]
"""progress(files_done, files_total, chunks_embedded), called as indexing advances."""


# ------------------------------------------------------------------------- checks


def check_path_prefix(prefix: str | None) -> str | None:
    """None or a path prefix without control characters (``"docs/"``)."""
    if prefix is None or prefix == "":
        return None
    if len(prefix) > MAX_PREFIX_CHARS or v.has_control_chars(prefix):
        raise InvalidArgument(f"path_prefix is too long or has control characters; at most {MAX_PREFIX_CHARS} printable characters")
    return prefix


# ------------------------------------------------------------------------- writing


@dataclass
class PreparedFile:
    """A file read and chunked, waiting for its embeddings (``prepare_batch``).

    doc: its registry row to be (``doc.chunk_ids`` set on commit); chunks: in order, with
    fresh UUIDs; old: the row it replaces, if any (its points are deleted after commit).
    """

    doc: DocFile
    chunks: list[ChunkRow]
    old: DocFile | None = None


def prepare_chunks(chunks: Sequence[Chunk]) -> list[ChunkRow]:
    """Registry rows with fresh UUIDs for ``chunks`` (as ``chunk_document`` returns them)."""
    return [
        ChunkRow(id=str(uuid.uuid4()), seq=i, heading=c.heading, symbol=c.symbol, start_line=c.start_line,
                 end_line=c.end_line, page=c.page, text=c.text)
        for i, c in enumerate(chunks)
    ]


FIRST_BATCH_CHUNKS = 128
"""Chunks of the first batch at most (later ones: ``docs_batch_chunks``): the model waits for
the first batch's files to be read and chunked with nothing to embed, so it is kept short,
and the larger batches after it (fewer padded tokens) are read while the model runs."""

BATCHES_AHEAD = 1
"""Batches ``index_docs`` prepares ahead of the one being embedded, and embedded batches it
keeps waiting to be stored: each is ``docs_batch_chunks`` chunks of text (a few MB at most),
so memory stays that of the model runs."""


@dataclass
class PreparedBatch:
    """Files of one batch on their way to the index: what the model embeds (``texts``, one
    per chunk in file order, grouped into ``runs``, lists of indices into ``texts``), their
    keyword vectors, then ``dense``, float32 (len(texts), dim), once embedded."""

    files: list[PreparedFile]
    texts: list[str]
    sparse: list[SparseVector]
    runs: list[list[int]]
    dense: np.ndarray | None = None


def prepare_batch(emb: Embedder, files: Sequence[PreparedFile]) -> PreparedBatch:
    """Blocking (worker thread; touches no store): every chunk's embedded text and keyword
    vector, and the model runs to embed them in (``Embedder.passage_runs``: tokenises each)."""
    texts = [embed_text(c) for f in files for c in f.chunks]
    sparse = [chunk_sparse(f.doc.path, c) for f in files for c in f.chunks]
    return PreparedBatch(list(files), texts, sparse, emb.passage_runs(texts))


async def embed_batch(rt: Runtime, emb: Embedder, batch: PreparedBatch,
                      on_run: Callable[[int], None] | None = None) -> None:
    """Embed ``batch`` one short model run at a time (each its own worker-thread call in one
    of the engine's slots): a cancellation lands between runs without waiting for the one in
    progress. Sets ``batch.dense``; ``on_run(n)`` after each run with the chunks it embedded."""
    out = np.empty((len(batch.texts), emb.dim), dtype=np.float32)
    for run in batch.runs:
        out[run] = await rt.run_pure(emb.embed_passages, [batch.texts[i] for i in run])
        if on_run is not None:
            on_run(len(run))
    batch.dense = out


async def store_batch(rt: Runtime, store: DocStore, batch: PreparedBatch, *,
                      limiter: anyio.CapacityLimiter | None = None,
                      on_file: Callable[[PreparedFile], None] | None = None) -> None:
    """Upsert the points of an embedded ``batch``, then commit it file by file.

    Per file: one SQLite transaction swaps its chunk rows; its old points go after the
    commit; both shielded from cancellation (a stop waits for that short step, so a file
    is never left registered without its old points deleted). A cancellation lands between
    two files; the files not committed leave their points as orphans (deleted by the next run). ``limiter``: the
    thread slots of the worker-thread calls (``Runtime.run_sync``); ``on_file(f)`` after
    each file is committed. Raises NotReady.
    """
    _, vectors = await rt.ready()
    if batch.texts:
        assert batch.dense is not None, "store_batch before embed_batch"
        points, i = [], 0
        for f in batch.files:
            payload = doc_payload(f.doc)
            for c in f.chunks:
                points.append(Point(id=c.id, dense=batch.dense[i], payload=payload, sparse=batch.sparse[i]))
                i += 1
        await rt.run_sync(vectors.upsert, DOCS_COLLECTION, points, limiter=limiter)
    for f in batch.files:
        await anyio.lowlevel.checkpoint()  # a stop lands between two files' commits, not after the batch's last
        with anyio.CancelScope(shield=True):
            await store.replace_file(f.doc, f.chunks)
            if f.old is not None and f.old.chunk_ids:
                await rt.run_sync(vectors.delete, DOCS_COLLECTION, f.old.chunk_ids, limiter=limiter)
        if on_file is not None:
            on_file(f)


async def remove_documents(rt: Runtime, store: DocStore, docs: Sequence[DocFile]) -> None:
    """Drop ``docs`` from the registry (one transaction), then their points."""
    if not docs:
        return
    _, vectors = await rt.ready()
    await store.remove_files(docs)
    ids = [i for d in docs for i in d.chunk_ids]
    if ids:
        await rt.run_sync(vectors.delete, DOCS_COLLECTION, ids)


def _cite(path: Path, cite_bases: Sequence[Path]) -> str:
    for base in cite_bases:
        if path.is_relative_to(base):
            rel = path.relative_to(base).as_posix()
            return rel or path.name
    return path.as_posix()


def _read_and_chunk(path: Path, cite: str, count_tokens: Callable[[str], int], budget: int,
                    known_hash: str | None = None, max_bytes: int = 1 << 62
                    ) -> tuple[str, str | None, list[Chunk], list[str]]:
    """(sha256 hex, format, chunks, withheld) of one file, read once; blocking (worker thread).

    Chunks that hold a secret are left out (``withhold_secrets``); ``withheld`` says which
    lines and why, for the reply. When the bytes hash to ``known_hash`` (the file is
    unchanged), returns (hash, None, [], []) without parsing or chunking. Raises OSError
    when the file is no longer a regular file or grew past ``max_bytes``
    (``read_regular_file``), UnreadableDocument when its format cannot be read.
    """
    from memvault.ingest.chunking import chunk_document  # the readers and chunkers: imported when indexing
    from memvault.ingest.discovery import read_regular_file
    from memvault.ingest.readers import read_document

    data = read_regular_file(path, max_bytes)
    digest = hashlib.sha256(data).hexdigest()
    if digest == known_hash:
        return digest, None, [], []
    doc = read_document(path, data)
    chunks = chunk_document(doc, cite, count_tokens=count_tokens, max_tokens=budget)
    kept, withheld = withhold_secrets(doc.text, chunks)
    if withheld:
        log.warning("%s: %d chunk(s) hold a secret and were not indexed (%s)", cite, len(chunks) - len(kept),
                    "; ".join(withheld))
    return digest, doc.format, kept, [f"{cite}: {w}" for w in withheld]


def withhold_secrets(text: str, chunks: Sequence[Chunk]) -> tuple[list[Chunk], list[str]]:
    """The chunks of a document that may be indexed, and what was left out and why.

    ``text``: the document's text (``Document.text``; chunk lines index its lines);
    ``chunks``: its chunks. Never index credentials: a chunk is left out when it overlaps
    a multi-line secret block found on the whole text (a private key split across chunks,
    indented, in a list or a string literal: ``find_secret_blocks``), or when its whole
    lines or its heading path hold a secret (``find_secret``; whole lines, so that a
    token on a long line cut between two chunks is still seen). The rest of the file
    stays searchable. Returns (kept chunks in order, ["lines 12-61: a private key block",
    ...] with merged ranges). Linear in the text: each distinct line range and heading is
    checked once.
    """
    lines = text.split("\n")
    starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]  # offset of each line

    def line_of(offset: int) -> int:  # 1-based line holding character ``offset``
        return bisect.bisect_right(starts, offset)

    # Merged, sorted, non-overlapping: the last block starting at or before a chunk's end
    # is the only one that can overlap it.
    blocks = [(line_of(b.start), line_of(max(b.start, b.end - 1)), b.kind) for b in find_secret_blocks(text)]
    block_starts = [lo for lo, _, _ in blocks]
    checked: dict[object, str | None] = {}

    def secret_in(key: object, piece: str) -> str | None:
        if key not in checked:
            hit = find_secret(piece)
            checked[key] = hit.kind if hit is not None else None
        return checked[key]

    kept: list[Chunk] = []
    dropped: list[tuple[int, int, str]] = []
    for c in chunks:
        why = None
        at = bisect.bisect_right(block_starts, c.end_line) - 1
        if at >= 0 and blocks[at][1] >= c.start_line:
            why = blocks[at][2]
        if why is None:
            why = secret_in((c.start_line, c.end_line), "\n".join(lines[c.start_line - 1 : c.end_line]))
        if why is None and c.heading:
            why = secret_in(c.heading, c.heading)
        if why is None:
            kept.append(c)
        else:
            dropped.append((c.start_line, c.end_line, why))
    merged: list[tuple[int, int, str]] = []
    for lo, hi, why in dropped:
        if merged and lo <= merged[-1][1] + 1 and merged[-1][2] == why:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]), why)
        else:
            merged.append((lo, hi, why))
    what = {"private_key": "a private key block"}
    return kept, [f"lines {lo}-{hi}: {what.get(why, why.replace('_', ' '))}" for lo, hi, why in merged]


@dataclass
class _Run:
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    embedded: int = 0
    failed: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)


#: Kinds of skip worth naming for a file found under a named folder (the rest, binary,
#: ignored, hidden files and virtualenvs, are what folders hold, and are only counted).
_NOTABLE_SKIPS = frozenset({"not_a_regular_file", "too_large", "symlink_loop", "broken_symlink", "symlink_outside",
                            "unreadable"})


def _skipped_paths(skips: Sequence[Skipped], found: Sequence[DiscoveredFile], roots: Sequence[Path],
                   bases: Sequence[Path]) -> list[SkippedPath]:
    """The reply's ``skipped`` entries: every named path left out, every notable skip under a named
    folder, and each named folder under which nothing at all could be indexed (with what was there)."""
    out = [SkippedPath(path=_cite(s.path, bases), kind=s.kind, reason=s.reason)
           for s in skips if s.named or s.kind in _NOTABLE_SKIPS]
    for root in dict.fromkeys(roots):
        if not root.is_dir() or any(f.path == root or f.path.is_relative_to(root) for f in found):
            continue
        counts: dict[str, int] = {}
        for s in skips:
            if s.root == root and not s.named:
                counts[s.kind] = counts.get(s.kind, 0) + 1
        what = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        reason = (f"no file to index under this folder ({what})" if what else "an empty folder")
        out.append(SkippedPath(path=_cite(root, bases) if root not in bases else str(root), kind="nothing_to_index",
                               reason=reason))
    return out


_GLOB = re.compile(r"[*?\[]")


def _local_path(p: str) -> str:
    """A ``file://`` URI (as MCP roots are given) as the local path it names; any other URL
    is refused (InvalidArgument); a plain path is returned unchanged."""
    url = urllib.parse.urlsplit(p)
    if url.scheme == "file" and url.netloc in ("", "localhost"):
        return urllib.request.url2pathname(url.path)
    if url.scheme and url.netloc:
        raise InvalidArgument(f"{v.shown(p)} is a URL; index_docs reads local folders and files (a path, or a "
                              "file:// URI)")
    return p


def _resolve_paths(
    paths: Sequence[str | Path], allowed_roots: Sequence[Path], cite_bases: Sequence[Path]
) -> tuple[list[Path], list[Path]]:
    """The resolved folders/files to index and the resolved citation bases (blocking: touches the disk).

    A path that is a dangling symlink or a symlink loop is kept as the link itself (not
    resolved), so that discovery reports it with its reason.
    Raises InvalidArgument when a path is relative with no root to take it from, resolves
    outside every allowed root (naming every such path), or does not exist (naming each).
    """
    from memvault.ingest.pathguard import PathNotAllowed, check_allowed

    allowed = [Path(os.path.expanduser(r)).resolve() for r in allowed_roots]
    roots: list[Path] = []
    missing: list[str] = []
    refused: list[str] = []
    for p in paths:
        raw = Path(os.path.expanduser(_local_path(str(p))))
        if not raw.is_absolute():
            if not allowed:
                raise InvalidArgument(f"{v.shown_path(p)} is a relative path and there is no root to take it from; give an absolute path")
            raw = allowed[0] / raw
        try:
            resolved = check_allowed(raw, allowed)
        except PathNotAllowed as exc:
            refused.append(str(exc) if v.shown_path(p) == str(p) else f"{v.shown_path(p)} is outside the allowed directories")
            continue
        if not resolved.exists() and os.path.lexists(raw):  # a dangling link or a loop: discovery says which
            roots.append(Path(os.path.abspath(raw)))
            continue
        if not resolved.exists():
            if _GLOB.search(str(p)):
                raise InvalidArgument(f"{v.shown_path(p)} does not exist, and index_docs takes folders or files, not patterns: give "
                                      "the folder (every file under it is read, .gitignore respected)")
            missing.append(v.shown_path(p) if str(p) == str(resolved) else f"{v.shown_path(p)} (resolved to {v.shown_path(resolved)})")
        roots.append(resolved)
    if refused:
        raise InvalidArgument(f"refused, nothing indexed: {'; '.join(refused)}. index_docs reads only inside the "
                              "client's workspace roots (a client without roots: its project folder) and the folders "
                              "in MEMVAULT_DOCS_ALLOWED_DIRS.")
    if missing:
        where = f"; relative paths are taken from {allowed[0]}" if allowed else ""
        raise InvalidArgument(
            f"nothing indexed: {'; '.join(missing)} does not exist{where}. Give folders or files that exist "
            "(to drop what was indexed from a folder that is gone, index the folder that held it)."
        )
    return roots, [Path(b).resolve() for b in cite_bases]


async def index_docs(
    rt: Runtime,
    scope: Scope,
    paths: Sequence[str | Path],
    collection: str | None = None,
    allowed_roots: Sequence[Path] = (),
    *,
    cite_bases: Sequence[Path] = (),
    progress: Progress | None = None,
    owner: str | None = None,
) -> IndexDocsResult:
    """Index ``paths`` (folders or files) into ``collection`` of ``scope.project``, incrementally.

    owner: the user the documents belong to alone (``documents.owner.owned_key``); None: shared
        by every user of the project.
    allowed_roots: every path must resolve inside one of them (symlinks followed, ``..``
        collapsed), else InvalidArgument before anything is read. Relative paths are taken
        relative to the first allowed root.
    cite_bases: files under one of these are cited relative to it; others by absolute path.
    progress: optional callback, see ``Progress``.
    Files found under a given path are added, re-chunked when their content changed, or
    left alone; registered files under a given path that are no longer found are removed.
    Raises InvalidArgument on bad input, NotReady when the model could not load.
    """
    from memvault.ingest.discovery import discover

    t0 = time.perf_counter()
    s = rt.settings
    name = v.check_collection(collection) or DEFAULT_COLLECTION
    if not paths:
        raise InvalidArgument("paths is empty; give at least one folder or file to index")
    if len(paths) > MAX_PATHS:
        raise InvalidArgument(f"paths has {len(paths)} entries; at most {MAX_PATHS} per call")
    for p in paths:
        if len(str(p)) > MAX_PATH_CHARS:
            raise InvalidArgument(f"path {v.shown(str(p))} has {len(str(p)):,} characters; a path is at most "
                                  f"{MAX_PATH_CHARS}")
        if v.has_control_chars(str(p)):
            bad = next(c for c in str(p) if v.has_control_chars(c))
            what = "a NUL byte (U+0000)" if bad == "\0" else f"a control character (U+{ord(bad):04X})"
            raise InvalidArgument(f"path {v.shown(str(p))} holds {what}; give a path of printable characters")
    # Resolving follows symlinks (file system calls): done in a worker thread.
    roots, bases = await anyio.to_thread.run_sync(_resolve_paths, paths, allowed_roots, cite_bases)
    emb, _ = await rt.started()  # after start-up's check and rebuild of the index
    budget = max(16, emb.max_tokens - HEADING_RESERVE_TOKENS)
    project = scope.project if owner is None else owned_key(scope.project, owner)
    run = _Run()
    async with rt.docs_lock:
        await ensure_docs_collection(rt, rebuild_on_mismatch=True)
        skips: list[Skipped] = []
        found: list[DiscoveredFile] = await anyio.to_thread.run_sync(
            lambda: list(discover(roots, max_file_bytes=s.documents.docs_max_file_bytes, on_skip=skips.append)),
            abandon_on_cancel=True)  # reads nothing it keeps: a stop does not wait for the walk
        run.skipped = _skipped_paths(skips, found, roots, bases)
        async with DocStore.connect(s.db_path) as store:
            _, run.embedded = await sync_points(rt, store)  # also re-embeds chunks a lost index dropped
            await reweigh_stale(rt, store)
            registered = await store.files(project, name)
            seen = {str(f.path) for f in found}
            gone = [d for key, d in registered.items() if key not in seen
                    and any(Path(key) == r or Path(key).is_relative_to(r) for r in roots)]
            await remove_documents(rt, store, gone)
            run.removed = len(gone)

            await _index_files(rt, store, found, registered, bases=bases, emb=emb, budget=budget, project=project,
                               collection=name, scope=scope, run=run, progress=progress)
            if run.embedded:
                await rt.run_sync(emb.release_memory)  # what the model runs kept for reuse: back to the OS
            _, total = await store.count(project, name)
    seconds = time.perf_counter() - t0
    log.info("index_docs %s/%s: +%d ~%d =%d -%d, %d chunks embedded in %.1fs", scope.project or "(global)", name,
             run.added, run.changed, run.unchanged, run.removed, run.embedded, seconds)
    return IndexDocsResult(scope=scope, collection=name, added=run.added, changed=run.changed,
                           unchanged=run.unchanged, removed=run.removed, chunks_embedded=run.embedded,
                           chunks_total=total, failed=run.failed[:50], withheld=run.withheld[:50],
                           skipped=run.skipped[:MAX_SKIPPED], skipped_total=len(run.skipped),
                           seconds=round(seconds, 3))


async def _index_files(rt: Runtime, store: DocStore, found: Sequence[DiscoveredFile], registered: dict[str, DocFile],
                       *, bases: Sequence[Path], emb: Embedder, budget: int, project: str, collection: str,
                       scope: Scope, run: _Run, progress: Progress | None) -> None:
    """Index ``found`` (their registered rows in ``registered``, by absolute path) into ``collection`` of
    ``project``, counting into ``run``: three stages side by side, joined by bounded queues.

    - reading: each file not unchanged is read, hashed, chunked and checked for secrets,
      and every ``docs_batch_chunks`` chunks (across files; the first batch at most
      ``FIRST_BATCH_CHUNKS``) become a batch, prepared for the model (embedded texts,
      keyword vectors, model runs planned);
    - embedding: each batch in short model runs, one at a time, in one of the engine's
      two slots (the other stays free for recall);
    - storing: each embedded batch's points upserted, then its files committed one by one.

    So the model runs back to back while the next batch is read and the last one stored.
    Reading and storing share a thread slot of their own (``side``), never the engine's,
    and at most ``BATCHES_AHEAD`` batches wait between stages; storing runs in the
    caller's task (what interrupts a commit is raised there). A stop cancels all three:
    the model run and a read in progress are abandoned, a file's commit is finished, so
    every file is whole or absent (see ``store_batch``). Raises as the stage that failed.
    """
    from memvault.ingest.readers import UnreadableDocument

    s = rt.settings
    side = anyio.CapacityLimiter(1)
    total = len(found)
    done = 0  # files settled: unchanged, failed, or committed with their chunks
    embedded = run.embedded

    def tell() -> None:
        if progress is not None:
            progress(done, total, embedded)

    def ran(n: int) -> None:  # a model run is done: the bar moves within a batch too
        nonlocal embedded
        embedded += n
        tell()

    def committed(f: PreparedFile) -> None:
        nonlocal done
        done += 1
        if f.old is None:
            run.added += 1
        else:
            run.changed += 1
        tell()

    to_embed, embed_queue = anyio.create_memory_object_stream[PreparedBatch](BATCHES_AHEAD)
    to_store, store_queue = anyio.create_memory_object_stream[PreparedBatch](BATCHES_AHEAD)

    async def read() -> None:
        nonlocal done
        async with to_embed:
            batch: list[PreparedFile] = []
            chunks_in_batch = 0
            limit = min(FIRST_BATCH_CHUNKS, s.documents.docs_batch_chunks)
            for f in found:
                cite = _cite(f.path, bases)
                old = registered.get(str(f.path))
                # The registered row if indexed with this model and this keyword weighting
                # (None: the file is new or must be re-indexed).
                same_index = (old if old is not None and old.embedding_model == emb.model_id
                              and old.keyword_scheme == DOC_KEYWORD_SCHEME else None)
                if (same_index is not None and same_index.size == f.size and same_index.mtime == f.mtime
                        and same_index.path == cite):
                    run.unchanged += 1
                    done += 1
                    tell()
                    continue
                try:
                    # One read: hashed, and parsed and chunked only when the bytes are new.
                    digest, fmt, chunks, withheld = await rt.run_pure(
                        _read_and_chunk, f.path, cite, emb.count_tokens, budget,
                        same_index.content_hash if same_index is not None else None,
                        s.documents.docs_max_file_bytes, limiter=side)
                except (OSError, UnreadableDocument) as exc:
                    log.warning("index_docs: skipping %s: %s", f.path, exc)
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                    run.failed.append(f"{cite}: {why}")
                    run.skipped.append(SkippedPath(path=cite, kind="unreadable", reason=f"cannot be read: {why}"))
                    done += 1
                    continue
                if same_index is not None and digest == same_index.content_hash:  # touched (or moved), same bytes
                    if same_index.path != cite:
                        _, vectors = await rt.ready()
                        await rt.run_sync(vectors.set_payload, DOCS_COLLECTION, same_index.chunk_ids, {"path": cite},
                                          limiter=side)
                    await store.touch_file(same_index, size=f.size, mtime=f.mtime, path=cite)
                    run.unchanged += 1
                    done += 1
                    continue
                assert fmt is not None  # None only when the bytes matched same_index, handled just above
                run.withheld += withheld
                doc = DocFile(project=project, collection=collection, abs_path=str(f.path), path=cite, size=f.size,
                              mtime=f.mtime, content_hash=digest, format=fmt, embedding_model=emb.model_id,
                              keyword_scheme=DOC_KEYWORD_SCHEME, indexed_at=rt.clock.now(),
                              indexed_by=scope.user_id)
                batch.append(PreparedFile(doc, prepare_chunks(chunks), old))
                chunks_in_batch += len(chunks)
                if chunks_in_batch >= limit:
                    await to_embed.send(await rt.run_pure(prepare_batch, emb, batch, limiter=side))
                    batch, chunks_in_batch = [], 0
                    limit = s.documents.docs_batch_chunks
            if batch:
                await to_embed.send(await rt.run_pure(prepare_batch, emb, batch, limiter=side))

    async def embed() -> None:
        async with embed_queue, to_store:
            async for batch in embed_queue:
                await embed_batch(rt, emb, batch, ran)
                await to_store.send(batch)

    async def write() -> None:
        async with store_queue:
            async for batch in store_queue:
                await store_batch(rt, store, batch, limiter=side, on_file=committed)

    tell()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(embed)
            await write()  # in the caller's task: whatever interrupts a commit is raised where it was called
    except BaseExceptionGroup as group:  # one stage failed and the others were cancelled: its error
        raise _stage_error(group) from None
    run.embedded = embedded
    tell()


def _stage_error(group: BaseExceptionGroup) -> BaseException:
    """The first error in ``group`` that is not a cancellation (the group itself if none is)."""
    cancelled = anyio.get_cancelled_exc_class()
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            inner = _stage_error(exc)
            if inner is not exc:
                return inner
        elif not isinstance(exc, cancelled):
            return exc
    return group
