"""Scope isolation: U users x P projects on one data dir, every read path probed for the others' data.

Setup: P git repositories (remote ``https://example.invalid/reliability/projN.git``, so
each is one project to memvault), U users (``MEMVAULT_USER_ID`` of each client), all
clients ``memvault serve`` forwarders of the one owner process (the way several clients
share a data dir). A *cell* is (user, project) and each user also has a global cell
(project ``""``). Every artifact carries two made-up words: a *handle* H, the only thing
probes search for, and a *marker* M that no probe ever sends, so an M in a reply is data
read from that cell, never an echo of the request. Each project cell, through a client
whose MCP roots are the repository: two memories (content "... H ... M ...", tag H), a
keyed preference (``pref.theme``, value with M), two tasks (``shared-task``, the same id
in every cell, and ``task-H``; state with M) and one indexed document (a file holding H
and M under ``notes/<user>/``). Each global cell: the same memories, key and tasks with
``project=""``.

Probes, from every project cell (a client with that repository as its roots): the broad
reads (recall with and without ``include_global``, search_docs, get_profile,
get_task_state list / done / ``shared-task`` with history, forget ``dry_run`` by every
kind and by age, the ``memvault://profile`` and ``memvault://tasks/shared-task``
resources, the ``recall_context`` prompt), then against every cell T (other users',
its own user's other projects and global, itself): recall of T's handle (default,
``include_global=false``, ``project=T's project``), search_docs of T's document handle
(the same three ways), forget ``dry_run`` by T's ids / tag / text, get_task_state and
the task resource of ``task-H``, the prompt on T's handle, get_profile of T's project.
Finally, write attempts against every cell the prober may not reach: hard forget by T's
ids and a task patch at T's version; SQLite must show T unchanged.

What a probe may see follows the documented rules: memories, keys and tasks of its own
user in the projects it reads (its project plus global by default; the ``project``
argument names another of the caller's own projects); documents of the projects it
reads, whoever indexed them (documents belong to a project, not to a user); ``forget`` by
ids names memories of the caller's user in any of its projects. Any other
cell's marker in a reply is a *leak*. Controls: each cell's own handle must find its
own marker (else the probe proves nothing) - reported as controls found / run.

Run: ``python -m bench.reliability isolation [--users 5] [--projects 4] [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.common import md_table
from bench.reliability import spawn, store
from bench.reliability.words import codewords

KINDS = ["preference", "fact", "decision", "episode", "procedure", "note"]
ARTIFACTS = ("mem", "key", "task", "doc")
ANY_PROJECT = "*"  # in Probe.reads: every project of the caller's user


@dataclass
class Cell:
    """One (user, project) scope and its artifacts' handles and markers."""

    user: str
    repo: Path | None  # None: the user's global cell
    handles: dict[str, str]
    markers: dict[str, str]
    project: str = ""  # the project id memvault gave it (from the write replies)
    mem_ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.user}/{self.repo.name if self.repo else 'global'}"


def make_repo(path: Path, name: str) -> None:
    """A git work tree at ``path`` with the remote ``origin`` = ``https://example.invalid/reliability/<name>.git``."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin",
                    f"https://example.invalid/reliability/{name}.git"], check=True)


def cells_for(users: int, projects: int, tmp: Path, rng: random.Random) -> tuple[list[Cell], list[Path]]:
    """The cells (project cells first, then one global cell per user) and the repositories."""
    repos = [tmp / "repos" / f"proj{j}" for j in range(projects)]
    for j, r in enumerate(repos):
        make_repo(r, f"proj{j}")
    names = [f"tenant{chr(ord('a') + i)}" for i in range(users)]
    n_cells = users * (projects + 1)
    words = codewords(rng, 2 * len(ARTIFACTS) * n_cells)
    cells = []
    for user in names:
        for repo in [*repos, None]:
            h = {a: words.pop() for a in ARTIFACTS}
            m = {a: words.pop() for a in ARTIFACTS}
            cells.append(Cell(user=user, repo=repo, handles=h, markers=m))
    return cells, repos


class Session:
    """A connected client of one user with one repository as its roots (or none)."""

    def __init__(self, client: Any) -> None:
        self.c = client

    async def tool(self, name: str, **args: Any) -> tuple[bool, str, dict[str, Any] | None]:
        """(is_error, full reply text, structured content)."""
        res = await self.c.call_tool(name, args)
        sc = res.structured_content
        text = spawn.result_text(res) + (json.dumps(sc, ensure_ascii=False) if sc else "")
        return bool(res.is_error), text, sc

    async def resource(self, uri: str) -> tuple[bool, str, None]:
        try:
            res = await self.c.read_resource(uri)
        except Exception as exc:
            return True, str(exc), None
        return False, spawn.result_text(res), None

    async def prompt(self, topic: str) -> tuple[bool, str, None]:
        try:
            res = await self.c.get_prompt("recall_context", {"topic": topic})
        except Exception as exc:
            return True, str(exc), None
        return False, spawn.result_text(res), None


async def write_cell(s: Session, cell: Cell, global_of: Cell | None) -> None:
    """Write ``cell``'s artifacts (``global_of``: also write that global cell's, with ``project=""``)."""
    for target, extra in ((cell, {}), *(((global_of, {"project": ""}),) if global_of else ())):
        h, m = target.handles, target.markers
        for kind, text in (("fact", f"Isolation note {h['mem']}: the deploy checklist codeword is {m['mem']}."),
                           ("decision", f"Isolation decision {h['mem']}: we settled on {m['mem']} for releases.")):
            err, text_, sc = await s.tool("remember", content=text, kind=kind, tags=[h["mem"]], force=True, **extra)
            if err or not sc or sc.get("status") != "stored":
                raise RuntimeError(f"{target.name}: remember failed: {text_[:300]}")
            target.mem_ids.append(sc["id"])
            target.project = sc["scope"]["project"]
        err, text_, sc = await s.tool("remember", content=f"The preferred editor theme is {m['key']} ({h['key']}).",
                                      kind="preference", key="pref.theme", force=True, **extra)
        if err:
            raise RuntimeError(f"{target.name}: keyed remember failed: {text_[:300]}")
        for tid, title in (("shared-task", f"Shared task {h['task']}"), (f"task-{h['task']}", f"Own task {h['task']}")):
            err, text_, _ = await s.tool("set_task_state", task_id=tid, title=title, expected_version=0,
                                         state={"note": f"state codeword {m['task']}", "current_step": 1,
                                                "steps": [f"step {h['task']}"]}, **extra)
            if err:
                raise RuntimeError(f"{target.name}: set_task_state failed: {text_[:300]}")
    if cell.repo is not None:
        folder = cell.repo / "notes" / cell.user
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "note.md").write_text(f"# Notes {cell.handles['doc']}\n\nThe document handle is "
                                        f"{cell.handles['doc']} and its codeword is {cell.markers['doc']}.\n")
        err, text_, sc = await s.tool("index_docs", paths=[str(folder)])
        if err or not sc or sc.get("failed"):
            raise RuntimeError(f"{cell.name}: index_docs failed: {text_[:300]}")


@dataclass
class Probe:
    """One read (or write attempt) and the projects its reply may draw from."""

    kind: str
    run: Callable[[Session], Awaitable[tuple[bool, str, Any]]]
    reads: list[str]  # project ids whose own-user memories / keys / tasks, and whose documents, may show
    target: Cell | None = None
    control: str | None = None  # a marker that must show (the prober's own data, found by its handle)


def probes_for(me: Cell, cells: list[Cell]) -> list[Probe]:
    """Every read probe of the project cell ``me`` (module docstring)."""
    p, q = me.project, "isolation note deploy checklist codeword"
    home, own = [p, ""], [p]
    out = [
        Probe("recall", lambda s: s.tool("recall", query=q, k=50), home),
        Probe("recall include_global=false", lambda s: s.tool("recall", query=q, k=50, include_global=False), own),
        Probe("search_docs", lambda s: s.tool("search_docs", query="document handle codeword", k=50), home),
        Probe("search_docs include_global=false",
              lambda s: s.tool("search_docs", query="document handle codeword", k=50, include_global=False), own),
        Probe("get_profile", lambda s: s.tool("get_profile"), home),
        Probe("get_task_state list", lambda s: s.tool("get_task_state"), home),
        Probe("get_task_state include_done", lambda s: s.tool("get_task_state", include_done=True), home),
        Probe("get_task_state shared-task", lambda s: s.tool("get_task_state", task_id="shared-task",
                                                             include_history=True), home, control=me.markers["task"]),
        Probe("forget dry_run kinds=all", lambda s: s.tool("forget", kinds=KINDS, dry_run=True), home),
        Probe("forget dry_run older_than_days=0", lambda s: s.tool("forget", older_than_days=0, dry_run=True), home),
        Probe("forget dry_run key", lambda s: s.tool("forget", key="pref.theme", dry_run=True), home),
        Probe("resource profile", lambda s: s.resource("memvault://profile"), home),
        Probe("resource tasks/shared-task", lambda s: s.resource("memvault://tasks/shared-task"), home,
              control=me.markers["task"]),
        Probe("prompt recall_context", lambda s: s.prompt(q), home),
    ]
    for t in cells:
        h, tp = t.handles, t.project
        mine = t.user == me.user and tp in home
        # reading another of one's own projects by name is allowed; another user's never
        named = [tp, ""] if tp else [""]
        out += [
            Probe("recall handle", lambda s, h=h: s.tool("recall", query=h["mem"], k=20), home, t,
                  t.markers["mem"] if mine else None),
            Probe("recall handle include_global=false",
                  lambda s, h=h: s.tool("recall", query=h["mem"], k=20, include_global=False), own, t),
            Probe("recall handle project=T", lambda s, h=h, tp=tp: s.tool("recall", query=h["mem"], k=20, project=tp),
                  named, t),
            # ids may name any memory of the caller's own user, in any project (documented)
            Probe("forget dry_run ids=T", lambda s, t=t: s.tool("forget", ids=list(t.mem_ids), dry_run=True),
                  [ANY_PROJECT], t),
            Probe("forget dry_run tags=T", lambda s, h=h: s.tool("forget", tags=[h["mem"]], dry_run=True), home, t),
            Probe("forget dry_run query=T", lambda s, h=h: s.tool(
                "forget", query=f"Isolation note {h['mem']}: the deploy checklist codeword is", dry_run=True), home, t),
            Probe("get_task_state task-T", lambda s, h=h: s.tool("get_task_state", task_id=f"task-{h['task']}",
                                                                 include_history=True), home, t,
                  t.markers["task"] if mine else None),
            Probe("resource tasks/task-T", lambda s, h=h: s.resource(f"memvault://tasks/task-{h['task']}"), home, t),
            Probe("prompt recall_context T", lambda s, h=h: s.prompt(h["mem"]), home, t),
            Probe("get_profile project=T", lambda s, tp=tp: s.tool("get_profile", project=tp), named, t),
        ]
        if t.repo is not None:
            out += [
                Probe("search_docs handle", lambda s, h=h: s.tool("search_docs", query=h["doc"], k=20), home, t,
                      t.markers["doc"] if tp == p else None),
                Probe("search_docs handle include_global=false",
                      lambda s, h=h: s.tool("search_docs", query=h["doc"], k=20, include_global=False), own, t),
                Probe("search_docs handle project=T",
                      lambda s, h=h, tp=tp: s.tool("search_docs", query=h["doc"], k=20, project=tp), named, t),
            ]
    return out


def allowed(me: Cell, reads: list[str], cells: list[Cell]) -> set[str]:
    """Markers a reply to ``me`` reading ``reads`` may hold: its user's cells there, and those projects' docs."""
    ok = set()
    for c in cells:
        if c.user == me.user and (c.project in reads or ANY_PROJECT in reads):
            ok |= {c.markers[a] for a in ("mem", "key", "task")}
        if c.repo is not None and c.project in reads:
            ok.add(c.markers["doc"])
    return ok


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Write every cell, probe from every project cell, attempt cross-scope writes; the payload."""
    rng = random.Random(args.seed)
    data_dir, work = tmp / "iso-data", tmp / "iso-work"
    work.mkdir(parents=True, exist_ok=True)
    cells, repos = cells_for(args.users, args.projects, tmp, rng)
    owner_of = {m: (c, a) for c in cells for a, m in c.markers.items()}
    pattern = re.compile("|".join(sorted(owner_of, key=len, reverse=True)))
    users = sorted({c.user for c in cells})

    tokens = {user: f"token-{user}-{rng.randrange(1 << 62):x}" for user in users}
    url = ""
    http_proc: Any = None

    def session(user: str, repo: Path | None) -> Any:
        roots = [repo] if repo else None
        if args.transport == "http":
            return spawn.http_client(url, tokens[user], roots=roots, client_name=f"iso-{user}")
        env = spawn.server_env(data_dir, args.model_cache, user=user, owner=True)
        return spawn.sdk_client(env, cwd=work, roots=roots, client_name=f"iso-{user}")

    t0 = time.perf_counter()
    leaks: list[dict[str, Any]] = []
    by_kind: dict[str, dict[str, int]] = {}
    controls = {"run": 0, "found": 0, "missed": []}
    errors: list[dict[str, str]] = []
    probes_run = 0
    try:
        if args.transport == "http":
            # one `memvault serve --http` on loopback; each user is a bearer token in the tokens file
            tokens_file = tmp / "tokens.json"
            tokens_file.write_text(json.dumps({tok: user for user, tok in tokens.items()}))
            tokens_file.chmod(0o600)
            port = spawn.free_port()
            env = spawn.server_env(data_dir, args.model_cache, user="nobody", owner=True,
                                   http_tokens_file=str(tokens_file))
            http_proc = await anyio.open_process(
                [spawn.MEMVAULT, "serve", "--http", "--port", str(port), "--log-level", "WARNING"], env=env, cwd=work,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            await spawn.wait_port(port)
            url = f"http://127.0.0.1:{port}/mcp"
        print(f"# isolation: writing {len(cells)} cells ({len(users)} users x {len(repos)} projects + global)",
              file=sys.stderr, flush=True)
        for user in users:
            mine = [c for c in cells if c.user == user]
            glob = next(c for c in mine if c.repo is None)
            for k, cell in enumerate(c for c in mine if c.repo is not None):
                async with session(user, cell.repo) as cl:
                    await write_cell(Session(cl), cell, glob if k == 0 else None)
        projects = {c.project for c in cells if c.repo is not None}
        if len(projects) != len(repos) or "" in projects:
            raise RuntimeError(f"expected {len(repos)} distinct projects from the roots, got {sorted(projects)}")
        before = store.table_counts(data_dir)
        for me in (c for c in cells if c.repo is not None):
            print(f"# isolation: probing from {me.name}", file=sys.stderr, flush=True)
            async with session(me.user, me.repo) as cl:
                s = Session(cl)
                for pr in probes_for(me, cells):
                    err, text, _ = await pr.run(s)
                    probes_run += 1
                    k = by_kind.setdefault(pr.kind, {"probes": 0, "leaks": 0, "errors": 0})
                    k["probes"] += 1
                    k["errors"] += err
                    ok = allowed(me, pr.reads, cells)
                    for found in sorted(set(pattern.findall(text)) - ok):
                        owner, art = owner_of[found]
                        k["leaks"] += 1
                        leaks.append({"prober": me.name, "probe": pr.kind, "target": pr.target.name if pr.target else None,
                                      "leaked_from": owner.name, "artifact": art, "reply": text[:400]})
                    if pr.control:
                        controls["run"] += 1
                        if pr.control in text:
                            controls["found"] += 1
                        else:
                            controls["missed"].append({"prober": me.name, "probe": pr.kind, "reply": text[:300]})
                    if err and pr.target is None:
                        errors.append({"prober": me.name, "probe": pr.kind, "reply": text[:300]})
        if store.table_counts(data_dir) != before:
            errors.append({"probe": "reads", "reply": f"table counts changed during reads: {before} -> "
                                                      f"{store.table_counts(data_dir)}"})
        # write attempts across scopes: must change nothing of the target
        write_probes = 0
        cross_writes: list[dict[str, Any]] = []
        for me in (c for c in cells if c.repo is not None):
            async with session(me.user, me.repo) as cl:
                s = Session(cl)
                for t in cells:
                    if t.user == me.user:
                        continue
                    err, text, sc = await s.tool("forget", ids=list(t.mem_ids), hard=True)
                    write_probes += 1
                    if not err and sc and sc.get("count"):
                        cross_writes.append({"prober": me.name, "target": t.name, "call": "forget hard ids",
                                             "reply": text[:300]})
                    err, text, sc = await s.tool("set_task_state", task_id=f"task-{t.handles['task']}",
                                                 expected_version=1, patch={"hijacked": True})
                    write_probes += 1
                    if not err:
                        cross_writes.append({"prober": me.name, "target": t.name, "call": "set_task_state v1 patch",
                                             "reply": text[:300]})
        rows = store.memory_rows(data_dir)
        for t in cells:
            gone = [i for i in t.mem_ids if i not in rows or rows[i]["status"] != "active"]
            if gone:
                cross_writes.append({"target": t.name, "call": "(SQLite after the write attempts)",
                                     "reply": f"memories no longer active: {gone}"})
        with contextlib.closing(store.connect(data_dir)) as con:
            hijacked = con.execute("SELECT user_id, project, task_id FROM tasks WHERE state LIKE '%hijacked%'"
                                   ).fetchall()
        cross_writes += [{"target": f"{u}/{p or 'global'}", "call": "(SQLite)", "reply": f"task {tid} patched"}
                         for u, p, tid in hijacked]
    finally:
        await spawn.stop_store(data_dir)
        if http_proc is not None and http_proc.returncode is None:
            http_proc.kill()
            await http_proc.wait()
    probes_total = probes_run + write_probes
    summary = {"transport": args.transport, "users": len(users), "projects": len(repos), "cells": len(cells), "probes": probes_total,
               "read_probes": probes_run, "write_probes": write_probes, "leaks": len(leaks) + len(cross_writes),
               "read_leaks": len(leaks), "cross_scope_writes": len(cross_writes),
               "controls_run": controls["run"], "controls_found": controls["found"],
               "broad_probe_errors": len(errors), "seconds": round(time.perf_counter() - t0, 1)}
    rows_t = [[k, v["probes"], v["leaks"], v["errors"]] for k, v in sorted(by_kind.items())]
    rows_t.append(["cross-scope write attempts", write_probes, len(cross_writes), ""])
    rows_t.append(["**all**", probes_total, len(leaks) + len(cross_writes), ""])
    ok = not leaks and not cross_writes and controls["found"] == controls["run"] and not errors
    notes = [f"\n{args.transport}: {len(users)} users x {len(repos)} projects (+ {len(users)} global cells), {probes_total} probes, "
             f"{len(leaks) + len(cross_writes)} leaks; controls (own data found by its handle): "
             f"{controls['found']}/{controls['run']}"]
    return {"protocol": __doc__.strip(), "seed": args.seed, "summary": summary, "ok": ok,
            "projects": sorted(projects), "leaks": leaks, "cross_scope_writes": cross_writes,
            "controls_missed": controls["missed"], "errors": errors, "by_probe": by_kind,
            "table": md_table(["probe", "probes", "leaks", "errors (expected for another cell's task)"], rows_t),
            "notes": notes}


def add_args(p: argparse.ArgumentParser) -> None:
    """Flags of the isolation run."""
    p.add_argument("--users", type=int, help="users (default 5; --quick: 2)")
    p.add_argument("--projects", type=int, help="projects (git repositories; default 4; --quick: 2)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio: each user a MEMVAULT_USER_ID of its forwarders (default); http: one "
                        "`memvault serve --http` on 127.0.0.1, each user a bearer token")


def defaults(args: argparse.Namespace) -> None:
    """Fill the flags left unset, smaller under ``--quick``."""
    for name, full, quick in (("users", 5, 2), ("projects", 4, 2)):
        if getattr(args, name, None) is None:
            setattr(args, name, quick if args.quick else full)
