"""kill -9 under concurrent writes: every acknowledged write survives, whole, and the server comes back.

Each cycle, on one data dir that grows from cycle to cycle, in one of three modes (taken
in turn):

- ``owner`` (the default way memvault runs): ``--writers`` MCP SDK stdio clients, each
  its own ``memvault serve`` (a forwarder), all relayed to the data dir's one owner
  process. At a random moment the forwarders are frozen (SIGSTOP, so none can react),
  the owner (pid from ``owner.json``) is killed with SIGKILL, then the forwarders;
- ``owner-only``: the same, but only the owner is killed. The forwarders live on: they
  start a new owner, answer the write that was in flight "may or may not have been
  applied" (never applying it twice) and carry on; the writers keep writing until each
  has had a write acknowledged by the new owner, then stop;
- ``no-owner``: one ``memvault serve --no-owner`` process, ``--writers`` concurrent
  writers on its one session; it is killed with SIGKILL.

Each writer calls ``remember`` (force=true) with distinct numbered facts (a synthetic
sentence plus a unique made-up word) as fast as it is answered. A write is
*acknowledged* when its reply came back with an id (status stored or reinforced).

After the kill (no process of the data dir left, except in owner-only mode), from
outside: ``PRAGMA integrity_check``; every acknowledged write of every cycle so far is a
row, active, with its content (else *lost*); no content is stored twice; the index as
the kill left it (rows still pending, rows without a point, points without a row:
recorded, the next start repairs them). Then a restart (a new client in the same mode):
it must answer a ping and a recall (else *no answer after restart*), and each write
acknowledged in this cycle must come back from ``recall`` with its exact content as the
query (else *not found by recall*), plus a sample of earlier cycles' writes. Then a clean
stop (SIGTERM) and, offline, SQLite against the index: every active row has its point
and every point its row (else an *index mismatch*), and the integrity check again.

Run: ``python -m bench.reliability crash [--cycles 20] [--writers 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.exceptions import MCPDeprecationWarning

from bench import synth
from bench.common import md_table
from bench.reliability import spawn, store
from bench.reliability.words import codeword

MODES = ("owner", "no-owner", "owner-only")
EARLIER_SAMPLE = 20


@dataclass
class Writes:
    """What the writers of one cycle sent and what came back."""

    acked: dict[str, str] = field(default_factory=dict)  # id -> content
    statuses: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    refused: list[str] = field(default_factory=list)  # error replies (text)
    unanswered: int = 0  # sent, then the connection died
    acked_after_kill: int = 0


class Cycle:
    """One kill cycle on ``data_dir`` (see the module docstring)."""

    def __init__(self, n: int, mode: str, data_dir: Path, model_cache: Path, work: Path, writers: int,
                 kill_window: tuple[float, float], rng: random.Random) -> None:
        self.n, self.mode, self.data_dir, self.work = n, mode, data_dir, work
        self.writers, self.kill_window, self.rng = writers, kill_window, rng
        self.env = spawn.server_env(data_dir, model_cache, user="crash", owner=mode != "no-owner",
                                    capacity_per_scope=1_000_000)
        self.writes = Writes()
        self.killed = anyio.Event()
        self.all_writing = anyio.Event()  # every writer had a write acknowledged
        self.all_after_kill = anyio.Event()  # ... and again after the kill (owner-only mode)
        self.stop = anyio.Event()
        self.kill_info: dict[str, Any] = {}
        self._per_writer_acks = [0] * writers
        self._after_kill_acks = [0] * writers
        self._texts = synth.sentences(20000, seed=n)

    def client(self) -> Any:
        return spawn.sdk_client(self.env, cwd=self.work, no_owner=self.mode == "no-owner",
                                client_name=f"crash-writer-{self.n}")

    def _content(self, w: int, i: int) -> str:
        base = self._texts[(w * 5000 + i) % len(self._texts)]
        return f"{base} Crash probe {self.n}.{w}.{i}, ticket {codeword(self.rng)}."

    async def _write_loop(self, client: Any, w: int) -> None:
        i = 0
        while not self.stop.is_set():
            content = self._content(w, i)
            i += 1
            self.writes.attempts += 1
            try:
                res = await client.call_tool("remember", {"content": content, "force": True})
            except Exception:
                self.writes.unanswered += 1
                return  # the connection is gone
            if res.is_error or not res.structured_content:
                self.writes.refused.append(spawn.result_text(res)[:300])
                continue
            sc = res.structured_content
            st = str(sc.get("status"))
            self.writes.statuses[st] = self.writes.statuses.get(st, 0) + 1
            if st in ("stored", "reinforced") and sc.get("id"):
                self.writes.acked[sc["id"]] = content
                self._per_writer_acks[w] += 1
                if min(self._per_writer_acks):
                    self.all_writing.set()
                if self.killed.is_set():
                    self._after_kill_acks[w] += 1
                    self.writes.acked_after_kill += 1
                    if min(self._after_kill_acks):
                        self.all_after_kill.set()

    async def _writer(self, w: int, client: Any | None = None) -> None:
        """One writer: its own process (owner modes) or a task on the shared session (no-owner)."""
        try:
            if client is not None:
                await self._write_loop(client, w)
                return
            async with self.client() as c:
                await self._write_loop(c, w)
        except Exception as exc:  # the process was killed under the client
            self.kill_info.setdefault("writer_exits", []).append(type(exc).__name__)

    async def _killer(self) -> None:
        with anyio.fail_after(300):
            await self.all_writing.wait()  # every writer is writing (the model is loaded)
        delay = self.rng.uniform(*self.kill_window)
        await anyio.sleep(delay)
        procs = spawn.store_processes(self.data_dir)
        owner = spawn.owner_pid_now(self.data_dir)
        others = [p for p, kind in procs.items() if kind != "owner"]
        acked_before = len(self.writes.acked)
        if self.mode == "owner":
            killed = spawn.kill9([owner] if owner else [], freeze_first=others)
        elif self.mode == "owner-only":
            killed = spawn.kill9([owner] if owner else [])
        else:
            killed = spawn.kill9(others)
        self.killed.set()
        self.kill_info.update({"delay_s": round(delay, 3), "owner_pid": owner, "killed": killed,
                               "processes": {str(p): k for p, k in procs.items()}, "acked_at_kill": acked_before})
        if self.mode == "owner-only":
            # the forwarders start a new owner; go on until every writer got a write through it
            with anyio.move_on_after(120):
                await self.all_after_kill.wait()
            await anyio.sleep(0.5)
            self.stop.set()

    async def write_and_kill(self) -> None:
        """Writers and the killer; returns when every writer has stopped."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._killer)
            if self.mode == "no-owner":
                async def shared() -> None:
                    try:
                        async with self.client() as c:
                            async with anyio.create_task_group() as inner:
                                for w in range(self.writers):
                                    inner.start_soon(self._writer, w, c)
                    except Exception as exc:
                        self.kill_info.setdefault("writer_exits", []).append(type(exc).__name__)
                tg.start_soon(shared)
            else:
                for w in range(self.writers):
                    tg.start_soon(self._writer, w)


async def recall_finds(client: Any, items: dict[str, str]) -> list[str]:
    """Ids among ``items`` (id -> content) that ``recall(query=content)`` does not return."""
    missing = []
    for mid, content in items.items():
        res = await client.call_tool("recall", {"query": content, "k": 5})
        ids = [m["id"] for m in (res.structured_content or {}).get("memories", [])] if not res.is_error else []
        if mid not in ids:
            missing.append(mid)
    return missing


async def run_cycle(c: Cycle, all_acked: dict[str, str]) -> dict[str, Any]:
    """Write, kill, check, restart, check, stop, check (module docstring); one row of the report."""
    t0 = time.perf_counter()
    await c.write_and_kill()
    row: dict[str, Any] = {"cycle": c.n, "mode": c.mode, **c.kill_info}
    w = c.writes
    all_acked.update(w.acked)
    if c.mode == "owner-only":
        row["stop_after_writes"] = await spawn.stop_store(c.data_dir)
    left = spawn.store_processes(c.data_dir)
    if left:  # nothing may outlive the kill; record it and clear the way
        row["stray_processes"] = {str(p): k for p, k in left.items()}
        spawn.kill9(list(left))
        await spawn.wait_gone(list(left))
    row["integrity_after_kill"] = store.integrity(c.data_dir)
    rows = store.memory_rows(c.data_dir)
    lost = [i for i, content in all_acked.items()
            if i not in rows or rows[i]["status"] != "active" or rows[i]["content"] != content]
    contents = [r["content"] for r in rows.values()]
    raw = store.index_check(c.data_dir)
    row.update({"attempts": w.attempts, "acked": len(w.acked), "statuses": w.statuses, "refused": len(w.refused),
                "refused_texts": sorted(set(w.refused))[:5], "unanswered": w.unanswered,
                "acked_after_kill": w.acked_after_kill, "rows": len(rows), "lost": lost,
                # in-flight writes that were committed although no reply said so (cumulative)
                "applied_unacknowledged": len(set(rows) - set(all_acked)),
                "duplicates": len(contents) - len(set(contents)),
                "after_kill_index": {"pending": len(raw["pending"]), "rows_without_point": len(raw["missing"]),
                                     "points_without_row": len(raw["orphans"])}})
    earlier = [i for i in all_acked if i not in w.acked]
    sample = dict((i, all_acked[i]) for i in c.rng.sample(earlier, min(EARLIER_SAMPLE, len(earlier))))
    try:
        with anyio.fail_after(300):
            async with c.client() as cl:
                with warnings.catch_warnings():  # ping exists under mode="legacy", which this client uses
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await cl.send_ping()
                row["not_found_by_recall"] = await recall_finds(cl, w.acked)
                row["earlier_not_found_by_recall"] = await recall_finds(cl, sample)
                row["earlier_checked"] = len(sample)
        row["answered_after_restart"] = True
    except Exception as exc:
        row["answered_after_restart"] = False
        row["restart_error"] = f"{type(exc).__name__}: {exc}"[:300]
        row.setdefault("not_found_by_recall", list(w.acked))
    row["stop"] = await spawn.stop_store(c.data_dir)
    healed = store.index_check(c.data_dir)
    row["index_mismatch"] = {"rows_without_point": healed["missing"], "points_without_row": healed["orphans"],
                             "pending": healed["pending"]}
    row["integrity_after_restart"] = store.integrity(c.data_dir)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def summarize(rows: list[dict[str, Any]], total_acked: int) -> dict[str, Any]:
    """Totals over the cycles, per mode and overall."""
    def tot(rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "cycles": len(rs),
            "writes_attempted": sum(r["attempts"] for r in rs),
            "writes_acknowledged": sum(r["acked"] for r in rs),
            "writes_lost": max((len(r["lost"]) for r in rs), default=0),
            "not_found_by_recall": sum(len(r["not_found_by_recall"]) + len(r.get("earlier_not_found_by_recall", []))
                                       for r in rs),
            "integrity_failures": sum((r["integrity_after_kill"] != "ok") + (r["integrity_after_restart"] != "ok")
                                      for r in rs),
            "index_mismatches": sum(len(r["index_mismatch"]["rows_without_point"])
                                    + len(r["index_mismatch"]["points_without_row"]) for r in rs),
            "no_answer_after_restart": sum(not r["answered_after_restart"] for r in rs),
            "duplicates": max((r["duplicates"] for r in rs), default=0),
            "unknown_outcome": sum(r["unanswered"] + r["refused"] for r in rs),
            "pending_after_kill": sum(r["after_kill_index"]["pending"] for r in rs),
            "rows_without_point_after_kill": sum(r["after_kill_index"]["rows_without_point"] for r in rs),
            "stray_processes": sum(bool(r.get("stray_processes")) for r in rs),
        }

    out = {m: tot([r for r in rows if r["mode"] == m]) for m in MODES if any(r["mode"] == m for r in rows)}
    out["all"] = tot(rows)
    # lost is cumulative (every acked write so far is checked each cycle): the last cycle's count is the total
    out["all"]["writes_lost"] = len(rows[-1]["lost"]) if rows else 0
    out["all"]["writes_acknowledged_total"] = total_acked
    out["all"]["applied_unacknowledged"] = rows[-1]["applied_unacknowledged"] if rows else 0
    return out


def table(summary: dict[str, Any]) -> str:
    """Markdown: one row per mode and the total."""
    heads = ["mode", "cycles", "writes acked", "lost", "not found by recall", "integrity failures",
             "index mismatches", "no answer after restart", "unknown outcome", "pending after kill"]
    keys = ["cycles", "writes_acknowledged", "writes_lost", "not_found_by_recall", "integrity_failures",
            "index_mismatches", "no_answer_after_restart", "unknown_outcome", "pending_after_kill"]
    return md_table(heads, [[m, *(s[k] for k in keys)] for m, s in summary.items()])


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """All cycles on one data dir under ``tmp``; returns the payload (summary, cycles, ok)."""
    rng = random.Random(args.seed)
    data_dir, work = tmp / "crash-data", tmp / "crash-work"
    work.mkdir(parents=True, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    if bad := [m for m in modes if m not in MODES]:
        raise SystemExit(f"unknown crash mode(s) {bad}; choose from {', '.join(MODES)}")
    rows: list[dict[str, Any]] = []
    all_acked: dict[str, str] = {}
    try:
        for n in range(args.cycles):
            mode = modes[n % len(modes)]
            c = Cycle(n, mode, data_dir, args.model_cache, work, args.writers, (args.kill_min_s, args.kill_max_s), rng)
            print(f"# crash: cycle {n + 1}/{args.cycles} ({mode})", file=sys.stderr, flush=True)
            row = await run_cycle(c, all_acked)
            rows.append(row)
            print(f"#   acked {row['acked']}, lost {len(row['lost'])}, not found "
                  f"{len(row['not_found_by_recall'])}, mismatches "
                  f"{len(row['index_mismatch']['rows_without_point']) + len(row['index_mismatch']['points_without_row'])}"
                  f", integrity {row['integrity_after_kill']}/{row['integrity_after_restart']}, {row['seconds']} s",
                  file=sys.stderr, flush=True)
    finally:
        await spawn.stop_store(data_dir)
    summary = summarize(rows, len(all_acked))
    a = summary["all"]
    ok = (a["writes_lost"] == 0 and a["not_found_by_recall"] == 0 and a["integrity_failures"] == 0
          and a["index_mismatches"] == 0 and a["no_answer_after_restart"] == 0 and a["duplicates"] == 0)
    return {"protocol": __doc__.strip(), "writers": args.writers, "modes": modes, "seed": args.seed,
            "kill_window_s": [args.kill_min_s, args.kill_max_s], "summary": summary, "ok": ok, "cycles": rows,
            "table": table(summary)}


def add_args(p: argparse.ArgumentParser) -> None:
    """Flags of the crash run."""
    p.add_argument("--cycles", type=int, help="kill cycles (default 20; --quick: 2)")
    p.add_argument("--writers", type=int, help="concurrent writer clients (default 3; --quick: 2)")
    p.add_argument("--modes", default=",".join(MODES), help=f"modes taken in turn (default {','.join(MODES)})")
    p.add_argument("--kill-min-s", type=float, help="earliest kill after every writer's first ack (default 0.5)")
    p.add_argument("--kill-max-s", type=float, help="latest kill (default 5; --quick: 1.5)")


def defaults(args: argparse.Namespace) -> None:
    """Fill the flags left unset, smaller under ``--quick``."""
    q = args.quick
    for name, full, quick in (("cycles", 20, 2), ("writers", 3, 2), ("kill_min_s", 0.5, 0.3),
                              ("kill_max_s", 5.0, 1.5)):
        if getattr(args, name, None) is None:
            setattr(args, name, quick if q else full)
