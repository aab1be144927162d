"""The vector engine alone (Qdrant Edge through memvault's adapter): exact search vs HNSW, RSS.

Fills an Edge collection with ``--points`` synthetic memory points in memvault's point
layout (``memory_payload`` fields; 90% of them in the bench user's global scope, the rest
spread over 20 other projects; 20% expiring; clustered 384-dim dense vectors, keyword
vectors of ``bench.synth`` sentences), then, each in a fresh process so that RSS means
something:

1. exact search (no index yet): dense with recall's real filter (``scope_filter``), dense
   with a selective filter (one small project), keyword search; p50 ms and the process's
   RSS, split into what is resident of the shard's files (vectors, payload, indexes, WAL)
   and the rest;
2. the HNSW build (``EdgeVectorIndex.build_index``: copy, child process, swap) and its times;
3. HNSW and exact interleaved on the same queries (p50 each, recall@10 of HNSW against
   exact with the filters); then RSS of a fresh process searching with HNSW only.

Run: ``python -m bench.engine --points 10000 100000``. Prints one markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from bench import synth
from bench.common import md_table
from memvault.service.filters import label_digest, scope_filter
from memvault.service.indexing import keyword_vector
from memvault.storage.vectors.base import Point
from memvault.storage.vectors.edge import EdgeVectorIndex

COL = "memories"
DIM = 384
USER = "bench"
KINDS = ["fact", "preference", "decision", "episode", "note", "procedure"]


def _vectors(n: int, seed: int) -> np.ndarray:
    """Clustered unit vectors (real embeddings cluster): 1 of n/50 centres plus noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(1, n // 50), DIM)).astype(np.float32)
    x = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.7, size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def fill(root: Path, n: int) -> None:
    """Write ``n`` points to collection ``memories`` under ``root`` and the queries beside it."""
    rnd = random.Random(1)
    x = _vectors(n, 1)
    texts = synth.sentences(n)
    now = time.time()
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, "bench/synthetic")
    batch: list[Point] = []
    for i in range(n):
        other = rnd.random() < 0.1
        payload = {"user_id": USER, "project": f"p{rnd.randrange(20)}" if other else "", "kind": rnd.choice(KINDS),
                   "tags": [label_digest(f"t{rnd.randrange(50)}")], "status": "active",
                   "created_at": now - rnd.random() * 86400 * 365,
                   "expires_at": now + 86400 * 30 if rnd.random() < 0.2 else None, "key": None, "private_to": None}
        batch.append(Point(id=str(uuid.uuid4()), dense=x[i].tolist(), sparse=keyword_vector(texts[i], query=False),
                           payload=payload))
        if len(batch) == 1024:
            idx.upsert(COL, batch)
            batch = []
    idx.upsert(COL, batch)
    idx.close()
    q = _vectors(n, 1)[np.random.default_rng(2).integers(0, n, 200)]
    q = q + np.random.default_rng(3).normal(scale=0.05, size=q.shape).astype(np.float32)
    np.save(root / "queries.npy", q)


def _rss_split(root: Path) -> dict[str, float]:
    """MiB resident: the whole process, and of it the mapped files under ``root`` by kind."""
    out: dict[str, float] = {"rss": 0.0, "vectors": 0.0, "payload": 0.0, "indexes": 0.0, "other files": 0.0}
    cur = None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
                path = head[5] if len(head) > 5 else ""
                cur = None
                if path.startswith(str(root)):
                    cur = ("vectors" if "vector_storage" in path else "payload" if "payload_storage" in path
                           else "indexes" if ("index" in path) else "other files")
            elif line.startswith("Rss:") and cur is not None:
                out[cur] += int(head[1]) / 1024
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                out["rss"] = int(line.split()[1]) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def serve(root: Path, mode: str, queries: int) -> dict:
    """Open the collection in this process and time searches (``mode``: exact, hnsw or both)."""
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, "bench/synthetic")
    q = np.load(root / "queries.npy")[:queries]
    now = time.time()
    flt_all = scope_filter(USER, [""], now)
    flt_small = scope_filter(USER, ["p3"], now)
    texts = synth.queries(queries, seed=7)
    t: dict[str, list[float]] = {}
    recall: dict[str, list[float]] = {"all": [], "small": []}

    def timed(label: str, fn, *args):
        t0 = time.perf_counter()
        r = fn(*args)
        t.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
        return r

    modes = ["exact", "hnsw"] if mode == "both" else [mode]
    for i in range(len(q)):
        got: dict[str, dict[str, list[str]]] = {}
        for m in modes:  # interleaved
            idx._force_exact = m == "exact"  # the bench's switch between the two searches of one shard
            got[m] = {
                "all": [h.id for h in timed(f"dense {m}", idx.search_dense, COL, q[i].tolist(), flt_all, 100)],
                "small": [h.id for h in timed(f"dense 1-project {m}", idx.search_dense, COL, q[i].tolist(),
                                              flt_small, 100)],
            }
            timed(f"keyword {m}", idx.search_sparse, COL, keyword_vector(texts[i], query=True), flt_all, 100)
        if mode == "both":
            for k in recall:
                ex = set(got["exact"][k][:10])
                recall[k].append(len(ex & set(got["hnsw"][k][:10])) / max(1, len(ex)))
    out: dict = {k: round(statistics.median(v), 2) for k, v in t.items()}
    if mode == "both":
        out.update({f"recall@10 {k}": round(statistics.mean(v), 4) for k, v in recall.items()})
    out["mem"] = _rss_split(root)
    idx.close()
    return out


def _child(root: Path, mode: str, queries: int) -> dict:
    r = subprocess.run([sys.executable, "-m", "bench.engine", "--serve", str(root), "--mode", mode,
                        "--queries", str(queries)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(points: list[int], queries: int) -> list[dict]:
    results = []
    for n in points:
        with tempfile.TemporaryDirectory(prefix="memvault-engine-") as tmp:
            root = Path(tmp) / "vectors"
            t0 = time.perf_counter()
            fill(root, n)
            fill_s = time.perf_counter() - t0
            exact = _child(root, "exact", queries)
            idx = EdgeVectorIndex(root)
            idx.ensure_collection(COL, DIM, "bench/synthetic")
            built = idx.build_index(COL)
            idx.close()
            both = _child(root, "both", queries)
            hnsw = _child(root, "hnsw", queries)
            results.append({"points": n, "fill_s": round(fill_s, 1), "exact": exact, "build": built,
                            "both": both, "hnsw": hnsw})
            print(json.dumps(results[-1]), file=sys.stderr)
    return results


def table(results: list[dict]) -> str:
    rows = []
    for r in results:
        b, e, h = r["both"], r["exact"], r["hnsw"]
        rows += [
            [r["points"], "dense, recall's filter", e["dense exact"], b["dense exact"], b["dense hnsw"],
             b["recall@10 all"]],
            [r["points"], "dense, one small project", e["dense 1-project exact"], b["dense 1-project exact"],
             b["dense 1-project hnsw"], b["recall@10 small"]],
            [r["points"], "keyword", e["keyword exact"], b["keyword exact"], b["keyword hnsw"], ""],
            [r["points"], "RSS MiB (of it: vectors / payload / indexes)",
             f"{e['mem']['rss']} ({e['mem']['vectors']} / {e['mem']['payload']} / {e['mem']['indexes']})", "",
             f"{h['mem']['rss']} ({h['mem']['vectors']} / {h['mem']['payload']} / {h['mem']['indexes']})", ""],
            [r["points"], "build: copy / child / load / swap s",
             f"{r['build']['copy_s']} / {r['build']['seconds']} / {r['build'].get('load_s', '')} / "
             f"{r['build']['swap_s']}", "", "", ""],
        ]
    return md_table(["points", "what (p50 ms)", "exact, no index", "exact, HNSW shard", "HNSW", "recall@10"], rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, nargs="+", default=[10_000])
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--mode", default="exact", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        print(json.dumps(serve(args.serve, args.mode, args.queries)))
        return
    print(f"load before: {os.getloadavg()}", file=sys.stderr)
    results = run(args.points, args.queries)
    print(table(results))
    print(f"load after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
