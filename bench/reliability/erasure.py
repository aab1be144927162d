"""Hard forget leaves no trace on disk; the data dir's files are 0600 and its folders 0700.

Through the MCP SDK's stdio client on a ``memvault serve`` (forwarded to the owner, the
default): fill the store with ``--filler`` ordinary memories, then remember two memories
carrying unique made-up words (markers): one with a marker in its content only, one with
markers in its content, its ``key``, its ``tags`` and its ``source``; recall them by
their content marker (as a user would before deleting), then ``forget(ids=[both],
hard=true)`` and check recall no longer returns them. Then every file under the data dir
(the SQLite file, its ``-wal`` and ``-shm``, the vector index's segments and WAL, the
owner's files and log) is searched for each marker's bytes in UTF-8, UTF-16-LE and
UTF-16-BE: once while the server still runs (a copy of the disk taken at that moment),
once after a clean stop (SIGTERM), and once more after a kill -9 run (the same steps,
then the owner killed instead of stopped). Any hit is a *trace*, reported with the file,
the marker's role (content / key / tag / source) and the encoding.

File modes: every file under the data dir must be 0600 and every folder 0700 (checked
while the server runs, when its socket and lock files exist, and after the stop).

Run: ``python -m bench.reliability erasure [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import re
import stat
from pathlib import Path
from typing import Any

from bench import synth
from bench.common import md_table
from bench.reliability import spawn
from bench.reliability.words import codewords

ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be")


def grep(data_dir: Path, markers: dict[str, str]) -> list[dict[str, Any]]:
    """Every occurrence of each marker (role -> word) in every file under ``data_dir``, in each encoding."""
    hits = []
    needles = [(role, word, enc, word.encode(enc)) for role, word in markers.items() for enc in ENCODINGS]
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file() and not p.is_symlink()):
        try:
            data = path.read_bytes()
        except OSError:
            continue  # a socket or a file that vanished
        for role, word, enc, needle in needles:
            at = data.find(needle)
            if at >= 0:
                hits.append({"file": str(path.relative_to(data_dir)), "role": role, "marker": word, "encoding": enc,
                             "offset": at, "count": data.count(needle)})
    return hits


def _short(path: str) -> str:
    """``path`` with the vector index's segment ids and page numbers left out (one name per kind of file)."""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?<=/)[a-z0-9]{24}(?=-)", "*", path)


def files_of(data_dir: Path) -> list[str]:
    """The files under ``data_dir``, relative, sorted."""
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file())


def modes(data_dir: Path) -> list[dict[str, Any]]:
    """Files under ``data_dir`` (and the folder itself) not 0600 (files) / 0700 (folders)."""
    bad = []
    for p in [data_dir, *sorted(data_dir.rglob("*"))]:
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) != want:
            bad.append({"path": str(p.relative_to(data_dir)) or ".", "mode": f"{stat.S_IMODE(st.st_mode):o}",
                        "expected": f"{want:o}"})
    return bad


async def one_run(data_dir: Path, work: Path, model_cache: Path, filler: int, rng: random.Random,
                  kill: bool) -> dict[str, Any]:
    """Remember, recall, hard-forget; grep while running; then stop (or kill -9) and grep again."""
    words = codewords(rng, 5)
    markers = {"content only": words[0], "content": words[1], "key": words[2], "tag": words[3], "source": words[4]}
    env = spawn.server_env(data_dir, model_cache, user="erasure", owner=True)
    out: dict[str, Any] = {"stop": "kill -9" if kill else "SIGTERM", "markers": markers}
    async with spawn.sdk_client(env, cwd=work, client_name="erasure") as c:
        for text in synth.sentences(filler, seed=rng.randrange(1 << 30)):
            await c.call_tool("remember", {"content": text, "force": True})
        a = await c.call_tool("remember", {"content": f"The vault combination is {markers['content only']}.",
                                           "force": True})
        b = await c.call_tool("remember", {"content": f"The staging password hint is {markers['content']}.",
                                           "key": f"hint.{markers['key']}", "tags": [markers["tag"]],
                                           "source": markers["source"], "force": True})
        ids = [r.structured_content["id"] for r in (a, b) if not r.is_error and r.structured_content]
        if len(ids) != 2:
            raise RuntimeError(f"remember failed: {spawn.result_text(a)} / {spawn.result_text(b)}")
        found = await c.call_tool("recall", {"query": markers["content only"]})
        out["found_before"] = ids[0] in [m["id"] for m in found.structured_content["memories"]]
        f = await c.call_tool("forget", {"ids": ids, "hard": True})
        out["forget"] = f.structured_content if not f.is_error else spawn.result_text(f)
        after = await c.call_tool("recall", {"query": markers["content only"]})
        out["found_after"] = any(m["id"] in ids for m in after.structured_content["memories"])
        out["traces_running"] = grep(data_dir, markers)
        out["modes_running"] = modes(data_dir)
        if kill:
            owner = spawn.owner_pid_now(data_dir)
            spawn.kill9([owner] if owner else [], freeze_first=list(spawn.store_processes(data_dir)))
    if kill:
        await spawn.wait_gone(list(spawn.store_processes(data_dir)))
    else:
        await spawn.stop_store(data_dir)
    out["traces_stopped"] = grep(data_dir, markers)
    out["modes_stopped"] = modes(data_dir)
    out["files"] = files_of(data_dir)
    return out


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """A clean-stop run and a kill -9 run, each on its own data dir; the payload."""
    rng = random.Random(args.seed)
    runs = []
    for kill in (False, True):
        data_dir, work = tmp / f"erasure-{'kill' if kill else 'stop'}", tmp / "work"
        work.mkdir(parents=True, exist_ok=True)
        try:
            runs.append(await one_run(data_dir, work, args.model_cache, args.filler, rng, kill))
        finally:
            await spawn.stop_store(data_dir)
    rows = []
    for r in runs:
        for phase in ("running", "stopped"):
            traces = r[f"traces_{phase}"]
            roles = sorted({t["role"] for t in traces})
            rows.append([r["stop"], "server running" if phase == "running" else f"after {r['stop']}",
                         len(traces), "; ".join(f"{t['role']} in {_short(t['file'])} ({t['encoding']})" for t in traces)
                         or "-", len(r[f"modes_{phase}"]), roles])
    content_traces = sum(1 for r in runs for ph in ("running", "stopped") for t in r[f"traces_{ph}"]
                         if t["role"] in ("content only", "content"))
    all_traces = sum(len(r[f"traces_{ph}"]) for r in runs for ph in ("running", "stopped"))
    bad_modes = sum(len(r[f"modes_{ph}"]) for r in runs for ph in ("running", "stopped"))
    still_found = sum(r["found_after"] for r in runs)
    summary = {"runs": len(runs), "traces": all_traces, "content_traces": content_traces,
               "metadata_traces": all_traces - content_traces, "mode_violations": bad_modes,
               "found_by_recall_after_forget": still_found, "filler": args.filler}
    ok = all_traces == 0 and bad_modes == 0 and still_found == 0 and all(r["found_before"] for r in runs)
    return {"protocol": __doc__.strip(), "summary": summary, "ok": ok, "runs": runs,
            "table": md_table(["stop", "when", "traces", "where", "mode violations", "marker roles found"],
                              [row[:5] + [", ".join(row[5]) or "-"] for row in rows])}


def add_args(p: argparse.ArgumentParser) -> None:
    """Flags of the erasure run."""
    p.add_argument("--filler", type=int, help="ordinary memories stored first (default 200; --quick 20)")


def defaults(args: argparse.Namespace) -> None:
    """Fill the flags left unset, smaller under ``--quick``."""
    if getattr(args, "filler", None) is None:
        args.filler = 20 if args.quick else 200
