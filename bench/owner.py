"""Forwarded ``memvault serve`` (the data dir's owner up) against ``memvault serve --no-owner``, in one run.

Both modes are driven by the MCP SDK's stdio client (``mode="legacy"``: the initialize
handshake) through ``bench.speed``'s pieces: its memvault adapter, its fill (a store of N
``bench.synth`` sentences through ``bench.mv.bulk_load``; ``--fill-cache`` shares the speed
bench's cache) and its measuring loop. Each mode gets its own copy of the filled store
(two direct servers, or a direct server and an owner, cannot share a data dir). For each
store size N:

- cold handshake: spawn -> ``initialize`` answered for the first ``memvault serve`` of the
  data dir (no owner runs: it starts ``memvault serve --owner`` and waits for its
  socket), once; then that client's first recall (waits for the owner's model load);
- handshake, spawn -> ``initialize`` answered, ``--handshakes`` spawns per mode,
  alternating: ``memvault serve --no-owner`` (direct) and ``memvault serve`` with the
  owner up (the cold client stays connected, the owner's model is loaded); median, min
  and max. Alongside, in the same rounds, the floor of a forwarder's start without any
  socket or MCP: ``python -c pass``, and python importing the forwarder and reading the
  settings (``FORWARDER_START``), each run to its exit: wall time, and CPU time (user +
  system, from this process's children's rusage), which the machine's load barely moves;
- recall and remember p50/p95: the cold client and two more forwarded clients stay
  connected; one direct client joins; every client's first recall checks the fill. The
  direct client and the first forwarded client then make the same calls
  (``bench.speed.timed_calls``: 4 warm-up recalls, ``--recalls`` recalls,
  ``--remembers`` remembers with force=true), alternating call by call, each question new
  to both server processes (``bench.synth.Questions``: a repeat would be answered from
  the query-vector cache without a model run), so both modes see
  the same machine load; besides the p50s, the median of the paired differences
  (forwarded minus direct, call i against call i). Before them, ``--pings`` MCP pings
  the same way: the round trip without any server work, so what forwarding adds alone.
  Beside the wall times, the CPU time (user + system, /proc/PID/stat) the measured
  client's server processes used per ping and per call (direct: the server; forwarded:
  the owner plus that client's forwarder), which the machine's load distorts far less;
- RSS (VmRSS, MiB) of (a) the one direct server, (b) the owner (pid from its
  ``owner.json``) plus the three forwarders (pids among this process's children): idle
  (2 s after the first recalls), peak while the latency loops run (the sum sampled every
  20 ms), after them.

Goals checked in the output: forwarded handshake with the owner up <= 300 ms (median);
forwarding adds <= 2 ms to recall and to remember p50; (b) <= 1.3 x (a), idle and peak.
The owner runs with ``MEMVAULT_OWNER_IDLE_S`` = ``--owner-idle-s`` and is stopped (SIGTERM
to the pid in ``owner.json``, SIGKILL after 30 s) when each size is done, also on error.
``os.getloadavg()`` is recorded with every row. Run: ``python -m bench.owner``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from bench import synth
from bench.common import DEFAULT_MODEL_CACHE, md_table, percentile, write_result
from bench.proc import PeakRss, child_pids, cpu_s, rss_mb, rss_total_mb
from bench.speed import (
    CAPACITY_PER_SCOPE,
    Lane,
    System,
    client,
    filled_store,
    first_recall,
    memvault_system,
    timed_calls,
)

#: Goals this bench checks (see the module docstring).
GOAL_HANDSHAKE_MS = 300.0
GOAL_ADDED_P50_MS = 2.0
GOAL_RSS_RATIO = 1.3
FORWARDERS = 3
OWNER_STOP_TIMEOUT_S = 30.0
OWNER_INFO_WAIT_S = 10.0
#: What a forwarder runs before it touches the socket (``memvault.cli.serve`` -> ``cmd_serve``).
FORWARDER_START = ("import memvault.cli.serve, memvault.process.forwarder; from memvault.config import Settings; "
                   "Settings()")


def modes(mv: System, owner_idle_s: float) -> tuple[System, System]:
    """The adapters of the two modes: (direct ``serve --no-owner``, forwarded ``serve``).

    Both are ``mv`` (``bench.speed.memvault_system``, which runs ``--no-owner``: same fill,
    tools, arguments) under another name; the forwarded one drops ``--no-owner``, and its
    environment turns the owner on and sets its idle exit to ``owner_idle_s`` seconds.
    """
    if "--no-owner" not in mv.args:
        raise ValueError(f"expected the direct memvault adapter (serve --no-owner), got args {mv.args}")

    def forwarded_env(store: Path) -> dict[str, str]:
        return {**mv.env(store), "MEMVAULT_OWNER": "true", "MEMVAULT_OWNER_IDLE_S": f"{owner_idle_s:g}"}

    return (replace(mv, name="direct"),
            replace(mv, name="forwarded", args=[a for a in mv.args if a != "--no-owner"], env=forwarded_env))


# ---------------------------------------------------------------------------- processes


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def owner_pid(store: Path) -> int:
    """The pid in the data dir's ``owner.json``, waiting up to ``OWNER_INFO_WAIT_S`` for the file.

    Raises RuntimeError (naming the owner's log) when no owner wrote it in time.
    """
    from memvault.process.owner_files import owner_files

    files = owner_files(store)
    for _ in range(int(OWNER_INFO_WAIT_S / 0.05)):
        try:
            return int(json.loads(files.info.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            await anyio.sleep(0.05)
    raise RuntimeError(f"no owner.json in {store} after {OWNER_INFO_WAIT_S:g} s; the owner's log is {files.log}")


async def stop_owner(pid: int) -> str:
    """SIGTERM the owner ``pid`` (only if it still runs ``serve --owner``), SIGKILL after 30 s.

    Returns what happened: ``"gone"`` (it had exited), ``"stopped"`` or ``"killed"``.
    """
    if not _running(pid) or "--owner" not in _cmdline(pid):
        return "gone"
    os.kill(pid, signal.SIGTERM)
    for _ in range(int(OWNER_STOP_TIMEOUT_S / 0.1)):
        if not _running(pid):
            return "stopped"
        await anyio.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return "killed"


async def connect(stack: AsyncExitStack, system: System, store: Path) -> tuple[Any, float, int | None]:
    """Spawn and connect a client of ``system`` on ``store`` for the life of ``stack``.

    Returns (client, handshake seconds, the spawned server's pid or None when not found).
    """
    before = set(child_pids(must_contain=system.pid_marker))
    t0 = time.perf_counter()
    c = await stack.enter_async_context(client(system, store))
    seconds = time.perf_counter() - t0
    new = [p for p in child_pids(must_contain=system.pid_marker) if p not in before]
    if len(new) != 1:
        print(f"# owner: {system.name}: server pid not found ({new}); its RSS is not measured", file=sys.stderr)
    return c, seconds, new[0] if len(new) == 1 else None


async def run_s(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of running ``argv`` to its exit; raises CalledProcessError when it fails.

    CPU: user + system time of the children this process reaped meanwhile (only this one:
    the other children it has stay alive until the end).
    """
    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    await anyio.run_process(argv, env=env, check=True)
    return time.perf_counter() - t0, cpu() - c0


async def pings_ms(clients: list[Any], count: int) -> list[list[float]]:
    """``count`` MCP pings on each client, alternating call by call; round trips in ms, one list per client.

    The clients connect with the initialize handshake (``mode="legacy"``), where ping
    exists; the SDK's warning that later protocol revisions drop it is silenced here.
    """
    from mcp.shared.exceptions import MCPDeprecationWarning

    out: list[list[float]] = [[] for _ in clients]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        for i in range(count):
            for k in (range(len(clients)) if i % 2 == 0 else reversed(range(len(clients)))):
                t = time.perf_counter()
                await clients[k].send_ping()
                out[k].append((time.perf_counter() - t) * 1000)
    return out


async def handshake_s(system: System, store: Path) -> float:
    """Spawn -> ``initialize`` answered for one client of ``system`` on ``store``, in seconds (then closed)."""
    t0 = time.perf_counter()
    async with client(system, store):
        return time.perf_counter() - t0


# ---------------------------------------------------------------------------- measuring


def _spread(values_s: list[float]) -> dict[str, Any]:
    ms = [v * 1000 for v in values_s]
    return {"handshake_ms": statistics.median(ms), "handshake_min_ms": min(ms), "handshake_max_ms": max(ms),
            "handshakes_ms": ms}


def _lat(lane: Lane) -> dict[str, Any]:
    rec, rem = lane.recalls_ms, lane.remembers_ms
    return {"recall_p50_ms": percentile(rec, 50), "recall_p95_ms": percentile(rec, 95),
            "remember_p50_ms": percentile(rem, 50), "remember_p95_ms": percentile(rem, 95),
            "recalls": len(rec), "remembers": len(rem), "remember_statuses": lane.statuses}


async def measure_pair(direct: System, forwarded: System, direct_store: Path, forwarded_store: Path, n: int,
                       texts: set[str], queries: list[str], new: list[str], handshakes: int,
                       pings: int = 0) -> list[dict[str, Any]]:
    """Both modes on their copies of the filled store (module docstring); three rows: cold, direct, forwarded.

    Raises RuntimeError when a call fails, a first recall returns no filled sentence, or
    the owner does not start. The owner is stopped before returning, also on error.
    """
    load_before = os.getloadavg()
    opid: int | None = None
    try:
        async with AsyncExitStack() as stack:
            print(f"# owner: {n} memories: cold forwarder (starts the owner)", file=sys.stderr)
            fwd_a, cold_hs, pid_a = await connect(stack, forwarded, forwarded_store)
            opid = await owner_pid(forwarded_store)
            _, cold_recall = await first_recall(fwd_a, forwarded, queries[0], n, texts)
            cold = {"mode": "forwarded cold", "memories": n, **_spread([cold_hs]),
                    "first_recall_cold_ms": cold_recall * 1000, "loadavg": os.getloadavg()}

            print(f"# owner: {n} memories: {handshakes} handshakes per mode, alternating", file=sys.stderr)
            hs: dict[str, list[float]] = {"direct": [], "forwarded": []}
            floor: dict[str, list[tuple[float, float]]] = {"python -c pass": [], "forwarder imports + Settings()": []}
            env = forwarded.env(forwarded_store)
            for _ in range(handshakes):
                hs["direct"].append(await handshake_s(direct, direct_store))
                hs["forwarded"].append(await handshake_s(forwarded, forwarded_store))
                floor["python -c pass"].append(await run_s([sys.executable, "-c", "pass"], env))
                floor["forwarder imports + Settings()"].append(
                    await run_s([sys.executable, "-c", FORWARDER_START], env))

            print(f"# owner: {n} memories: {FORWARDERS} forwarded clients and 1 direct client", file=sys.stderr)
            fwd = [(fwd_a, pid_a)]
            for _ in range(FORWARDERS - 1):
                c, _, pid = await connect(stack, forwarded, forwarded_store)
                fwd.append((c, pid))
            dc, _, dpid = await connect(stack, direct, direct_store)
            _, direct_cold = await first_recall(dc, direct, queries[0], n, texts)
            for c, _ in fwd[1:]:
                await first_recall(c, forwarded, queries[0], n, texts)
            fpids = [opid, *(p for _, p in fwd if p is not None)]
            complete = len(fpids) == 1 + FORWARDERS
            await anyio.sleep(2.0)
            idle = {"direct": rss_mb(dpid) if dpid else math.nan,
                    "forwarded": rss_total_mb(fpids) if complete else math.nan}
            by_process = {"owner": rss_mb(opid), "forwarders": [rss_mb(p) for p in fpids[1:]]}

            print(f"# owner: {n} memories: latency loops, direct and forwarded alternating", file=sys.stderr)
            lanes = [Lane(dc, direct), Lane(fwd_a, forwarded)]
            # CPU of the measured client's own processes: the direct server; the owner and the
            # forwarder of the forwarded client (the other two forwarders are idle).
            cpu_pids = {"direct": [dpid] if dpid else [], "owner": [opid], "forwarder": [pid_a] if pid_a else []}
            with PeakRss(dpid or -1) as peak_d, PeakRss(fpids if complete else [-1]) as peak_f:
                c0 = {m: cpu_s(p) for m, p in cpu_pids.items()}
                ping = dict(zip(("direct", "forwarded"), await pings_ms([dc, fwd_a], pings), strict=True))
                c1 = {m: cpu_s(p) for m, p in cpu_pids.items()}
                await timed_calls(lanes, queries, new)
                c2 = {m: cpu_s(p) for m, p in cpu_pids.items()}
            n_calls = len(queries[1:]) + len(new)
            cpu = {m: {"ping": (c1[m] - c0[m]) * 1000 / max(1, pings), "call": (c2[m] - c1[m]) * 1000 / n_calls}
                   for m in cpu_pids}
            after = {"direct": rss_mb(dpid) if dpid else math.nan,
                     "forwarded": rss_total_mb(fpids) if complete else math.nan}
            load = os.getloadavg()
    finally:
        if opid is not None:
            stopped = await stop_owner(opid)
            if stopped != "stopped":
                print(f"# owner: owner pid {opid} {stopped}", file=sys.stderr)

    rows = [cold]
    for lane, peak, procs in ((lanes[0], peak_d, "direct server"),
                              (lanes[1], peak_f, f"owner + {FORWARDERS} forwarders")):
        mode = lane.system.name
        rows.append({"mode": mode, "memories": n, **_spread(hs[mode]), **_lat(lane),
                     "ping_p50_ms": percentile(ping[mode], 50), "ping_p95_ms": percentile(ping[mode], 95),
                     "pings": len(ping[mode]), "processes": procs,
                     "rss_idle_mb": idle[mode], "rss_peak_load_mb": peak.peak if peak.peak else math.nan,
                     "rss_after_load_mb": after[mode], "loadavg_before": load_before, "loadavg": load})
    rows[1]["first_recall_cold_ms"] = direct_cold * 1000
    rows[1]["cpu_ms_per_ping"], rows[1]["cpu_ms_per_call"] = cpu["direct"]["ping"], cpu["direct"]["call"]
    for who in ("owner", "forwarder"):
        rows[2][f"cpu_ms_per_ping_{who}"], rows[2][f"cpu_ms_per_call_{who}"] = cpu[who]["ping"], cpu[who]["call"]
    rows[2]["cpu_ms_per_ping"] = cpu["owner"]["ping"] + cpu["forwarder"]["ping"]
    rows[2]["cpu_ms_per_call"] = cpu["owner"]["call"] + cpu["forwarder"]["call"]
    rows[2]["rss_idle_by_process_mb"] = by_process
    rows[2]["owner_pid"] = opid
    rows[2]["start_floor_ms"] = {k: {"wall": statistics.median(w for w, _ in v) * 1000,
                                     "cpu": statistics.median(c for _, c in v) * 1000} for k, v in floor.items()}
    for name, d_ms, f_ms in (("ping", ping["direct"], ping["forwarded"]),
                             ("recall", lanes[0].recalls_ms, lanes[1].recalls_ms),
                             ("remember", lanes[0].remembers_ms, lanes[1].remembers_ms)):
        diffs = [f - d for f, d in zip(f_ms, d_ms, strict=True)]
        rows[2][f"{name}_paired_diff_median_ms"] = statistics.median(diffs) if diffs else math.nan
    return rows


def goals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goals (module docstring) at each size from the rows of ``measure_pair``: measured, target, met."""
    out = []
    for n in sorted({r["memories"] for r in rows}):
        by = {r["mode"]: r for r in rows if r["memories"] == n}
        d, f = by["direct"], by["forwarded"]

        def goal(name: str, value: float, target: float, unit: str, n: int = n) -> dict[str, Any]:
            return {"memories": n, "goal": name, "measured": value, "target": target, "unit": unit,
                    "met": bool(value <= target)}

        out += [goal("forwarded handshake, owner up (median)", f["handshake_ms"], GOAL_HANDSHAKE_MS, "ms"),
                goal("ping p50 added by forwarding (no server work)", f["ping_p50_ms"] - d["ping_p50_ms"],
                     GOAL_ADDED_P50_MS, "ms"),
                goal("recall p50 added by forwarding", f["recall_p50_ms"] - d["recall_p50_ms"], GOAL_ADDED_P50_MS, "ms"),
                goal("recall added, median of paired differences", f["recall_paired_diff_median_ms"],
                     GOAL_ADDED_P50_MS, "ms"),
                goal("remember p50 added by forwarding", f["remember_p50_ms"] - d["remember_p50_ms"],
                     GOAL_ADDED_P50_MS, "ms"),
                goal("remember added, median of paired differences", f["remember_paired_diff_median_ms"],
                     GOAL_ADDED_P50_MS, "ms"),
                goal(f"RSS owner + {FORWARDERS} forwarders / 1 direct server, idle",
                     f["rss_idle_mb"] / d["rss_idle_mb"], GOAL_RSS_RATIO, "x"),
                goal(f"RSS owner + {FORWARDERS} forwarders / 1 direct server, peak",
                     f["rss_peak_load_mb"] / d["rss_peak_load_mb"], GOAL_RSS_RATIO, "x")]
    return out


# ---------------------------------------------------------------------------- tables


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the rows of ``measure_pair`` (a cold row, then direct and forwarded, per size)."""
    def num(r: dict[str, Any], key: str, fmt: str = ".1f") -> str:
        v = r.get(key)
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    heads = ["mode", "memories", "handshake ms: median (min-max)", "ping p50 / p95 ms", "recall p50 / p95 ms",
             "remember p50 / p95 ms", "CPU ms per ping / per call",
             "RSS of", "RSS idle / peak MiB", "load 1-min"]
    body = []
    for r in rows:
        hs = num(r, "handshake_ms", ".0f")
        if len(r["handshakes_ms"]) > 1:
            hs += f" ({r['handshake_min_ms']:.0f}-{r['handshake_max_ms']:.0f})"
        if r["mode"] == "forwarded cold":
            body.append([r["mode"], r["memories"], hs + " (starts the owner)", "", "", "", "", "", "",
                         f"{r['loadavg'][0]:.2f}"])
            continue
        procs = r["processes"]
        if by := r.get("rss_idle_by_process_mb"):
            procs += f" ({by['owner']:.0f} + " + " + ".join(f"{v:.0f}" for v in by["forwarders"]) + ")"
        body.append([r["mode"], r["memories"], hs, f"{num(r, 'ping_p50_ms', '.2f')} / {num(r, 'ping_p95_ms', '.2f')}",
                     f"{num(r, 'recall_p50_ms')} / {num(r, 'recall_p95_ms')}",
                     f"{num(r, 'remember_p50_ms')} / {num(r, 'remember_p95_ms')}",
                     f"{num(r, 'cpu_ms_per_ping', '.2f')} / {num(r, 'cpu_ms_per_call', '.2f')}", procs,
                     f"{num(r, 'rss_idle_mb', '.0f')} / {num(r, 'rss_peak_load_mb', '.0f')}",
                     f"{r['loadavg'][0]:.2f}"])
    return md_table(heads, body)


def goal_table(gs: list[dict[str, Any]]) -> str:
    """Markdown table of ``goals``."""
    def fmt(g: dict[str, Any], v: float) -> str:
        return f"{v:.2f}" if g["unit"] == "x" else f"{v:+.1f} ms" if "added" in g["goal"] else f"{v:.0f} ms"

    return md_table(["memories", "goal", "measured", "target", "met"],
                    [[g["memories"], g["goal"], fmt(g, g["measured"]),
                      f"<= {g['target']:g}{' ms' if g['unit'] == 'ms' else ' x'}",
                      "yes" if g["met"] else "no"] for g in gs])


# ---------------------------------------------------------------------------- driver


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure both modes at every size in ``args.sizes``; print the tables; write JSON; return the payload."""
    if max(args.sizes) >= CAPACITY_PER_SCOPE:
        raise SystemExit(f"--sizes must stay below {CAPACITY_PER_SCOPE:,} (the capacity the bench server gets)")
    if args.handshakes < 1:
        raise SystemExit("--handshakes must be at least 1")
    mv = memvault_system(args.model_cache, progress=not args.no_progress)
    direct, forwarded = modes(mv, args.owner_idle_s)
    rows: list[dict[str, Any]] = []
    fills: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="memvault-owner-") as tmp:
        questions = synth.Questions(seed=1)  # one stream: no question is asked twice in this run
        for n in args.sizes:
            texts = synth.sentences(n + args.remembers, seed=args.seed)
            filled, new = texts[:n], texts[n:]  # new: continue the same stream, all unseen
            qs = questions.take(args.recalls + 5)
            base, stores = Path(tmp) / f"filled-n{n}", {m: Path(tmp) / f"{m}-n{n}" for m in ("direct", "forwarded")}
            print(f"# owner: {n} memories: fill", file=sys.stderr)
            if n:
                fills[n] = await filled_store(mv, filled, args.seed, base, args.fill_cache)
            else:
                base.mkdir()
            for store in stores.values():
                await anyio.to_thread.run_sync(lambda b=base, s=store: shutil.copytree(b, s, symlinks=True))
            shutil.rmtree(base, ignore_errors=True)
            rows += await measure_pair(direct, forwarded, stores["direct"], stores["forwarded"], n, set(filled),
                                       qs, new, args.handshakes, args.pings)
            for store in stores.values():
                shutil.rmtree(store, ignore_errors=True)
    gs = goals(rows)
    payload = {"protocol": __doc__.strip(), "driver": "MCP stdio, mcp SDK Client, bench.speed.timed_calls",
               "modes": {s.name: " ".join([Path(s.command).name, *s.args]) for s in (direct, forwarded)},
               "model_id": direct.info.get("model_id"), "seed": args.seed, "handshakes": args.handshakes,
               "pings": args.pings, "owner_idle_s": args.owner_idle_s, "fills": fills, "results": rows, "goals": gs}
    path = write_result("owner", payload)
    print(table(rows))
    for r in rows:
        if fl := r.get("start_floor_ms"):
            print(f"\n{r['memories']} memories, forwarder start floor (no socket, no MCP; median ms, wall / CPU): "
                  + "; ".join(f"{k} {v['wall']:.0f} / {v['cpu']:.0f}" for k, v in fl.items()))
    print("\nGoals:\n")
    print(goal_table(gs))
    print(f"\nJSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10000],
                   help="comma-separated store sizes (default 10000; 1000 for a quick run)")
    p.add_argument("--recalls", type=int, default=200, help="timed recalls per mode")
    p.add_argument("--remembers", type=int, default=100, help="timed remembers per mode")
    p.add_argument("--pings", type=int, default=200, help="timed MCP pings per mode (transport alone)")
    p.add_argument("--handshakes", type=int, default=5, help="spawns per mode for the handshake (default 5)")
    p.add_argument("--owner-idle-s", type=float, default=10.0,
                   help="MEMVAULT_OWNER_IDLE_S of the owner (it is stopped at the end anyway)")
    p.add_argument("--seed", type=int, default=0, help="seed of the filled and new sentences (bench.synth)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--fill-cache", type=Path, help="keep filled stores here and copy them per run (no refill)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar while filling")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.owner", description=__doc__.splitlines()[0])
    add_args(p)
    args = p.parse_args(argv)
    anyio.run(run, args)


if __name__ == "__main__":
    main()
