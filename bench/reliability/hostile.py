"""Hostile inputs to every tool, prompt and resource, as raw JSON-RPC lines: answered, alive, nothing half-written.

One ``memvault serve`` (a forwarder of the data dir's owner, the default; ``--no-owner``
for a single process) is driven by a raw JSON-RPC client (``bench.reliability.rpc``:
the MCP SDK's client cannot send lone surrogates, NaN or broken lines). The cases come
from what the server lists (``bench.reliability.hostile_cases``): every argument of
every tool in ``tools/list`` with the hostile values of its type (empty, MBs, NUL, lone
surrogates, control and bidi characters, zero-width, confusables, SQL / FTS / Qdrant
filter syntax, traversal, format strings; negative / NaN / inf / 1e999 / 10**40 numbers;
wrong types; unknown enum values; 100k-item and 100k-deep arrays and objects), missing
and unknown arguments, the prompts' and resource templates' parameters, unlisted URIs,
``index_docs`` paths that escape (traversal, symlinks out, a FIFO, /dev/zero, /proc),
and protocol-level lines (not JSON, invalid UTF-8, odd ids, a batch, a 20 MB line).

For each case, in order:
- *answered*: a request whose id the server can read gets a reply within ``--timeout``
  (a ping follows each case; once it is answered and the server's processes then use
  no CPU for ``--idle-s`` seconds, the case's line was dropped and waiting stops):
  a result, or an error with a reason. A *fault* is: no reply; an error text that is
  empty or only the SDK's generic wrapper (``Error executing tool remember``, i.e. an
  unexpected exception whose reason stayed on the server); a generic JSON-RPC
  ``Internal error``; or a Python internal leaking out as the reason (a traceback,
  ``codec can't encode``, ``object has no attribute``, ...). A validation error naming
  the argument and what is allowed is a reason, not a fault;
- *nothing half-written*: the row count of every SQLite table is unchanged when the
  input was refused (an error, a ``declined`` status or no reply);
- *alive*: a ping and a recall are answered right after, and the owner process is the
  same (a forwarder would hide an owner's death by starting a new one). A death is
  counted, and the client restarted to go on.

At the end, offline: ``PRAGMA integrity_check`` and SQLite against the index (every
active row has its point, every point its row), and the Python tracebacks in the owner's
log are counted.

Run: ``python -m bench.reliability hostile [--quick] [--hostile-limit N] [--no-owner]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import md_table
from bench.reliability import spawn, store
from bench.reliability.hostile_cases import (
    Case,
    make_traps,
    path_cases,
    prompt_cases,
    protocol_cases,
    resource_cases,
    tool_cases,
)
from bench.reliability.rpc import RawClient

#: Valid base arguments of the tools this file knows; a new tool gets values from its schema.
BASES: dict[str, dict[str, Any]] = {
    "remember": {"content": "Hostile sweep: the billing service deploys on Tuesdays", "force": True},
    "recall": {"query": "billing service"},
    "forget": {"ids": ["00000000-0000-4000-8000-000000000000"], "dry_run": True},
    "search_docs": {"query": "build from source"},
    "get_profile": {},
    "set_task_state": {"task_id": "hostile-task", "state": {"step": 1}},
    "get_task_state": {},
}
#: Base arguments a hostile value of the key replaces (the tool refuses both at once).
EXCLUSIVE = {("set_task_state", "patch"): ("state",)}
#: Texts that are an unexpected exception's wrapper, with nothing after it.
_GENERIC = re.compile(r"^(?:(?:Error executing tool|Error reading resource|Error getting prompt|Error rendering prompt)"
                      r"\s+\S*\s*:?\s*)+$|^(?:Internal (?:server )?error\.?)?$", re.I)
#: Python internals that are not a reason for a person.
_INTERNAL = re.compile(r"Traceback \(most recent|codec can't|object has no attribute|'NoneType'|sqlite3\.|"
                       r"OperationalError|IntegrityError|RecursionError|maximum recursion depth|unhashable type|"
                       r"is not subscriptable|panicked at|\[Errno \d+\]|Exception Group|TaskGroup")


def classify(case: Case, reply: dict[str, Any] | None) -> tuple[str, str, str]:
    """(outcome, fault reason or "", the reply's text): outcome accepted / refused / fault / unanswered-ok."""
    if reply is None:
        if case.expect_reply:
            return "fault", "no reply", ""
        return "no reply (none due)", "", ""
    if "error" in reply:
        msg = str((reply.get("error") or {}).get("message") or "")
        if _GENERIC.match(msg.strip()):
            return "fault", "JSON-RPC error without a reason", msg
        if _INTERNAL.search(msg):
            return "fault", "internal error text", msg
        return "refused", "", msg
    res = reply.get("result") or {}
    text = " ".join(str(c.get("text", "")) for c in res.get("content") or [] if isinstance(c, dict))
    if res.get("isError"):
        if _GENERIC.match(text.strip()):
            return "fault", "error without a reason (tool name only)", text
        if _INTERNAL.search(text):
            return "fault", "internal error text", text
        return "refused", "", text
    sc = res.get("structuredContent") or {}
    if isinstance(sc, dict) and sc.get("status") == "declined":
        return "refused", "", str(sc.get("reason", ""))
    return "accepted", "", text or json.dumps(res)[:300]


class Server:
    """The raw client of the current server process, restarted after a death."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path, data_dir: Path,
                 owner: bool) -> None:
        self.argv, self.env, self.cwd, self.log, self.data_dir, self.owner = argv, env, cwd, log, data_dir, owner
        self.c: RawClient | None = None
        self.info: dict[str, Any] = {}

    async def start(self) -> RawClient:
        self.c = RawClient(self.argv, self.env, self.cwd, self.log)
        await self.c.__aenter__()
        self.info = await self.c.initialize()
        return self.c

    async def stop(self) -> None:
        if self.c is not None:
            await self.c.__aexit__(None, None, None)
            self.c = None

    def owner_pid(self) -> int | None:
        return spawn.owner_pid_now(self.data_dir) if self.owner else None

    def cpu_ticks(self) -> int:
        """CPU time (clock ticks) used so far by the server processes of the data dir."""
        return sum(spawn.cpu_ticks(p) for p in spawn.store_processes(self.data_dir))

    async def send_case(self, line: bytes, rid: int, timeout_s: float, idle_s: float) -> tuple[dict | None, str]:
        """Send a case's request and wait for its reply: (reply or None, why none).

        Gives up after ``timeout_s``, or earlier once the server has answered a ping sent
        right after the case and then used no CPU for ``idle_s`` (it dropped the line: a
        reply would need work).
        """
        assert self.c is not None
        ev = self.c.expect(rid)
        pid_ = self.c.next_id()
        pev = self.c.expect(pid_)
        if not await self.c.send_line(line):
            self.c.take(rid), self.c.take(pid_)
            return None, "the server no longer reads"
        await self.c.send_line(json.dumps({"jsonrpc": "2.0", "id": pid_, "method": "ping"}).encode())
        t0 = time.monotonic()
        last, still = self.cpu_ticks(), time.monotonic()
        why = f"no reply within {timeout_s:g} s"
        while time.monotonic() - t0 < timeout_s:
            with anyio.move_on_after(0.5):
                await ev.wait()
            if ev.is_set():
                break
            ticks = self.cpu_ticks()
            if ticks != last:
                last, still = ticks, time.monotonic()
            elif pev.is_set() and time.monotonic() - still >= idle_s:
                why = f"no reply; the server answered the ping sent after it and then stayed idle for {idle_s:g} s"
                break
        self.c.take(pid_)
        reply = self.c.take(rid)
        if reply is None and self.c.eof.is_set():
            why = "no reply; the server's stdout closed (it died)"
        return reply, "" if reply else why

    async def alive(self) -> tuple[bool, str]:
        """A ping and a recall answered (with a result, not an error) on the current connection."""
        assert self.c is not None
        ping = await self.c.request("ping", {}, 30)
        if not ping or "result" not in ping:
            return False, f"ping: {ping}"
        rec = await self.c.request("tools/call", {"name": "recall", "arguments": {"query": "billing service"}}, 60)
        if not rec or "result" not in rec or rec["result"].get("isError"):
            return False, f"recall: {json.dumps(rec)[:300] if rec else None}"
        return True, ""


def all_cases(tools: list[dict[str, Any]], prompts: list[dict[str, Any]], resources: list[str], templates: list[str],
              docs: Path, plain: Path, traps: Path) -> list[Case]:
    """Every case, tools first (in ``tools/list`` order)."""
    cases: list[Case] = []
    for t in tools:
        base = dict(BASES.get(t["name"], {}))
        if t["name"] == "index_docs":
            base = {"paths": [str(plain)]}
        for c in tool_cases(t, base):
            prop = c.name.split(":", 1)[0]
            if (t["name"], prop) in EXCLUSIVE:
                drop = EXCLUSIVE[(t["name"], prop)]
                c = next(x for x in tool_cases(t, {k: v for k, v in base.items() if k not in drop}) if x.name == c.name)
            cases.append(c)
    cases += path_cases(docs, plain, traps)
    for p in prompts:
        cases += prompt_cases(p)
    cases += resource_cases(resources, templates)
    cases += protocol_cases()
    return cases


def pick(cases: list[Case], limit: int | None) -> list[Case]:
    """``limit`` cases spread evenly over the list (every group keeps some), or all of them.

    A lone surrogate in ``remember``'s content, the 100k-deep params line and the FIFO are
    kept whenever they are in ``cases`` (each found a fault once).
    """
    if not limit or limit >= len(cases):
        return cases
    must = [i for i, c in enumerate(cases) if c.name in ("content: lone high surrogate", "100k-deep params", "FIFO")]
    chosen = set(must[:limit])
    rest = [i for i in range(len(cases)) if i not in chosen]
    want = limit - len(chosen)
    chosen |= {rest[int(k * len(rest) / want)] for k in range(want)} if want > 0 else set()
    return [cases[i] for i in sorted(chosen)]


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The sweep (module docstring); returns the payload."""
    data_dir, work, docs = tmp / "hostile-data", tmp / "hostile-work", tmp / "docs"
    plain, traps = docs / "plain", docs / "traps"
    work.mkdir(parents=True, exist_ok=True)
    plain.mkdir(parents=True)
    (plain / "guide.md").write_text("# Guide\n\n## Build from source\n\nRun make, then make install.\n")
    (plain / "notes.txt").write_text("The billing service deploys on Tuesdays.\n")
    make_traps(traps)
    owner = not args.no_owner
    env = spawn.server_env(data_dir, args.model_cache, user="hostile", owner=owner,
                           docs_allowed_dirs=json.dumps([str(docs)]))
    argv = [spawn.MEMVAULT, "serve", *([] if owner else ["--no-owner"]), "--log-level", "WARNING"]
    srv = Server(argv, env, work, tmp / "serve-stderr.log", data_dir, owner)
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    try:
        c = await srv.start()
        lists = {}
        for method, key in (("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources"),
                            ("resources/templates/list", "resourceTemplates")):
            r = await c.request(method, {}, 120)
            lists[key] = (r or {}).get("result", {}).get(key, [])
        # something to find, and the model loaded, before the sweep
        for text in ("The billing service deploys on Tuesdays", "Releases are cut from the main branch"):
            r = await c.request("tools/call", {"name": "remember", "arguments": {"content": text, "force": True}}, 300)
            if not r or r.get("result", {}).get("isError", True):
                raise RuntimeError(f"baseline remember failed: {r}")
        cases = all_cases(lists["tools"], lists["prompts"], [r["uri"] for r in lists["resources"]],
                          [t["uriTemplate"] for t in lists["resourceTemplates"]], docs, plain, traps)
        total_generated = len(cases)
        if args.hostile_match:
            pat = re.compile(args.hostile_match)
            cases = [c for c in cases if pat.search(f"{c.target} / {c.name}")]
        cases = pick(cases, args.hostile_limit)
        print(f"# hostile: {len(cases)} cases of {total_generated} ({len(lists['tools'])} tools, "
              f"{len(lists['prompts'])} prompts, {len(lists['resources'])} resources, "
              f"{len(lists['resourceTemplates'])} templates)", file=sys.stderr, flush=True)
        for n, case in enumerate(cases):
            if n % 50 == 0:
                print(f"#   case {n + 1}/{len(cases)}", file=sys.stderr, flush=True)
            assert srv.c is not None
            before = store.table_counts(data_dir)
            opid = srv.owner_pid()
            rid = srv.c.next_id()
            line = case.line(rid)
            tc = time.perf_counter()
            why = ""
            if case.expect_reply:
                reply, why = await srv.send_case(line, rid, args.timeout, args.idle_s)
            else:
                await srv.c.send_line(line)
                await anyio.sleep(0.2)
                reply = None
            seconds = time.perf_counter() - tc
            outcome, fault, text = classify(case, reply)
            if why and outcome == "fault":
                fault = why
            after = store.table_counts(data_dir)
            partial = outcome != "accepted" and after != before
            alive, why = await srv.alive() if srv.c.alive else (False, "the server's stdout closed")
            owner_died = owner and opid is not None and srv.owner_pid() != opid
            row = {"group": case.group, "target": case.target, "case": case.name, "outcome": outcome, "fault": fault,
                   "text": text[:500], "seconds": round(seconds, 3), "line_bytes": len(line),
                   "partial_write": partial, "alive": alive and not owner_died}
            if partial:
                row["counts"] = {k: [before.get(k), after.get(k)] for k in set(before) | set(after)
                                 if before.get(k) != after.get(k)}
            if not alive or owner_died:
                row["death"] = why or f"the owner (pid {opid}) died"
                print(f"#   death after {case.target} / {case.name}: {row['death']}", file=sys.stderr, flush=True)
                await srv.stop()
                await spawn.stop_store(data_dir)
                await srv.start()
            results.append(row)
        bad_lines = len(srv.c.bad_lines) if srv.c else 0
    finally:
        await srv.stop()
        await spawn.stop_store(data_dir)
    integ = store.integrity(data_dir)
    idx = store.index_check(data_dir)
    log = data_dir / "owner.log"
    tracebacks = log.read_text(errors="replace").count("Traceback (most recent call last)") if log.exists() else 0
    serve_log = (tmp / "serve-stderr.log").read_text(errors="replace")
    tracebacks += serve_log.count("Traceback (most recent call last)")

    faults = [r for r in results if r["outcome"] == "fault"]
    deaths = [r for r in results if "death" in r]
    partials = [r for r in results if r["partial_write"]]
    groups: dict[str, dict[str, int]] = {}
    for r in results:
        g = groups.setdefault(r["group"], {"cases": 0, "accepted": 0, "refused": 0, "faults": 0, "deaths": 0,
                                           "partial writes": 0})
        g["cases"] += 1
        g["accepted"] += r["outcome"] == "accepted"
        g["refused"] += r["outcome"] in ("refused", "no reply (none due)")
        g["faults"] += r["outcome"] == "fault"
        g["deaths"] += "death" in r
        g["partial writes"] += r["partial_write"]
    heads = ["group", "cases", "accepted", "refused", "faults", "deaths", "partial writes"]
    body = [[k, *v.values()] for k, v in groups.items()]
    body.append(["**all**", len(results), *(sum(v[h] for v in groups.values()) for h in heads[2:])])
    summary = {"cases": len(results), "cases_generated": total_generated, "faults": len(faults),
               "deaths": len(deaths), "partial_writes": len(partials), "integrity": integ,
               "index_mismatches": len(idx["missing"]) + len(idx["orphans"]), "tracebacks_in_logs": tracebacks,
               "server_lines_not_json": bad_lines, "seconds": round(time.perf_counter() - t0, 1),
               "mode": "owner" if owner else "no-owner"}
    notes = [f"\nFaults ({len(faults)}):"] + [
        f"- {r['target']} / {r['case']}: {r['fault']}" + (f" - {r['text'][:160]!r}" if r["text"] else "")
        for r in faults]
    notes += [f"\nDeaths: {len(deaths)}; partial writes: {len(partials)}; integrity {integ}; index mismatches "
              f"{summary['index_mismatches']}; tracebacks in the server logs: {tracebacks}"]
    ok = not deaths and not partials and integ == "ok" and not summary["index_mismatches"]
    return {"protocol": __doc__.strip(), "summary": summary, "ok": ok, "faults_found": bool(faults),
            "faults": faults, "deaths": deaths, "partial_writes": partials, "cases": results,
            "table": md_table(heads, body), "notes": notes}


def add_args(p: argparse.ArgumentParser) -> None:
    """Flags of the hostile run."""
    p.add_argument("--hostile-limit", type=int, help="run this many cases, spread over all groups (--quick: 40)")
    p.add_argument("--hostile-match", help="only the cases whose 'target / case' matches this regular expression")
    p.add_argument("--no-owner", action="store_true", help="hostile: one memvault serve --no-owner process")
    p.add_argument("--timeout", type=float, help="seconds to wait for each reply (default 120; --quick 60)")
    p.add_argument("--idle-s", type=float, default=5.0,
                   help="stop waiting for a reply once the server answered a later ping and stayed idle this long")


def defaults(args: argparse.Namespace) -> None:
    """Fill the flags left unset, smaller under ``--quick``."""
    if getattr(args, "hostile_limit", None) is None and args.quick:
        args.hostile_limit = 40
    if getattr(args, "timeout", None) is None:
        args.timeout = 60.0 if args.quick else 120.0
