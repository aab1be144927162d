"""Where an owner's resident memory lives after use: heap, the engine's segments, the model, libraries.

Starts ``memvault serve`` (forwarded: the owner process starts with it) on an empty data
dir, through the MCP SDK's stdio client, and measures the owner (pid from ``owner.json``):

- fresh: after the first recall (model loaded), ``--idle-s`` seconds idle;
- after use: ``--remembers`` remembers of new ``bench.synth`` sentences (force=true),
  then ``--recalls`` recalls of questions new to the process; measured 1 s after the last
  call (before housekeeping can trim the heap: it waits for a whole idle timer period, 2
  s by default) and again ``--idle-s`` seconds after it (trimmed).

Each time, ``/proc/PID/smaps`` is read mapping by mapping and its resident size (Rss) is
summed by class: heap (``[heap]`` and anonymous mappings: the C heap, Python's objects,
onnxruntime's buffers, thread stacks), the engine's files (mappings under the data dir's
``vectors/``), SQLite (files of the database), the model's files (under the model cache),
shared libraries (``.so``), and the rest; plus ``smaps_rollup``'s Rss and its anonymous
part. ``os.getloadavg()`` is recorded. Run: ``python -m bench.resident``.
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
from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result
from bench.owner import modes, owner_pid, stop_owner
from bench.speed import client, memvault_system

CLASSES = ("heap (anonymous)", "engine segments", "SQLite", "model files", "shared libraries", "other")


def classify(path: str, data_dir: Path, model_cache: Path) -> str:
    """The class of one mapping (``CLASSES``) by its path ("" for an anonymous mapping)."""
    if not path or path == "[heap]" or path.startswith("[anon"):
        return "heap (anonymous)"
    if path.startswith(str(data_dir / "vectors")):
        return "engine segments"
    if path.startswith(str(data_dir)) and (".db" in path):
        return "SQLite"
    if path.startswith(str(model_cache)):
        return "model files"
    if ".so" in Path(path).name:
        return "shared libraries"
    return "other"


def smaps_by_class(pid: int, data_dir: Path, model_cache: Path) -> dict[str, float]:
    """Resident MiB of ``pid`` per class (``CLASSES``) from /proc/PID/smaps, plus ``total``
    and ``anonymous`` from smaps_rollup. Raises OSError when the process is gone."""
    out = dict.fromkeys(CLASSES, 0.0)
    path = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            path = head[5].strip() if len(head) == 6 else ""
        elif line.startswith("Rss:"):
            out[classify(path, data_dir, model_cache)] += int(line.split()[1]) / 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            out["total"] = int(line.split()[1]) / 1024
        elif line.startswith("Anonymous:"):
            out["anonymous"] = int(line.split()[1]) / 1024
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure (module docstring); print the table; write JSON; return the payload."""
    _, forwarded = modes(memvault_system(args.model_cache, progress=False), owner_idle_s=600)
    rows: dict[str, dict[str, float]] = {}
    questions = synth.Questions(seed=21)
    with tempfile.TemporaryDirectory(prefix="memvault-resident-") as tmp:
        store = Path(tmp) / "d"
        store.mkdir()
        opid: int | None = None
        try:
            async with client(forwarded, store) as c:
                opid = await owner_pid(store)
                await c.call_tool("recall", {"query": questions.take(1)[0], "k": 5})
                await anyio.sleep(args.idle_s)
                rows["fresh (model loaded), idle"] = smaps_by_class(opid, store, args.model_cache)
                t0 = time.perf_counter()
                for s in synth.sentences(args.remembers, seed=args.seed):
                    res = await c.call_tool("remember", {"content": s, "force": True})
                    if res.is_error:
                        raise RuntimeError(f"remember failed: {res.content}")
                for q in questions.take(args.recalls):
                    res = await c.call_tool("recall", {"query": q, "k": 5})
                    if res.is_error:
                        raise RuntimeError(f"recall failed: {res.content}")
                took = time.perf_counter() - t0
                after = f"after {args.remembers} remembers + {args.recalls} recalls"
                await anyio.sleep(1.0)
                rows[after + ", 1 s idle (before the housekeeping trim)"] = smaps_by_class(
                    opid, store, args.model_cache)
                await anyio.sleep(max(0.0, args.idle_s - 1.0))
                rows[after + f", {args.idle_s:g} s idle"] = smaps_by_class(opid, store, args.model_cache)

        finally:
            if opid is not None:
                await stop_owner(opid)
    heads = ["owner", "RSS MiB", "anonymous", *CLASSES]
    print(md_table(heads, [[k, round(v["total"]), round(v["anonymous"]), *(round(v[c]) for c in CLASSES)]
                           for k, v in rows.items()]))
    load = os.getloadavg()
    print(f"\nworkload {took:.0f} s; load (1, 5, 15 min): {load}")
    payload = {"protocol": __doc__.strip(), "remembers": args.remembers, "recalls": args.recalls,
               "idle_s": args.idle_s, "workload_s": took, "results": rows, "loadavg": load}
    print(f"JSON: {write_result('resident', payload)}", file=sys.stderr)
    return payload


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.resident", description=__doc__.splitlines()[0])
    p.add_argument("--remembers", type=int, default=2000)
    p.add_argument("--recalls", type=int, default=100)
    p.add_argument("--idle-s", type=float, default=8.0, help="idle seconds before each measurement")
    p.add_argument("--seed", type=int, default=0, help="seed of the remembered sentences (bench.synth)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
