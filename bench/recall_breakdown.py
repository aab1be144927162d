"""Where recall's time goes, in-process: query embedding, dense / keyword search, SQLite fetch, rank total.

Fills a temp store with ``--memories`` synthetic sentences (``bench.mv.bulk_load``), or
copies a filled one (``--store DIR``: a memvault data dir, or an entry of ``bench.speed
--fill-cache``, whose ``store/`` is used; a store holding no memory is refused),
then times each stage of ``recall.rank`` separately over ``--queries`` synthetic queries,
and the whole ``recall`` handler (rank + reply bounding + access-statistics write), and
prints p50 per stage (ms). What the handler total leaves to the MCP figure of
``bench.speed`` is the transport: SDK dispatch, argument and output validation, JSON.
Run: ``python -m bench.recall_breakdown --memories 2000``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.mv import PROJECT, SCOPE, USER, bulk_load, open_runtime
from memvault.service.indexing import embed_query, keyword_vector, scope_filter
from memvault.service.recall import RecallArgs, rank, recall
from memvault.service.runtime import MEMORY_COLLECTION


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Returns {stage: p50 ms} and prints it as a table."""
    with tempfile.TemporaryDirectory(prefix="memvault-breakdown-") as tmp:
        data = Path(tmp) / "d"
        if args.store:
            src = args.store / "store" if (args.store / "meta.json").is_file() else args.store
            shutil.copytree(src, data)
        rt = await open_runtime(data, args.model_cache)
        try:
            if not args.store:
                await bulk_load(rt, synth.sentences(args.memories), progress=False)
            _, vec = await rt.ready()
            stored = await rt.run_sync(vec.count, MEMORY_COLLECTION, scope_filter(USER, [PROJECT], rt.clock.now()))
            if not stored:
                raise SystemExit(f"{args.store or 'the fill'} holds no memory of the bench user: nothing to time")
            print(f"memories: {stored}")
            t: dict[str, list[float]] = {k: [] for k in ("query embedding", "dense search", "keyword search",
                                                          "SQLite fetch", "rank total",
                                                          "recall handler total")}
            for q in synth.queries(args.queries, seed=7):
                t0 = time.perf_counter()
                qv = await embed_query(rt, q)
                t["query embedding"].append(time.perf_counter() - t0)
                flt = scope_filter(USER, [PROJECT], rt.clock.now())
                t0 = time.perf_counter()
                dense = await rt.run_sync(vec.search_dense, MEMORY_COLLECTION, qv.tolist(), flt, 100)
                t["dense search"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                sparse = await rt.run_sync(vec.search_sparse, MEMORY_COLLECTION, keyword_vector(q, query=True), flt,
                                           100)
                t["keyword search"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await rt.facts.get({h.id for h in dense} | {h.id for h in sparse})
                t["SQLite fetch"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await rank(rt, USER, [PROJECT], q, limit=5)
                t["rank total"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await recall(rt, SCOPE, RecallArgs(query=q, k=5))
                t["recall handler total"].append(time.perf_counter() - t0)
        finally:
            await rt.close()
    out = {k: statistics.median(v) * 1000 for k, v in t.items()}
    print(md_table(["stage", "p50 ms"], [[k, v] for k, v in out.items()]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.recall_breakdown", description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=2000)
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--store", type=Path, help="copy this filled memvault data dir instead of filling one")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
