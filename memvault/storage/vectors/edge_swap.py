"""The HNSW index of an ``EdgeVectorIndex`` collection: built off the serving path, then swapped in.

``optimize()`` never runs in the serving process (it holds the GIL for its whole run).
``build_index`` copies the shard while writes wait (searches go on), has a child process
(``edge_build``) build HNSW on the copy, loads the copy, replays on it the writes made
meanwhile (journalled by the adapter, at most ``JOURNAL_MAX``), points the collection
record at it and deletes the old shard. ``IndexSwap`` is mixed into ``EdgeVectorIndex``:
it uses the adapter's locks, open shards and engine-error translation.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import qdrant_edge as qe

from . import edge_build
from .base import IndexState
from .edge_integrity import BUILD_PREFIX, META_FILE, SHARD_DIR, has_hnsw, record, write_record
from .edge_shard import OpenShard, is_panic

log = logging.getLogger(__name__)

JOURNAL_MAX = 50_000
"""Writes kept for replay during an index build; past this the build is given up (tried again later)."""
BUILD_POLL_S = 0.2
"""Seconds between two looks at whether the build's child has ended."""


def _tail(path: Path, chars: int = 400) -> str:
    """The end of a log file, one line ("" when unreadable)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:].strip().replace("\n", " | ")
    except OSError:
        return ""


class IndexSwap:
    """``index_state`` and ``build_index`` of ``EdgeVectorIndex`` (see the module docstring).

    The adapter sets the attributes below in its ``__init__``; ``_lock`` serialises engine
    calls, ``_writes`` (taken first) every call that changes a shard's files.
    """

    root: Path
    _lock: threading.RLock
    _writes: threading.RLock
    _open: dict[str, OpenShard]
    _closed: bool
    _building: bool  # an index build runs
    _child: subprocess.Popen | None  # its child process, once started

    if TYPE_CHECKING:
        def _get(self, name: str) -> OpenShard: ...

        def _engine(self, name: str) -> AbstractContextManager[None]: ...

    def index_state(self, collection: str) -> IndexState:
        """How much of ``collection`` its HNSW index covers (cheap: the shard's own counters)."""
        with self._lock:
            cur = self._get(collection)
            with self._engine(collection):
                points = cur.shard.info().points_count
            unindexed = max(cur.written_since, points - cur.built_points) if cur.indexed else points
            return IndexState(points, cur.indexed, min(points, unindexed), self._building)

    def build_index(self, collection: str, *, indexing_threshold_kb: int = 1,
                    full_scan_threshold_kb: int = edge_build.FULL_SCAN_THRESHOLD_KB) -> dict | None:
        """Build the HNSW index of ``collection`` in a child process, without stalling calls,
        and swap it in. Blocks until done (minutes at 100k points): call it from a thread
        of its own, never from one that serving needs.

        Steps: flush; copy the shard folder to ``index-<ns>/shard`` while writes wait (searches
        go on); the child (``edge_build``) optimizes the copy; load the copy (holds the GIL);
        then, with every call waiting, replay on it the writes made
        since the copy (kept in memory), flush it, point the collection record at it (atomic
        rename, fsynced) and close and delete the old shard. A crash before the record
        changes leaves the old shard in use and the copy a left-over (deleted at the next
        open); after, the copy holds every write. Given up (None returned, the old shard kept)
        when another build runs, the child fails or is killed, ``close``/``drop_collection``/
        ``set_aside`` come first, or more than ``JOURNAL_MAX`` writes arrive meanwhile.

        indexing_threshold_kb: segments with more vectors than this (KB) get HNSW (Qdrant's
        ``indexing_threshold``; 1 = every segment); full_scan_threshold_kb: filtered searches
        matching fewer points than this many KB of vectors go through the payload indexes,
        exactly (Qdrant's ``full_scan_threshold``). Returns the child's report (points,
        indexed, segments, seconds) plus ``copy_s``, ``load_s`` (GIL held) and ``swap_s`` (calls wait),
        and ``replayed`` (writes made during the build).
        """
        t0 = time.perf_counter()
        with self._writes:
            with self._lock:
                cur = self._get(collection)
                if self._closed or self._building:
                    return None
                with self._engine(collection):
                    cur.shard.flush()
                cur.dirty = False
                folder = self.root / collection / f"{BUILD_PREFIX}{time.time_ns()}"
                self._building = True
                cur.journal = []
            try:  # writes wait, searches go on (they do not change the shard's files)
                folder.mkdir(mode=0o700)
                shutil.copytree(cur.path, folder / SHARD_DIR)
            except BaseException:
                self._end_build(cur, folder)
                raise
        copy_s = time.perf_counter() - t0
        with self._lock:
            if self._closed or self._open.get(collection) is not cur:
                proc = None
            else:
                try:
                    proc = self._child = edge_build.start_child(folder, cur.dim, indexing_threshold_kb,
                                                                full_scan_threshold_kb)
                except BaseException:
                    self._end_build(cur, folder)
                    raise
        if proc is None:
            self._end_build(cur, folder)
            return None
        while proc.poll() is None:
            time.sleep(BUILD_POLL_S)
        built = edge_build.read_built(folder) if proc.returncode == 0 else None
        if built is None:
            log.warning("index build of vector collection %s failed (exit %s): %s", collection, proc.returncode,
                        _tail(folder / "build.log"))
            self._end_build(cur, folder)
            return None
        t1 = time.perf_counter()
        try:
            with self._engine(collection):
                new = qe.EdgeShard.load(str(folder / SHARD_DIR), edge_build.edge_config(cur.dim))
        except BaseException as exc:
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            log.warning("index build of vector collection %s: the built copy does not load (%s)", collection, exc)
            self._end_build(cur, folder)
            return None
        t2 = time.perf_counter()
        rel = f"{folder.name}/{SHARD_DIR}"
        with self._writes, self._lock:
            journal = cur.journal
            if self._closed or self._open.get(collection) is not cur or journal is None:
                new.close()
                self._end_build(cur, folder)
                return None
            try:
                with self._engine(collection):
                    for op in journal:
                        new.update(op)
                    new.flush()
                indexed = has_hnsw(folder / SHARD_DIR)
                write_record(folder.parent / META_FILE,
                             record(cur.model_id, cur.dim, rel, int(built.get("points", 0))))
            except BaseException:
                new.close()
                self._end_build(cur, folder)
                raise
            self._open[collection] = OpenShard(new, cur.dim, cur.model_id, folder / SHARD_DIR, collection, rel,
                                               indexed=indexed, built_points=int(built.get("points", 0)),
                                               windows=cur.windows)  # the same points, the journal's too
            cur.journal, self._child, self._building = None, None, False
            old = cur
        swap_s = time.perf_counter() - t2
        try:
            old.shard.close()
        except BaseException as exc:
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            log.warning("closing the replaced shard of %s: %s", collection, exc)
        shutil.rmtree(old.path if old.rel == SHARD_DIR else old.path.parent, ignore_errors=True)
        built.update(copy_s=round(copy_s, 3), load_s=round(t2 - t1, 3), swap_s=round(swap_s, 3),
                     replayed=len(journal))
        log.info("vector collection %s: HNSW index built in a child process and swapped in (%s)", collection, built)
        return built

    def _end_build(self, cur: OpenShard, folder: Path) -> None:
        """Forget a build that did not swap in, and delete its copy."""
        with self._lock:
            cur.journal, self._child, self._building = None, None, False
        shutil.rmtree(folder, ignore_errors=True)

    def _stop_build(self) -> None:
        """Kill the index build's child, if one runs (its thread then gives the build up)."""
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            child.kill()
