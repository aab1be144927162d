"""``python -m bench all`` (or one name: locomo, longmemeval, speed): run the benches in turn.

Flags after the name are passed to each bench that knows them (``--data``,
``--model-cache``, ``--no-progress``); use the modules directly for their own flags.
Default ``all`` = LoCoMo (7 conversations), LongMemEval_S (all eligible questions; long:
``--lme-limit N`` for a type-balanced subset), speed at 1k and 10k memories, and the
mcp-server-qdrant peer on LoCoMo when its venv (/tmp/peers-venv) exists; ``all`` also runs
``bench.beir`` (SciFact and CMRC-zh through the documents path; its own module and CLI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from bench import locomo, longmemeval, peer_qdrant, speed
from bench.common import DEFAULT_MODEL_CACHE

BENCHES = {"locomo": locomo, "longmemeval": longmemeval, "speed": speed, "peer_qdrant": peer_qdrant}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("name", choices=["all", *BENCHES])
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--lme-limit", type=int, help="LongMemEval: N questions round-robin by type (default all)")
    a = p.parse_args(argv)
    names = list(BENCHES) if a.name == "all" else [a.name]
    if a.name == "all":
        names.insert(2, "beir")
    for name in names:
        if name == "beir":  # bench/beir.py (documents issue): its own CLI, data sets as paths
            from bench import beir
            from bench.common import data_dir

            root = data_dir(a.data)
            print("\n## beir\n", flush=True)
            beir.main([str(root / "scifact"), str(root / "cmrc2018_zh")])
            continue
        mod = BENCHES[name]
        if name == "peer_qdrant" and not (peer_qdrant.DEFAULT_VENV / "bin" / "mcp-server-qdrant").exists():
            print(f"\n## {name}: skipped (no {peer_qdrant.DEFAULT_VENV}; see docs/benchmarks.md)\n", flush=True)
            continue
        sub = argparse.ArgumentParser()
        mod.add_args(sub)
        argv_sub: list[str] = [] if name == "peer_qdrant" else ["--model-cache", str(a.model_cache)]
        if a.data and name != "speed":
            argv_sub += ["--data", a.data]
        if a.no_progress and name in ("locomo", "longmemeval"):
            argv_sub.append("--no-progress")
        if name == "longmemeval" and a.lme_limit:
            argv_sub += ["--limit", str(a.lme_limit)]
        print(f"\n## {name}\n", flush=True)
        anyio.run(mod.run, sub.parse_args(argv_sub))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
