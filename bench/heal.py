"""Cost of the index's self-healing: the start-up check on a sound index, and a rebuild from SQLite.

A store of ``--memories`` memories (``bench.synth`` sentences, written with ``bulk_load``)
and the repository's own Markdown (README.md and docs/, indexed with ``index_docs``) is
made once in a temp folder, on disk (``--dir`` to choose where). Then, each
``--repeats`` times, in-process with the model already loaded:

- check: a normal start's comparison of both collections with SQLite
  (``index_health.heal_index``: counts, the sample, the group counts) on the sound index,
  both collections already open;
- open docs: opening the ``docs`` collection, which start-up now does (before, the first
  search_docs did);
- reconcile: for comparison, the memories-only full id scan start-up ran before
  (``indexing.reconcile``);
- rebuild (lost): ``vectors/`` deleted, then ``heal_index`` rebuilding both collections;
- rebuild (damaged): ``wal/open-1`` of both collections truncated (the store closed
  cleanly), then opening the runtime (which sets both aside) and ``heal_index``: this
  row includes the runtime's opening.

Medians are printed as a table and written to bench/results. The machine load
(``os.getloadavg()``) is recorded. Run: ``python -m bench.heal [--memories 2000]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result
from bench.mv import bulk_load, shared_embedder
from memvault.config import Settings
from memvault.service.documents.collection import ensure_docs_collection
from memvault.service.documents.indexing import index_docs
from memvault.service.indexing import reconcile
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.service.upkeep.index_health import heal_index

REPO = Path(__file__).resolve().parents[1]


def add_args(p: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    p.add_argument("--memories", type=int, default=2000, help="memories in the store (default 2000)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each measurement (default 3; medians shown)")
    p.add_argument("--dir", type=Path, default=None, help="where to make the store (default: a temp folder)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE, help="converted model folder")


async def _runtime(data_dir: Path, model_cache: Path) -> Runtime:
    settings = Settings(data_dir=data_dir, model_cache_dir=model_cache)
    rt = await Runtime.open(settings, load_embedder=shared_embedder)
    await rt.load()  # model and index, no start-up housekeeping: each measurement runs its own
    return rt


async def _timed(data_dir: Path, model_cache: Path, what: str) -> float:
    """Open a runtime on ``data_dir``, run ``what``, close; seconds ``what`` took.

    what: 'open docs' (opening the ``docs`` collection, which start-up now does), 'check'
    (``heal_index`` with both collections already open), 'reconcile', or 'rebuild'
    (``heal_index`` as start-up runs it, opening the ``docs`` collection on the way).
    """
    rt = await _runtime(data_dir, model_cache)
    try:
        if rt.error:
            raise RuntimeError(rt.error)
        if what == "check":
            async with rt.docs_lock:
                await ensure_docs_collection(rt, rebuild_on_mismatch=False)
        t0 = time.perf_counter()
        if what == "open docs":
            async with rt.docs_lock:
                await ensure_docs_collection(rt, rebuild_on_mismatch=False)
        elif what == "reconcile":
            await reconcile(rt)
        else:
            await heal_index(rt)
        took = time.perf_counter() - t0
        if rt.error:
            raise RuntimeError(rt.error)
        return took
    finally:
        await rt.close()


def _truncate_wals(data: Path) -> None:
    for name in ("memories", "docs"):
        os.truncate(data / "vectors" / name / "shard" / "wal" / "open-1", 0)


def _drop_broken(data: Path) -> None:
    for broken in data.parent.glob(f"{data.name}/vectors.broken-*"):
        shutil.rmtree(broken)


async def run(a: argparse.Namespace) -> dict[str, Any]:
    """Make the store, measure, print the table; returns the result payload."""
    base = Path(tempfile.mkdtemp(prefix="memvault-heal-bench-", dir=a.dir))
    try:
        data = base / "d"
        rt = await _runtime(data, a.model_cache)
        try:
            t0 = time.perf_counter()
            await bulk_load(rt, synth.sentences(a.memories), progress=False)
            docs = [REPO / "README.md", REPO / "docs"]
            res = await index_docs(rt, make_scope("bench", "", "settings"), [str(p) for p in docs], None,
                                   [REPO], cite_bases=[REPO])
            fill_s = time.perf_counter() - t0
        finally:
            await rt.close()
        chunks = res.chunks_total
        rows: list[tuple[str, list[float]]] = [
            ("check, both collections open (sound index)", []), ("open the docs collection (now at start-up)", []),
            ("reconcile, memories (the check it replaces)", []), ("rebuild after vectors/ lost", []),
            ("rebuild after wal/open-1 truncated, with opening", [])]
        for _ in range(a.repeats):
            rows[0][1].append(await _timed(data, a.model_cache, "check"))
            rows[1][1].append(await _timed(data, a.model_cache, "open docs"))
            rows[2][1].append(await _timed(data, a.model_cache, "reconcile"))
            shutil.rmtree(data / "vectors")
            rows[3][1].append(await _timed(data, a.model_cache, "rebuild"))
            _truncate_wals(data)
            t0 = time.perf_counter()
            rt = await _runtime(data, a.model_cache)  # opening sets the damaged collections aside
            try:
                await heal_index(rt)
                rows[4][1].append(time.perf_counter() - t0)
            finally:
                await rt.close()
            _drop_broken(data)
        table = [(name, len(v), statistics.median(v), min(v), max(v)) for name, v in rows]
        print(f"{a.memories} memories + {chunks} document chunks ({res.added} files); fill {fill_s:.1f} s; "
              f"load {os.getloadavg()[0]:.1f}")
        print(md_table(["measurement", "runs", "median s", "min s", "max s"], table))
        return {"memories": a.memories, "chunks": chunks, "files": res.added, "fill_s": fill_s,
                "results": {name: v for name, v in rows}, "load": os.getloadavg()}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    """``python -m bench.heal``."""
    p = argparse.ArgumentParser(prog="bench.heal", description=__doc__.split("\n")[0])
    add_args(p)
    a = p.parse_args()
    payload = anyio.run(run, a)
    print(f"written to {write_result('heal', payload)}")


if __name__ == "__main__":
    main()
