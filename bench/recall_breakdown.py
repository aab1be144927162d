"""Where recall's time goes, in-process: embedding, each channel, SQLite, neighbours, rank, reply.

Fills a temp store with ``--memories`` synthetic sentences (``bench.mv.bulk_load``), or
copies a filled one (``--store DIR``: a memvault data dir, or an entry of ``bench.speed
--fill-cache``, whose ``store/`` is used; a store holding no memory is refused),
then times each stage of ``recall.rank`` separately over ``--queries`` rounds (the dense
channel's first search alone, and both its searches as recall runs them; the mixed-language
candidates' stored vectors; and an empty
hand-off to a worker thread and to SQLite's thread: what each await of the path costs besides
its work), the
access-statistics write alone, the whole ``recall`` handler (rank + reply bounding +
access statistics), and what the MCP SDK does with the reply (the structured dump and
the indented JSON text copy of ``convert_result``; its client's check of the structured
content against the output schema), and prints p50 per stage (ms). Every timed question
is new to the process (``bench.synth.Questions``), so ``rank`` and the handler each run
the model once; their model and non-model parts are timed on the same call
(``ModelClock``), and a query-cache hit makes the run fail. What the handler total
leaves to the MCP figure of ``bench.speed`` is the transport: SDK dispatch, argument
and output validation, JSON.
Run: ``python -m bench.recall_breakdown --memories 2000``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pydantic_core

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.mv import PROJECT, SCOPE, USER, bulk_load, open_runtime
from memvault.embedding.embedder import Embedder
from memvault.policy.language import CJK
from memvault.policy.neighbours import NEIGHBOUR_SOURCES
from memvault.service.centroids import language_centroids
from memvault.service.filters import scope_filter
from memvault.service.indexing import embed_query, keyword_vector
from memvault.service.memory.models import RecallResult
from memvault.service.memory.recall import RecallArgs, rank, recall, written_around
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.search import (
    CANDIDATES,
    Channels,
    dense_candidates,
    language_of,
    mixed_ids,
    score_candidates,
    stored_positions,
)


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


class ModelClock:
    """Times the embedding model inside whatever runs while it is entered: wraps the
    embedder's model call (``Embedder._embed``, reached only on a query-cache miss) and
    adds up its seconds per call; counts the query-cache hits meanwhile (a timed question
    answered from the cache would time the cache, not recall: ``check_cold`` raises).

    The wrapper is an attribute on the one embedder object, removed on exit.
    """

    def __init__(self, emb: Embedder) -> None:
        self.emb = emb
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # process CPU time (every thread) while the model ran
        self.calls = 0
        self._hits0 = 0

    def __enter__(self) -> ModelClock:
        inner = self.emb._embed

        def timed(*a: Any, **kw: Any) -> Any:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return inner(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t0
                self.cpu_seconds += time.process_time() - c0
                self.calls += 1

        self.emb._embed = timed  # type: ignore[method-assign]
        self._hits0 = self.emb.query_cache_hits
        return self

    def __exit__(self, *exc: object) -> None:
        del self.emb._embed  # the class's method again

    def take(self) -> float:
        """Model seconds since the last ``take`` (and reset, also ``take_cpu``'s)."""
        s, self.seconds, self.cpu_seconds = self.seconds, 0.0, 0.0
        return s

    def take_cpu(self) -> tuple[float, float]:
        """(wall, process CPU) seconds of the model since the last take (and reset)."""
        c = self.cpu_seconds
        return self.take(), c

    @property
    def cache_hits(self) -> int:
        return self.emb.query_cache_hits - self._hits0

    def check_cold(self) -> None:
        """Raises RuntimeError when a query was answered from the query-vector cache meanwhile."""
        if self.cache_hits:
            raise RuntimeError(f"{self.cache_hits} timed queries were answered from the query-vector cache: "
                               "the breakdown must ask questions never asked before in this process")


STAGES = ("thread hand-off (empty)", "SQLite round trip (empty)",
          "query embedding (model)", "dense search (one)", "dense channel (both searches)", "keyword search",
          "SQLite fetch", "mixed texts' vectors", "candidate scoring", "conversation neighbours",
          "rank total", "rank: model", "rank: non-model", "access-stats write",
          "recall handler total", "recall handler: model", "recall handler: non-model",
          "reply: structured dump", "reply: text copy", "client: output-schema check")


class Stages:
    """Wall and process-CPU seconds per stage (``with stages("name"):``), and their p50 in ms.

    CPU time (every thread of the process: the event loop, worker threads, SQLite's thread,
    onnxruntime's) is what a stage costs the machine; the machine's load stretches the wall
    time of a stage far more than its CPU time.
    """

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {k: [] for k in STAGES}
        self.cpu: dict[str, list[float]] = {k: [] for k in STAGES}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        yield
        self.add(stage, time.perf_counter() - t0, time.process_time() - c0)

    def add(self, stage: str, wall: float, cpu: float) -> None:
        self.wall[stage].append(wall)
        self.cpu[stage].append(cpu)

    def split(self, total: str, model: ModelClock) -> None:
        """Record the model's part of the last ``total`` call and the rest as ``<total prefix>: model`` / ``: non-model``."""
        mw, mc = model.take_cpu()
        prefix = total.removesuffix(" total")
        self.add(f"{prefix}: model", mw, mc)
        self.add(f"{prefix}: non-model", self.wall[total][-1] - mw, self.cpu[total][-1] - mc)

    def p50_ms(self, which: dict[str, list[float]]) -> dict[str, float]:
        return {k: statistics.median(v) * 1000 for k, v in which.items() if v}


async def breakdown(rt: Runtime, questions: synth.Questions, calls: int, *,
                    cpu: dict[str, float] | None = None) -> dict[str, float]:
    """{stage: p50 wall ms} over ``calls`` rounds on an open, filled runtime (the bench user's
    global scope); ``cpu``, when given, receives {stage: p50 process-CPU ms}.

    Every round asks three questions never asked before in this process (drawn from
    ``questions``): one for the query embedding and the single channels and stores (fed
    that embedding), one for ``rank``, one for the whole ``recall`` handler. So each timed
    ``rank`` and handler call runs the model once, and its model and non-model parts are
    both measured on the same call (``ModelClock``). Raises RuntimeError if any of them
    was answered from the query-vector cache.
    """
    emb, vec = await rt.ready()
    st = Stages()
    schema_check = _schema_checker()
    with ModelClock(emb) as model:
        for _ in range(calls):
            q_parts, q_rank, q_handler = questions.take(3)
            with st("thread hand-off (empty)"):
                await rt.run_sync(lambda: None)
            with st("SQLite round trip (empty)"):
                await rt.facts.database.fetchall("SELECT 1")
            with st("query embedding (model)"):
                qv = await embed_query(rt, q_parts)
            flt = scope_filter(USER, [PROJECT], rt.clock.now())
            centroids = language_centroids(emb)
            with st("dense search (one)"):
                await rt.run_sync(vec.search_dense, MEMORY_COLLECTION, qv.tolist(), flt, CANDIDATES)
            read: dict[str, list[float]] = {}
            with st("dense channel (both searches)"):  # + the vectors of what the second found
                dense = await rt.run_sync(partial(dense_candidates, vec, MEMORY_COLLECTION, qv, flt, CANDIDATES,
                                                  centroids, language_of(q_parts)[0] == CJK, read=read))
            with st("keyword search"):
                sparse = await rt.run_sync(vec.search_sparse, MEMORY_COLLECTION,
                                           keyword_vector(q_parts, query=True), flt, CANDIDATES)
            with st("SQLite fetch"):  # what ranking reads of every candidate, and the 5 returned rows whole
                rows = await rt.facts.heads([*dense, *(h.id for h in sparse)])
                await rt.facts.get([r.id for r in rows[:5]])
            channels = Channels(q_parts, dense, {h.id: h.score for h in sparse},
                                {lang: float(np.dot(c, qv)) for lang, c in centroids.items()}, stored=read)
            texts = {r.id: r.content for r in rows}
            with st("mixed texts' vectors"):
                positions = await rt.run_sync(stored_positions, emb, vec, MEMORY_COLLECTION,
                                              mixed_ids(channels, texts), read)
            with st("candidate scoring"):  # texts mostly not analysed before in this process
                await rt.run_sync(score_candidates, channels, texts, positions)
            with st("conversation neighbours"):
                await written_around(rt, list(dense)[:NEIGHBOUR_SOURCES], rt.clock.now())
            model.take()
            with st("rank total"):
                ranked = await rank(rt, USER, [PROJECT], q_rank, limit=5)
            st.split("rank total", model)
            with st("access-stats write"):
                await rt.facts.touch([r.row.id for r in ranked], rt.clock.now())
            with st("recall handler total"):
                result = await recall(rt, SCOPE, RecallArgs(query=q_handler, k=5))
            st.split("recall handler total", model)
            # What the SDK does with the returned model (mcpserver func_metadata.convert_result),
            # and what its client does with the structured content (session.validate_tool_result).
            with st("reply: structured dump"):
                structured = result.model_dump(mode="json", by_alias=True)
            with st("reply: text copy"):
                pydantic_core.to_json(result, fallback=str, indent=2).decode()
            with st("client: output-schema check"):
                schema_check(structured)
        model.check_cold()
    if cpu is not None:
        cpu.update(st.p50_ms(st.cpu))
    return st.p50_ms(st.wall)


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
            cpu: dict[str, float] = {}
            out = await breakdown(rt, synth.Questions(seed=7), args.queries, cpu=cpu)
        finally:
            await rt.close()
    print(md_table(["stage", "p50 wall ms", "p50 CPU ms"], [[k, v, cpu[k]] for k, v in out.items()]))
    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.recall_breakdown", description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=2000)
    p.add_argument("--queries", type=int, default=60, help="rounds (3 new questions each)")
    p.add_argument("--store", type=Path, help="copy this filled memvault data dir instead of filling one")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
