"""Building the HNSW index of a Qdrant Edge shard in a child process.

``EdgeShard.optimize()`` (merge segments, build HNSW) holds the GIL for its whole run
(minutes at 100k points), so it never runs in the serving process.
``EdgeVectorIndex.build_index`` (``edge_swap``) copies the shard folder (writes paused,
reads go on), and this module's child (which first makes the payload indexes if the
shard has none yet), started as
``python -m memvault.storage.vectors.edge_build <folder> --dim D --indexing-threshold-kb N``,
optimizes the copy with a low CPU priority and one indexing thread (the other core keeps
serving), flushes and closes it, and writes ``built.json`` (points, indexed vectors,
segments, seconds) beside the shard. The serving process then swaps the copy in.

The child only ever touches the copy: killing it at any moment leaves the serving shard
as it was (a half-built copy is deleted by the parent, or at the next open).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from .base import DENSE, FLOAT_FIELDS, KEYWORD_FIELDS, KEYWORDS, PREFIX_FIELDS

BUILT_FILE = "built.json"
"""Written beside the copy's ``shard`` folder by a child that finished (JSON: points, indexed, segments, seconds)."""

HNSW_M = 16
HNSW_EF_CONSTRUCT = 100
FULL_SCAN_THRESHOLD_KB = 10_000
"""Qdrant's default: a filtered search whose filter matches fewer points than this many KB of
vectors (~6.5k 384-dim points) is answered exactly through the payload indexes, not HNSW."""

log = logging.getLogger(__name__)


SEARCH_THREADS = 1
"""Threads one search of a shard runs on (``EdgeConfig.max_search_threads``). The engine's
default, one per core, hands each search to a pool of threads and waits for them: with the
one or few segments of a memvault shard that buys nothing, and on two busy cores the hand-off
and the wake-ups cost a good part of an exact search of 10,000 points (recall runs two at
once, and the runtime's two engine slots already let two calls search side by side)."""


def edge_config(dim: int, *, cold_vectors: bool = False, **extra: Any) -> qe.EdgeConfig:
    """memvault's shard configuration: dense vectors of ``dim`` (cosine) and IDF keyword
    vectors, searched on ``SEARCH_THREADS`` threads; ``cold_vectors``: dense vectors mapped
    without being read in at load (``Memory.Cold``; for a shard created on tmpfs, where
    reading a hole allocates it; a shard keeps the placement it was created with, None
    leaves it as it is); ``extra``: more EdgeConfig arguments. The WAL is left on (never
    pass ``wal_enabled=False``: nothing survives a kill then)."""
    extra.setdefault("max_search_threads", SEARCH_THREADS)
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine,
                                            memory=qe.Memory.Cold if cold_vectors else None)},
        sparse_vectors={KEYWORDS: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        **extra,
    )


def payload_index_ops(have: set[str]) -> list[qe.UpdateOperation]:
    """The operations creating memvault's payload indexes (``KEYWORD_FIELDS`` keyword,
    ``FLOAT_FIELDS`` float, ``PREFIX_FIELDS`` keyword with prefix matching) missing from ``have``."""
    # qe.PayloadSchemaParams is a stub-only alias (qdrant_edge's .pyi); a local annotation is never evaluated.
    wanted: list[tuple[str, qe.PayloadSchemaType | qe.PayloadSchemaParams]] = [
        (f, qe.PayloadSchemaType.Keyword) for f in KEYWORD_FIELDS
    ]
    wanted += [(f, qe.PayloadSchemaType.Float) for f in FLOAT_FIELDS]
    wanted += [(f, qe.KeywordIndexParams(prefix=True)) for f in PREFIX_FIELDS]
    return [qe.UpdateOperation.create_field_index(f, schema) for f, schema in wanted if f not in have]


def build(folder: Path, dim: int, indexing_threshold_kb: int,
          full_scan_threshold_kb: int = FULL_SCAN_THRESHOLD_KB) -> dict:
    """Optimize the shard in ``folder / "shard"`` (merge segments, build HNSW on every segment
    above ``indexing_threshold_kb`` KB of vectors), flush, close, write ``folder / BUILT_FILE``.
    ``full_scan_threshold_kb``: filtered searches matching fewer points than this many KB of
    vectors are answered exactly through the payload indexes (Qdrant's ``full_scan_threshold``).

    Returns what it wrote. Raises whatever Qdrant Edge raises (the copy is then unusable).
    """
    t0 = time.perf_counter()
    config = edge_config(
        dim,
        hnsw_config=qe.HnswIndexConfig(m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT,
                                       full_scan_threshold=max(1, full_scan_threshold_kb), max_indexing_threads=1),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=max(1, indexing_threshold_kb)),
        max_search_threads=1,
    )
    shard = qe.EdgeShard.load(str(folder / "shard"), config)
    try:
        for op in payload_index_ops(set(shard.info().payload_schema)):  # an HNSW shard always has them
            shard.update(op)
        shard.optimize()
        info = shard.info()
        shard.flush()
    finally:
        shard.close()
    out = {"points": info.points_count, "indexed": info.indexed_vectors_count,
           "segments": info.segments_count, "seconds": round(time.perf_counter() - t0, 3)}
    tmp = folder / (BUILT_FILE + ".tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    os.replace(tmp, folder / BUILT_FILE)
    return out


def _die_with_parent(parent: int) -> None:
    """In the child (Linux): be killed when the thread that started it ends (the serving
    process exiting or killed), so that no build outlives its server; exit at once if the
    parent ``parent`` (a pid) is already gone. Set here rather than between fork and exec,
    where calling into libc is unsafe in a process with threads."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def start_child(folder: Path, dim: int, indexing_threshold_kb: int,
                full_scan_threshold_kb: int = FULL_SCAN_THRESHOLD_KB) -> subprocess.Popen:
    """Start the child that runs ``build`` on ``folder`` (its stderr goes to ``folder/build.log``).
    Call it from the thread that waits for the child: on Linux the child dies with that thread."""
    err = open(folder / "build.log", "wb")  # noqa: SIM115 - handed to the child, closed right after
    try:
        return subprocess.Popen(
            [sys.executable, "-m", __name__, str(folder), "--dim", str(dim),
             "--indexing-threshold-kb", str(indexing_threshold_kb),
             "--full-scan-threshold-kb", str(full_scan_threshold_kb), "--parent-pid", str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, close_fds=True,
        )
    finally:
        err.close()


def read_built(folder: Path) -> dict | None:
    """What a finished child wrote (None: it did not finish)."""
    try:
        data = json.loads((folder / BUILT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def main(argv: list[str] | None = None) -> int:
    """Child entry point: lower its priority, build, exit 0 (1 on a failure, logged to stderr)."""
    p = argparse.ArgumentParser(prog="python -m memvault.storage.vectors.edge_build")
    p.add_argument("folder", type=Path)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--indexing-threshold-kb", type=int, required=True)
    p.add_argument("--full-scan-threshold-kb", type=int, default=FULL_SCAN_THRESHOLD_KB)
    p.add_argument("--parent-pid", type=int, default=None)
    args = p.parse_args(argv)
    if args.parent_pid is not None:
        _die_with_parent(args.parent_pid)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    if hasattr(os, "nice"):
        os.nice(10)
    try:
        out = build(args.folder, args.dim, args.indexing_threshold_kb, args.full_scan_threshold_kb)
    except BaseException as exc:  # a Rust panic is a BaseException
        log.error("index build of %s failed: %s", args.folder, exc)
        return 1
    log.info("index build of %s done: %s", args.folder, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
