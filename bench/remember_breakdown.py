"""Where remember's time goes, in-process: validation, secret scan, duplicate checks, embedding, writes.

Opens a copy of a filled store (``--store DIR``: a memvault data dir, or an entry of
``bench.speed --fill-cache`` whose ``store/`` is used) or fills a temp one with
``--memories`` synthetic sentences, then for each of ``--writes`` new sentences runs the
steps of ``service.memory.remember`` one by one, as the handler runs them, and times each:
argument validation, secret scan + importance score (``_screen``), exact-duplicate
lookup (SQLite, by content hash), embedding (the write's own vector, reused by the
next step), near-duplicate search (dense, this scope and kind, limit 3, with the row
fetch of the close hits), SQLite insert (row + history entry, one transaction), vector
upsert (dense + keyword point), and the capacity check (the count bound each write
reads; and, for comparison, the exact count of the scope, which visits every active
row and is read only when the bound reaches the cap). Then times the whole handler on
other new sentences (``remember(force=true)``), and prints p50 per stage (ms).
Run: ``python -m bench.remember_breakdown --store DIR``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.mv import PROJECT, SCOPE, USER, bulk_load, open_runtime
from memvault.policy.dedup import DEDUP_THRESHOLD
from memvault.policy.text import content_hash, validate_content
from memvault.service import validation as v
from memvault.service.filters import scope_filter
from memvault.service.indexing import embed_memories, index_rows
from memvault.service.memory.remember import RememberArgs, _screen, remember
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.storage.memories import MemoryRow

STAGES = ("validation", "secret scan + importance", "exact-duplicate lookup", "embedding",
          "near-duplicate search", "SQLite insert + history", "vector upsert", "capacity check (count bound)",
          "exact scope count (not on the path)", "remember handler total")


async def _parts(rt: Runtime, text: str, t: dict[str, list[float]]) -> None:
    """The steps of one remember, timed one by one (the write happens: row and point)."""
    s = rt.settings
    emb, vectors = await rt.started()
    t0 = time.perf_counter()
    content = validate_content(text, s.policies.max_content_chars)
    kind, key, tags = v.check_kind("fact"), v.check_key(None), v.check_tags([])
    v.check_visibility("shared")
    t["validation"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    secret, scored = await rt.run_sync(_screen, [content, "", "", PROJECT], content, kind, key, True)
    t["secret scan + importance"].append(time.perf_counter() - t0)
    assert secret is None and scored is not None
    now = rt.clock.now()
    chash = content_hash(content)
    t0 = time.perf_counter()
    await rt.facts.active_by_hash(USER, PROJECT, kind, chash, now)
    t["exact-duplicate lookup"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    windows = (await embed_memories(rt, [content]))[0]
    t["embedding"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    flt = scope_filter(USER, [PROJECT], now, kinds=[kind], shared_only=True)
    hits = await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, windows[0].tolist(), flt, 3)
    await rt.facts.get({h.id for h in hits if h.score >= DEDUP_THRESHOLD})
    t["near-duplicate search"].append(time.perf_counter() - t0)
    row = MemoryRow(id=str(uuid.uuid4()), user_id=USER, project=PROJECT, kind=kind, key=key, content=content,
                    tags=tags, importance=round(scored.value, 3), source="bench", created_at=now, updated_at=now,
                    last_accessed_at=now, expires_at=None, content_hash=chash, embedding_model=emb.model_id)
    t0 = time.perf_counter()
    await rt.facts.add(row, actor="bench")
    t["SQLite insert + history"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    await index_rows(rt, [row], dense=[windows])
    t["vector upsert"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    await rt.facts.count_active_bound(USER, PROJECT, now)
    t["capacity check (count bound)"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    await rt.facts.count_active(USER, PROJECT, now)
    t["exact scope count (not on the path)"].append(time.perf_counter() - t0)


async def breakdown(rt: Runtime, writes: int, *, seed: int = 11) -> dict[str, float]:
    """{stage: p50 ms} of ``writes`` new sentences on an open, filled runtime (it writes to the store)."""
    t: dict[str, list[float]] = {k: [] for k in STAGES}
    texts = synth.sentences(2 * writes, seed=seed)
    for i in range(writes):
        await _parts(rt, f"{texts[2 * i]} (write {i})", t)
        t0 = time.perf_counter()
        res = await remember(rt, SCOPE, RememberArgs(content=f"{texts[2 * i + 1]} (handler {i})", force=True))
        t["remember handler total"].append(time.perf_counter() - t0)
        if res.status != "stored":
            raise RuntimeError(f"remember did not store a new sentence: {res.status} ({res.reason})")
    return {k: statistics.median(vals) * 1000 for k, vals in t.items() if vals}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Returns {stage: p50 ms} and prints it as a table."""
    with tempfile.TemporaryDirectory(prefix="memvault-remember-") as tmp:
        data = Path(tmp) / "d"
        if args.store:
            src = args.store / "store" if (args.store / "meta.json").is_file() else args.store
            shutil.copytree(src, data)
        rt = await open_runtime(data, args.model_cache, capacity_per_scope=args.capacity)
        try:
            if not args.store:
                await bulk_load(rt, synth.sentences(args.memories), progress=False)
            await rt.started()
            print(f"memories: {await rt.facts.count_active(USER, PROJECT, rt.clock.now())}")
            out = await breakdown(rt, args.writes)
        finally:
            await rt.close()
    print(md_table(["stage", "p50 ms"], [[k, v] for k, v in out.items()]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.remember_breakdown", description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=2000)
    p.add_argument("--writes", type=int, default=30)
    p.add_argument("--capacity", type=int, default=1_000_000,
                   help="the scope's capacity (default above any fill, as bench.speed sets it)")
    p.add_argument("--store", type=Path, help="copy this filled memvault data dir instead of filling one")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
