"""Speed of memvault over MCP stdio, driven by the MCP SDK's client as an assistant would.

For each store size N: the data dir is filled in-process first (``bench.mv.bulk_load``:
batched embeddings with the server's own embedder, rows through ``FactStore.add``, points
through ``index_rows``; write policies skipped), then ``memvault serve`` is spawned
(stdio) and measured:

- handshake: spawn -> ``initialize`` answered (client connected);
- first recall cold: the first ``recall`` call, which waits for the background model load;
- recall p50/p95 over ``--recalls`` calls (k=5) after 5 warm-up calls;
- remember p50/p95 over ``--remembers`` new sentences (force=true: every call stores);
- RSS of the server process (VmRSS): after the handshake, idle (model loaded, 2 s after
  the first recall), peak while the latency loops run (sampled every 20 ms).

Sentences: ``bench.synth`` (seeded templates + slots). Run: ``python -m bench.speed``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table, percentile, write_result
from bench.proc import PeakRss, child_pids, rss_mb

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def server_env(data_dir: Path, model_cache: Path) -> dict[str, str]:
    """Environment of the spawned server (as tests/conftest.py builds it)."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "MEMVAULT_USER_ID": "bench", "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"})
    return env


async def _fill(data_dir: Path, model_cache: Path, n: int) -> float:
    from bench.mv import bulk_load, open_runtime

    t0 = time.perf_counter()
    rt = await open_runtime(data_dir, model_cache)
    try:
        await bulk_load(rt, synth.sentences(n, seed=0))
    finally:
        await rt.close()
    return time.perf_counter() - t0


async def _call(client, tool: str, **arguments: Any) -> dict:
    res = await client.call_tool(tool, arguments)
    if res.is_error:
        raise RuntimeError(f"{tool} failed: {' '.join(getattr(c, 'text', '') for c in res.content)}")
    return res.structured_content


async def measure(n: int, model_cache: Path, recalls: int, remembers: int, workdir: Path) -> dict[str, Any]:
    """Fill a store with ``n`` memories, spawn the server, measure; returns one result row (ms, MiB)."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    data = workdir / f"n{n}"
    fill_s = await _fill(data, model_cache, n) if n else 0.0
    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--log-level", "WARNING"],
                                   env=server_env(data, model_cache))
    qs = synth.queries(recalls + 5, seed=n + 1)
    new = synth.sentences(n + remembers, seed=0)[n:]  # continues the same stream: all new
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=600) as c:
        handshake = time.perf_counter() - t0
        pids = child_pids(must_contain="serve")
        pid = pids[0] if pids else None
        rss_hs = rss_mb(pid) if pid else float("nan")
        t1 = time.perf_counter()
        first = await _call(c, "recall", query=qs[0], k=5)
        cold = time.perf_counter() - t1
        await anyio.sleep(2.0)
        rss_idle = rss_mb(pid) if pid else float("nan")
        rec, rem = [], []
        with PeakRss(pid) as peak:
            for q in qs[1:5]:
                await _call(c, "recall", query=q, k=5)
            for q in qs[5:]:
                t = time.perf_counter()
                await _call(c, "recall", query=q, k=5)
                rec.append((time.perf_counter() - t) * 1000)
            statuses: dict[str, int] = {}
            for s in new:
                t = time.perf_counter()
                r = await _call(c, "remember", content=s, force=True)
                rem.append((time.perf_counter() - t) * 1000)
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        rss_after = rss_mb(pid) if pid else float("nan")
    return {
        "memories": n, "fill_s": round(fill_s, 1), "handshake_ms": handshake * 1000, "first_recall_cold_ms": cold * 1000,
        "first_recall_hits": len(first["memories"]),
        "recall_p50_ms": percentile(rec, 50), "recall_p95_ms": percentile(rec, 95),
        "remember_p50_ms": percentile(rem, 50), "remember_p95_ms": percentile(rem, 95),
        "remember_statuses": statuses,
        "rss_after_handshake_mb": rss_hs, "rss_idle_mb": rss_idle, "rss_peak_load_mb": peak.peak,
        "rss_after_load_mb": rss_after, "recalls": len(rec), "remembers": len(rem),
        "loadavg_after": os.getloadavg(),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of ``measure`` rows."""
    heads = ["memories", "handshake ms", "1st recall cold ms", "recall p50 / p95 ms", "remember p50 / p95 ms",
             "RSS handshake / idle / peak MiB", "load 1-min"]
    body = [[r["memories"], f"{r['handshake_ms']:.0f}", f"{r['first_recall_cold_ms']:.0f}",
             f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f}",
             f"{r['remember_p50_ms']:.1f} / {r['remember_p95_ms']:.1f}",
             f"{r['rss_after_handshake_mb']:.0f} / {r['rss_idle_mb']:.0f} / {r['rss_peak_load_mb']:.0f}",
             f"{r['loadavg_after'][0]:.2f}"] for r in rows]
    return md_table(heads, body)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every size in ``args.sizes``; print the table; write JSON; return the payload."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="memvault-speed-") as tmp:
        for n in args.sizes:
            print(f"# speed: {n} memories", file=sys.stderr)
            rows.append(await measure(n, args.model_cache, args.recalls, args.remembers, Path(tmp)))
    payload = {"protocol": __doc__.strip(), "driver": "MCP stdio, mcp SDK Client (memvault serve)",
               "results": rows}
    path = write_result("speed", payload)
    print(table(rows))
    print(f"\nJSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000],
                   help="comma-separated store sizes (default 1000,10000; 100000 takes ~15 min to fill)")
    p.add_argument("--recalls", type=int, default=200)
    p.add_argument("--remembers", type=int, default=100)
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.speed", description=__doc__.splitlines()[0])
    add_args(p)
    args = p.parse_args(argv)
    anyio.run(run, args)


if __name__ == "__main__":
    main()
