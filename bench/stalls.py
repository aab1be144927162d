"""Does a call stall behind housekeeping? Recall latency idle and during each housekeeping action.

In-process, on one memvault runtime (real model, SQLite, Qdrant Edge): fills a temp store
with ``--memories`` memories (or copies ``--store``, a memvault data dir or an entry of the
speed bench's fill cache), of which ``--expiring`` expire a few seconds after the fill, then
runs the ``recall`` handler back to back (``bench.synth`` queries) while, in turn:

- nothing (idle);
- the expiry sweep (``sweep_expired``) purges the expired memories;
- flushes of the index (``VectorIndex.flush``, as the timer does), each after 64 points were
  written (to another user, so recall's work stays the same);
- the HNSW index build (``build_index``: copy, child process, swap), as housekeeping runs it.

Prints p50 / p99 ms per phase and p99 over the idle p50 (the goal: at most 3). The fill
gives each memory the embedding of one of ``--pool`` real sentences plus a little noise
(embedding every memory would take minutes per 10k on 2 cores; search and storage costs
do not depend on the vectors' source).
Run: ``python -m bench.stalls --memories 20000``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import numpy as np

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.mv import PROJECT, SCOPE, USER, open_runtime
from memvault.policy.text import content_hash
from memvault.service.indexing import embed_passages, index_rows, sweep_expired
from memvault.service.memory.recall import RecallArgs, recall
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.upkeep import index_build
from memvault.storage.memories import MemoryRow
from memvault.storage.vectors.base import Point, SparseVector


async def fill(rt: Runtime, n: int, *, expiring: int, pool: int, expire_in_s: float, seed: int = 0) -> None:
    """Add ``n`` active fact memories of the bench user; the last ``expiring`` expire ``expire_in_s``
    seconds from now. Vectors: the embedding of one of ``pool`` sentences, plus noise (see the docstring)."""
    emb, _ = await rt.ready()
    texts = synth.sentences(n, seed=seed) if n else []
    base = await embed_passages(rt, texts[:pool]) if n else np.zeros((0, emb.dim))
    rng = np.random.default_rng(seed)
    for i in range(0, n, 256):
        part = texts[i : i + 256]
        now = rt.clock.now()
        dense = base[rng.integers(0, len(base), len(part))] + rng.normal(scale=0.02, size=(len(part), emb.dim))
        dense = (dense / np.linalg.norm(dense, axis=1, keepdims=True)).astype(np.float32)
        rows = [MemoryRow(id=str(uuid.uuid4()), user_id=USER, project=PROJECT, kind="fact", key=None, content=t,
                          tags=[], importance=0.5, source="bench:stalls", created_at=now, updated_at=now,
                          last_accessed_at=now, content_hash=content_hash(t), embedding_model=emb.model_id,
                          expires_at=now + expire_in_s if i + j >= n - expiring else None)
                for j, t in enumerate(part)]
        for r in rows:
            await rt.facts.add(r, actor="bench:stalls")
        await index_rows(rt, rows, dense=list(dense))


async def phase(rt: Runtime, questions: synth.Questions, action: Callable[[], Awaitable[object]] | None,
                min_calls: int) -> tuple[list[float], float]:
    """Recall latencies (ms) while ``action`` runs (at least ``min_calls`` calls), and its seconds.

    Each call asks a question new to the process (``questions``), so each runs the model
    as a fresh recall does (a repeat would be served by the query-vector cache)."""
    lat: list[float] = []
    done = anyio.Event()
    took = 0.0

    async def act() -> None:
        nonlocal took
        t0 = time.perf_counter()
        try:
            if action is not None:
                await action()
        finally:
            took = time.perf_counter() - t0
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(act)
        i = 0
        while not done.is_set() or len(lat) < min_calls:
            t0 = time.perf_counter()
            await recall(rt, SCOPE, RecallArgs(query=questions.take(1)[0], k=5))
            lat.append((time.perf_counter() - t0) * 1000)
            i += 1
    return lat, took


def p99(v: list[float]) -> float:
    """99th percentile (nearest rank)."""
    s = sorted(v)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


async def run(args: argparse.Namespace) -> list[list]:
    with tempfile.TemporaryDirectory(prefix="memvault-stalls-") as tmp:
        data = Path(tmp) / "d"
        if args.store:
            src = args.store / "store" if (args.store / "meta.json").is_file() else args.store
            shutil.copytree(src, data)
        index_build.HNSW_AFTER_POINTS = 0  # exact search only: the HNSW build's stall is measured on its own
        rt = await open_runtime(data, args.model_cache)
        try:
            emb, vec = await rt.ready()
            t0 = time.perf_counter()
            await fill(rt, 0 if args.store else args.memories - args.expiring, expiring=0, pool=args.pool,
                       expire_in_s=0)
            await fill(rt, args.expiring, expiring=args.expiring, pool=args.pool, expire_in_s=args.expire_in_s,
                       seed=1)
            expire_at = time.time() + args.expire_in_s
            await rt.run_sync(vec.flush)
            print(f"fill: {time.perf_counter() - t0:.0f} s, points {await rt.run_sync(vec.count, MEMORY_COLLECTION)}")
            qs = synth.Questions(seed=7)  # every recall of the run asks a new question
            for q in qs.take(10):  # warm-up
                await recall(rt, SCOPE, RecallArgs(query=q, k=5))
            out: list[list] = []

            async def flushes() -> None:  # points of another user: recall's results stay the same
                rng = np.random.default_rng(5)
                for _ in range(args.flushes):
                    x = rng.normal(size=(64, emb.dim))
                    pts = [Point(id=str(uuid.uuid4()), dense=v.tolist(), sparse=SparseVector([], []),
                                 payload={"user_id": "someone else", "project": "", "status": "active"}) for v in x]
                    await rt.run_sync(vec.upsert, MEMORY_COLLECTION, pts)
                    await rt.run_sync(vec.flush)

            async def build() -> object:
                return await anyio.to_thread.run_sync(partial(vec.build_index, MEMORY_COLLECTION))

            idle, _ = await phase(rt, qs, None, args.calls)
            await anyio.sleep(max(0.0, expire_at - time.time()))
            phases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("expiry sweep", lambda: sweep_expired(rt)),
                (f"{args.flushes} index flushes (each after 64 points)", flushes),
                ("HNSW index build (child process + swap)", build),
            ]
            base = statistics.median(idle)
            out.append(["idle", len(idle), "", round(base, 1), round(p99(idle), 1), round(p99(idle) / base, 2)])
            for label, action in phases:
                lat, took = await phase(rt, qs, action, args.calls // 4)
                out.append([label, len(lat), round(took, 1), round(statistics.median(lat), 1), round(p99(lat), 1),
                            round(p99(lat) / base, 2)])
            idle2, _ = await phase(rt, qs, None, args.calls)
            out.append(["idle, after (HNSW)", len(idle2), "", round(statistics.median(idle2), 1),
                        round(p99(idle2), 1), round(p99(idle2) / base, 2)])
        finally:
            await rt.close()
    print(md_table(["phase", "recalls", "action s", "p50 ms", "p99 ms", "p99 / idle p50"], out))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.stalls", description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=20_000)
    p.add_argument("--expiring", type=int, default=2_000, help="memories the sweep purges")
    p.add_argument("--expire-in-s", type=float, default=5.0)
    p.add_argument("--pool", type=int, default=500, help="sentences really embedded for the fill's vectors")
    p.add_argument("--calls", type=int, default=200, help="recalls in an idle phase (a quarter at least in others)")
    p.add_argument("--flushes", type=int, default=20)
    p.add_argument("--store", type=Path, help="copy this filled memvault data dir instead of filling one")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    args = p.parse_args(argv)
    print(f"load: {os.getloadavg()}")
    anyio.run(run, args)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
