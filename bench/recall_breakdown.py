"""Where recall's time goes, in-process: embedding, each channel, SQLite, neighbours, rank, reply.

Fills a temp store with ``--memories`` synthetic sentences (``bench.mv.bulk_load``), or
copies a filled one (``--store DIR``: a memvault data dir, or an entry of ``bench.speed
--fill-cache``, whose ``store/`` is used; a store holding no memory is refused),
then times each stage of ``recall.rank`` separately over ``--queries`` synthetic queries,
the access-statistics write alone, the whole ``recall`` handler (rank + reply bounding +
access statistics), and what the MCP SDK does with the reply (the structured dump and
the indented JSON text copy of ``convert_result``; its client's check of the structured
content against the output schema), and prints p50 per stage (ms). What the handler
total leaves to the MCP figure of ``bench.speed`` is the transport: SDK dispatch,
argument and output validation, JSON.
Run: ``python -m bench.recall_breakdown --memories 2000``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pydantic_core

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.mv import PROJECT, SCOPE, USER, bulk_load, open_runtime
from memvault.policy.neighbours import NEIGHBOUR_SOURCES
from memvault.service.indexing import embed_query, keyword_vector, scope_filter
from memvault.service.models import RecallResult
from memvault.service.recall import RecallArgs, rank, recall, written_around
from memvault.service.runtime import MEMORY_COLLECTION, Runtime


def _schema_checker() -> Callable[[Any], None]:
    """Validates a recall reply against recall's output schema as tools/list publishes it
    (``memvault.mcp.listing.lean_schema``), compiled once as the SDK's client does."""
    from jsonschema.validators import validator_for

    from memvault.mcp.listing import lean_schema

    schema = lean_schema(RecallResult.model_json_schema(by_alias=True))
    validator = validator_for(schema)(schema)

    def check(instance: Any) -> None:
        errors = list(validator.iter_errors(instance))
        if errors:
            raise RuntimeError(f"recall reply does not match its output schema: {errors[0].message}")

    return check


async def breakdown(rt: Runtime, queries: list[str]) -> dict[str, float]:
    """{stage: p50 ms} over ``queries`` on an open, filled runtime (the bench user's global scope)."""
    _, vec = await rt.ready()
    t: dict[str, list[float]] = {k: [] for k in ("query embedding", "dense search", "keyword search",
                                                  "SQLite fetch", "conversation neighbours", "rank total", "access-stats write",
                                                  "recall handler total", "reply: structured dump",
                                                  "reply: text copy", "client: output-schema check")}
    schema_check = _schema_checker()
    for q in queries:
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
        await written_around(rt, [h.id for h in dense[:NEIGHBOUR_SOURCES]], rt.clock.now())
        t["conversation neighbours"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await rank(rt, USER, [PROJECT], q, limit=5)
        t["rank total"].append(time.perf_counter() - t0)
        ranked = await rank(rt, USER, [PROJECT], q, limit=5)
        t0 = time.perf_counter()
        await rt.facts.touch([r.row.id for r in ranked], rt.clock.now())
        t["access-stats write"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = await recall(rt, SCOPE, RecallArgs(query=q, k=5))
        t["recall handler total"].append(time.perf_counter() - t0)
        # What the SDK does with the returned model (mcpserver func_metadata.convert_result),
        # and what its client does with the structured content (session.validate_tool_result).
        t0 = time.perf_counter()
        structured = result.model_dump(mode="json", by_alias=True)
        t["reply: structured dump"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        pydantic_core.to_json(result, fallback=str, indent=2).decode()
        t["reply: text copy"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        schema_check(structured)
        t["client: output-schema check"].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1000 for k, v in t.items()}


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
            out = await breakdown(rt, synth.queries(args.queries, seed=7))
        finally:
            await rt.close()
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
