"""``python -m bench all`` (or one bench by name): run the benches in turn, then one headline table.

``all`` runs, in this order: ``locomo`` (memvault, BM25, dense-only), the LoCoMo peers
``peer_qdrant`` (mcp-server-qdrant over MCP), ``peer_mem0`` (mem0 OSS, infer=False) and
``peer_kgmemory`` (@modelcontextprotocol/server-memory over MCP, LoCoMo and LongMemEval),
``longmemeval`` (all eligible questions unless ``--lme-limit``), ``beir`` (SciFact and
CMRC-zh through the documents path, with BM25 / dense / keyword rows), ``bilingual``
(cross-lingual recall on the English / Chinese probe of tests/data, every fusion option,
the "nothing relevant" curve on questions the store cannot answer, document cases),
``abstention`` (LongMemEval's ``_abs`` questions against answerable ones, per
min_relevance), ``speed``
(memvault and mcp-server-qdrant over MCP stdio at ``--sizes``) and ``owner`` (memvault
forwarded to its owner process against ``--no-owner``, at ``--sizes``) and ``consolidation``
(merges of restatements on the labelled set in tests/data). Peers run from their own
venvs / npm folders outside the repo, made on first use (PyPI / npm only; see
bench/peer_env.py); ``--no-peers`` leaves them out. Each bench prints its table and writes
its JSON to bench/results; ``all`` ends with a headline table (also written as
``bench/results/all-<time>.md``). Flags are passed to each bench that knows them; use the
modules directly (``python -m bench.<name> --help``) for their own flags.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, RESULTS, environment, md_table
from memvault.config import RankingSettings

DEFAULT_MIN_RELEVANCE = RankingSettings().min_relevance

ORDER = ("locomo", "peer_qdrant", "peer_mem0", "peer_kgmemory", "longmemeval", "beir", "bilingual", "abstention",
         "speed", "owner",
         "consolidation")
PEERS = ("peer_qdrant", "peer_mem0", "peer_kgmemory")


def sub_args(name: str, a: argparse.Namespace) -> argparse.Namespace:
    """The bench's own arguments: its defaults plus the shared flags it defines."""
    mod = importlib.import_module(f"bench.{name}")
    sub = argparse.ArgumentParser(prog=f"bench.{name}")
    mod.add_args(sub)
    known = {opt for act in sub._actions for opt in act.option_strings}
    argv: list[str] = []
    if a.data and "--data" in known:
        argv += ["--data", a.data]
    if "--model-cache" in known:
        argv += ["--model-cache", str(a.model_cache)]
    if a.no_progress and "--no-progress" in known:
        argv.append("--no-progress")
    if name == "longmemeval" and a.lme_limit:
        argv += ["--limit", str(a.lme_limit)]
    if name == "peer_kgmemory":
        argv.append("--longmemeval")
        if a.lme_limit:
            argv += ["--lme-limit", str(a.lme_limit)]
    if name in ("speed", "owner"):
        argv += ["--sizes", a.sizes]
        if a.fill_cache:
            argv += ["--fill-cache", str(a.fill_cache)]
    if name == "speed" and a.no_peers:
        argv.append("--no-peer")
    return sub.parse_args(argv)


def headline(payloads: dict[str, dict[str, Any]]) -> str:
    """Markdown: the figures the issue asks for, one row per (set, metric, system), from this run."""
    rows: list[list[Any]] = []
    for name in ("locomo", "peer_qdrant", "peer_mem0", "peer_kgmemory"):
        for system, groups in payloads.get(name, {}).get("summary", {}).items():
            if o := groups.get("overall"):
                rows.append([f"LoCoMo ({int(o['n'])} q)", "turn R@5 / R@10", system, f"{o['R@5']:.3f} / {o['R@10']:.3f}"])
    lme = dict(payloads.get("longmemeval", {}).get("summary", {}))
    lme.update(payloads.get("peer_kgmemory", {}).get("longmemeval", {}))
    for system, m in lme.items():
        if "session all@5" in m:
            rows.append([f"LongMemEval_S ({m.get('n', '?')} q)", "session recall_all@5 / nDCG@5", system,
                         f"{m['session all@5']:.3f} / {m['session ndcg@5']:.3f}"])
    for s in payloads.get("beir", {}).get("sets", []):
        for system, sc in s["scores"].items():
            rows.append([s["name"], "nDCG@10 / Recall@100", system, f"{sc['ndcg@10']:.3f} / {sc['recall@100']:.3f}"])
    bil = payloads.get("bilingual", {})
    if opt := bil.get("options", {}).get(bil.get("default", "")):
        for d in ("en->zh", "zh->en"):
            if d in opt:
                rows.append([f"bilingual probe ({opt[d]['n']} q)", f"{d} recall@1 / MRR", "memvault",
                             f"{opt[d]['R@1']:.3f} / {opt[d]['MRR']:.3f}"])
    for r in payloads.get("abstention", {}).get("curve", []):
        if abs(r["min_relevance"] - DEFAULT_MIN_RELEVANCE) < 1e-9:
            rows.append([f"LongMemEval _abs ({payloads['abstention']['abstention_questions']} q)",
                         "empty replies / answerable turn any@5 at the default min_relevance", "memvault",
                         f"{r['_abs empty']:.3f} / {r['turn any@5']:.3f}"])
    for r in payloads.get("speed", {}).get("results", []):
        rows.append([f"speed, {r['memories']} memories", "recall p50 / remember p50 ms (load)", r["system"],
                     f"{r['recall_p50_ms']:.1f} / {r['remember_p50_ms']:.1f} ({r['loadavg_after'][0]:.1f})"])
    for r in payloads.get("owner", {}).get("results", []):
        if r["mode"] == "forwarded cold":
            rows.append([f"owner, {r['memories']} memories", "handshake ms, no owner yet (load)", "memvault serve",
                         f"{r['handshake_ms']:.0f} ({r['loadavg'][0]:.1f})"])
            continue
        rows.append([f"owner, {r['memories']} memories", "handshake / recall p50 / remember p50 ms, RSS idle MiB "
                     "(load)", f"memvault {r['mode']} ({r['processes']})",
                     f"{r['handshake_ms']:.0f} / {r['recall_p50_ms']:.1f} / {r['remember_p50_ms']:.1f}, "
                     f"{r['rss_idle_mb']:.0f} ({r['loadavg'][0]:.1f})"])
    if c := payloads.get("consolidation", {}).get("store"):
        rows.append([f"consolidation set ({c['cluster_pairs']} restatement / {c['distinct_pairs']} distinct pairs)",
                     "pair recall / distinct merged", "memvault consolidate",
                     f"{c['pair_recall']:.3f} / {c['distinct_merged']}"])
    return md_table(["set", "metric", "system", "value"], rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("name", choices=["all", *ORDER])
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-peers", action="store_true", help="memvault and the baselines only")
    p.add_argument("--lme-limit", type=int, help="LongMemEval: N questions round-robin by type (default all)")
    p.add_argument("--sizes", default="1000,10000", help="speed, owner: store sizes (100000 fills for ~15 min)")
    p.add_argument("--fill-cache", type=Path, help="speed, owner: keep filled stores here for later runs")
    a = p.parse_args(argv)
    names = [n for n in ORDER if not (a.no_peers and n in PEERS)] if a.name == "all" else [a.name]
    payloads: dict[str, dict[str, Any]] = {}
    elapsed: dict[str, float] = {}
    t_all = time.perf_counter()
    for name in names:
        print(f"\n## {name}\n", flush=True)
        t0 = time.perf_counter()
        mod = importlib.import_module(f"bench.{name}")
        payloads[name] = anyio.run(mod.run, sub_args(name, a))
        elapsed[name] = round(time.perf_counter() - t0, 1)
        sys.stdout.flush()
    if len(names) > 1:
        env = environment()
        text = (f"# python -m bench {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
                f"{headline(payloads)}\n\nElapsed (s): "
                + ", ".join(f"{n} {s}" for n, s in elapsed.items())
                + f"; total {round(time.perf_counter() - t_all)}\n\nEnvironment: {env}\n")
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"all-{time.strftime('%Y%m%d-%H%M%S')}.md"
        path.write_text(text)
        print(f"\n## headline\n\n{text}\nWritten: {path}")


if __name__ == "__main__":
    main()
