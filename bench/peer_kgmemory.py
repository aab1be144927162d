"""Peer: the MCP reference memory server (npm ``@modelcontextprotocol/server-memory``) on LoCoMo.

Driven over MCP stdio with the same SDK ``Client`` as the other benches. The package is
installed (pinned, ``VERSION``) with ``npm install --prefix <dir>`` into a cache folder
outside the repo when missing (``--prefix``, default /tmp/memvault-bench-peers/kgmemory)
and run as ``node <dir>/node_modules/@modelcontextprotocol/server-memory/dist/index.js``.
Storage: its JSONL knowledge-graph file, ``MEMORY_FILE_PATH`` = a fresh temp file per
conversation (per question for LongMemEval).

Mapping (from its tools/list: create_entities, add_observations, search_nodes, ...): one
entity per turn, ``name`` = the turn id (LoCoMo ``dia_id`` such as ``D3:12``),
``entityType`` = ``"turn"``, ``observations`` = [turn text], stored with
``create_entities`` in batches of 50 in conversation order. Why: ``search_nodes``
returns whole entities, so one entity per speaker with each turn an observation would
return every turn of that speaker on any hit (the matching turn is then not recoverable
without the client doing the search itself); one entity per turn gives the server its
fairest chance, each returned entity being exactly one turn.

How ``search_nodes`` matches (read in dist/index.js of the pinned version): a filter,
not a ranking. An entity is returned when the lower-cased query is a substring of its
lower-cased name, entityType or any observation; results come back in storage order
(insertion order), with relations touching them. No tokenisation, no scoring.

Rows reported:

- ``server-memory``: the straightforward protocol. Query = the question as-is, one
  ``search_nodes`` call; the returned entities in the server's order are the ranking.
  A whole question is almost never a substring of a turn, so this finds next to nothing.
- ``server-memory word-by-word`` (a second, clearly separate variant): what an assistant
  would more plausibly do with a substring search. One ``search_nodes`` call per content
  word of the question (lower-cased word tokens, possessive 's dropped, English stopwords
  and words under 3 characters dropped, repeats dropped); the client ranks the union of
  the results by the number of words that hit an entity, ties in storage order (the
  order the server returns). The ranking here is the client's, the server only filters.
  As a check of that tie-break, the JSON also holds the same calls ranked with ties
  newest first (``tie_break_check``; not a row of the table).

Scoring as bench.locomo (recall@1/5/10/25 over turns, categories 1-4). Optional
LongMemEval_S (``--longmemeval``): the same mapping for each user turn (entity names
``S<session index>:<turn index>``, opaque so that no query word can hit a name by
accident), one server per question, scored with bench.longmemeval's functions (sessions
ranked by their best turn).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from bench import locomo, longmemeval
from bench.common import data_dir, write_result
from bench.metrics import dedupe

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"  # the version this bench was written and run against
DEFAULT_PREFIX = Path("/tmp/memvault-bench-peers/kgmemory")
BATCH = 50
ENTITY_TYPE = "turn"
KMAX = 25
SYS_WHOLE = "server-memory"
SYS_WORDS = "server-memory word-by-word"
SYSTEMS = (SYS_WHOLE, SYS_WORDS)
# Tie-break sensitivity of the word-by-word ranking (same calls, ties newest first); JSON only.
SYS_WORDS_NEWEST = "server-memory word-by-word, ties newest first"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def ensure_server(prefix: Path, version: str = VERSION) -> Path:
    """Path of the server's ``dist/index.js`` under ``prefix``, npm-installing ``PACKAGE@version`` if missing.

    Raises RuntimeError when npm is absent or fails, or when a different version is installed there.
    """
    pkg = prefix / "node_modules" / "@modelcontextprotocol" / "server-memory"
    if not (pkg / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm not found; install Node.js >= 18 to run this peer")
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"# npm install --prefix {prefix} {PACKAGE}@{version}", file=sys.stderr)
        r = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                            f"{PACKAGE}@{version}"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"npm install failed: {r.stderr.strip()[-2000:]}")
    installed = json.loads((pkg / "package.json").read_text())["version"]
    if installed != version:
        raise RuntimeError(f"{pkg} holds version {installed}, expected {version} (use another --prefix)")
    return pkg / "dist" / "index.js"


def entity_names(structured: dict | None, text: str) -> list[str]:
    """Entity names of a ``search_nodes`` result, in the server's order.

    ``structured``: the result's structuredContent (``{"entities": [{"name", ...}], "relations": [...]}``)
    or None; ``text``: its text content (the same graph as JSON), used when there is no structured part.
    Raises ValueError when neither parses as a graph.
    """
    graph = structured if structured and "entities" in structured else json.loads(text)
    if not isinstance(graph, dict) or not isinstance(graph.get("entities"), list):
        raise ValueError(f"not a knowledge graph: {text[:200]!r}")
    return [e["name"] for e in graph["entities"]]


def content_words(question: str, stopwords: frozenset[str]) -> list[str]:
    """Lower-cased content words of ``question`` in order: possessive 's dropped, no stopwords, >= 3 chars, unique."""
    out = []
    for w in _WORD.findall(question.lower()):
        if w.endswith("'s"):
            w = w[:-2]
        if len(w) >= 3 and w not in stopwords and "'" not in w and w not in out:
            out.append(w)
    return out


def rank_by_hits(hits: Sequence[Sequence[str]], order: dict[str, int]) -> list[str]:
    """Union of the per-word result lists ``hits``, most words matched first, ties by ``order`` (storage rank)."""
    count: dict[str, int] = {}
    for names in hits:
        for n in set(names):
            count[n] = count.get(n, 0) + 1
    return sorted(count, key=lambda n: (-count[n], order.get(n, len(order))))


def _stopwords() -> frozenset[str]:
    from memvault.policy.keywords import STOPWORDS

    return STOPWORDS


def _params(script: Path, memory_file: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env["MEMORY_FILE_PATH"] = str(memory_file)
    node = shutil.which("node") or "/usr/bin/node"
    return StdioServerParameters(command=node, args=[str(script)], env=env)


def _text(res: Any) -> str:
    return " ".join(getattr(x, "text", "") for x in res.content)


class _Session:
    """One running server (an open ``mcp.client.client.Client``): store turns, search."""

    def __init__(self, client: Any) -> None:
        self.c = client
        self.calls = 0

    async def tools(self) -> list[str]:
        return [t.name for t in (await self.c.list_tools()).tools]

    async def store(self, items: Sequence[tuple[str, str]], batch: int) -> int:
        """``create_entities`` for (name, text) pairs in batches; returns how many the server created."""
        created = 0
        for i in range(0, len(items), batch):
            ents = [{"name": n, "entityType": ENTITY_TYPE, "observations": [t]} for n, t in items[i : i + batch]]
            res = await self.c.call_tool("create_entities", {"entities": ents})
            if res.is_error:
                raise RuntimeError(_text(res))
            created += len(entity_names(res.structured_content, _text(res)))
        return created

    async def search(self, query: str) -> list[str]:
        self.calls += 1
        res = await self.c.call_tool("search_nodes", {"query": query})
        if res.is_error:
            raise RuntimeError(_text(res))
        return entity_names(res.structured_content, _text(res))

    async def word_hits(self, question: str, stop: frozenset[str]) -> list[list[str]]:
        """One ``search_nodes`` result per content word of ``question``."""
        return [await self.search(w) for w in content_words(question, stop)]


async def run_conversation(sample: dict, script: Path, tmp: Path, batch: int) -> tuple[list[dict], dict]:
    """Store every turn, query every question both ways over MCP; returns locomo-style rows and stats."""
    from mcp.client.client import Client

    ts = locomo.turns(sample)
    qs = locomo.questions(sample, {d for d, _, _ in ts})
    order = {d: i for i, (d, _, _) in enumerate(ts)}
    stop = _stopwords()
    rows = [{"sample": sample["sample_id"], "category": c, "evidence": ev, "ranked": {}} for _, c, ev in qs]
    stats: dict[str, Any] = {"sample": sample["sample_id"], "turns": len(ts), "questions": len(qs)}
    async with Client(_params(script, tmp / f"{sample['sample_id']}.jsonl"), read_timeout_seconds=600) as c:
        s = _Session(c)
        stats["tools"] = await s.tools()
        t0 = time.perf_counter()
        stats["entities_created"] = await s.store([(d, t) for d, t, _ in ts], batch)
        stats["store_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        nonempty = 0
        for (q, _, _), row in zip(qs, rows, strict=True):
            names = await s.search(q)
            nonempty += bool(names)
            row["ranked"][SYS_WHOLE] = names[:KMAX]
        stats["search_whole_s"] = round(time.perf_counter() - t0, 2)
        stats["whole_question_nonempty"] = nonempty
        t0, s.calls = time.perf_counter(), 0
        newest = {d: -i for d, i in order.items()}
        for (q, _, _), row in zip(qs, rows, strict=True):
            hits = await s.word_hits(q, stop)
            row["ranked"][SYS_WORDS] = rank_by_hits(hits, order)[:KMAX]
            row["ranked"][SYS_WORDS_NEWEST] = rank_by_hits(hits, newest)[:KMAX]
        stats["search_words_s"] = round(time.perf_counter() - t0, 2)
        stats["search_words_calls"] = s.calls
    stats["loadavg"] = os.getloadavg()
    return rows, stats


async def run_lme_question(item: dict, script: Path, tmp: Path, batch: int) -> dict[str, Any]:
    """One LongMemEval question: store its user turns, search both ways; bench.longmemeval result shape."""
    from mcp.client.client import Client

    docs, gold_t, gold_s = longmemeval.corpus(item)
    sess_index = {sid: i for i, sid in enumerate(dedupe([d[1] for d in docs]))}
    name_of, tid_of, session_of = {}, {}, {}
    for tid, sid, _, _ in docs:
        name = f"S{sess_index[sid]}:{tid.rsplit('_', 1)[1]}"
        name_of[tid], tid_of[name], session_of[tid] = name, tid, sid
    order = {name_of[d[0]]: i for i, d in enumerate(docs)}
    stop = _stopwords()
    q = item["question"]
    res: dict[str, Any] = {"id": item["question_id"], "type": item["question_type"], "turns": len(docs),
                           "scores": {}, "stats": {}}
    async with Client(_params(script, tmp / f"{item['question_id']}.jsonl"), read_timeout_seconds=600) as c:
        s = _Session(c)
        t0 = time.perf_counter()
        res["stats"]["entities_created"] = await s.store([(name_of[d[0]], d[2]) for d in docs], batch)
        res["stats"]["store_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        ranked = {SYS_WHOLE: await s.search(q), SYS_WORDS: rank_by_hits(await s.word_hits(q, stop), order)}
        for sys_, names in ranked.items():
            turn_rank = [tid_of[n] for n in names][: longmemeval.DEPTH]
            res["scores"][sys_] = longmemeval.scores(turn_rank, dedupe([session_of[t] for t in turn_rank]),
                                                     gold_t, gold_s)
        res["stats"]["search_s"] = round(time.perf_counter() - t0, 3)
    return res


async def run_longmemeval(args: argparse.Namespace, script: Path) -> dict[str, Any]:
    """Every eligible LongMemEval_S question (or ``--lme-limit``); print the table; write JSON."""
    with gzip.open(data_dir(args.data) / "longmemeval_s_dev.json.gz", "rt") as f:
        chosen = longmemeval.selected(json.load(f), args.lme_limit)
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="peer-kgmemory-lme-") as tmp:
        for i, it in enumerate(chosen):
            if i % 10 == 0:
                print(f"# server-memory longmemeval {i}/{len(chosen)}", file=sys.stderr)
            results.append(await run_lme_question(it, script, Path(tmp), args.batch))
    summary = longmemeval.summarise(results, SYSTEMS)
    payload = {"protocol": __doc__.strip(), "package": f"{PACKAGE}@{VERSION}", "questions": len(results),
               "elapsed_s": round(time.perf_counter() - t0, 1), "loadavg": os.getloadavg(),
               "summary": summary, "per_question": results}
    path = write_result("peer-kgmemory-longmemeval", payload)
    print(longmemeval.table(summary))
    print(f"\nJSON: {path}")
    return payload


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the peer on the chosen LoCoMo conversations (and LongMemEval_S if asked); print tables; write JSON."""
    script = ensure_server(args.prefix)
    samples = locomo.load_samples(args.data, args.conversations)
    rows, stats = [], []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="peer-kgmemory-") as tmp:
        for s in samples:
            print(f"# server-memory {s['sample_id']}", file=sys.stderr)
            r, st = await run_conversation(s, script, Path(tmp), args.batch)
            rows += r
            stats.append(st)
    summary = locomo.summarise(rows, SYSTEMS)
    payload = {"protocol": __doc__.strip(), "package": f"{PACKAGE}@{VERSION}",
               "conversations": [s["sample_id"] for s in samples], "store_stats": stats,
               "elapsed_s": round(time.perf_counter() - t0, 1), "summary": summary,
               "tie_break_check": locomo.summarise(rows, (SYS_WORDS_NEWEST,))}
    path = write_result("peer-kgmemory-locomo", payload)
    print(locomo.table(summary))
    tb = payload["tie_break_check"][SYS_WORDS_NEWEST]["overall"]
    print(f"\n(word-by-word with ties newest first: R@5 {tb['R@5']:.3f}, R@10 {tb['R@10']:.3f})")
    print(f"JSON: {path}")
    if args.longmemeval:
        print()
        payload["longmemeval"] = (await run_longmemeval(args, script))["summary"]
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--conversations", nargs="*", help="sample ids to run (default all)")
    p.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                   help=f"npm prefix holding {PACKAGE}@{VERSION} (installed there when missing)")
    p.add_argument("--batch", type=int, default=BATCH, help="entities per create_entities call")
    p.add_argument("--longmemeval", action="store_true", help="also run LongMemEval_S with the same mapping")
    p.add_argument("--lme-limit", type=int, help="LongMemEval: N questions round-robin by type (default all)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.peer_kgmemory", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
