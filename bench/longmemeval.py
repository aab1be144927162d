"""LongMemEval_S retrieval (no LLM), by its official retrieval protocol.

Protocol (../shared/bench/README.md): each question's own ``haystack_sessions`` are the
corpus. Turn granularity: one document per user turn, gold = user turns with
``has_answer``. Session granularity: one document per session, gold =
``answer_session_ids`` that hold a ``has_answer`` user turn. Metrics recall_any@k,
recall_all@k, nDCG@k (LongMemEval's DCG variant) for k = 5, 10, and recall_any@1 (the
first result is an answer). ``_abs`` questions and
questions with no user-side evidence are skipped.

How memvault stores a session (as a client would): one ``remember`` per user turn,
in session order, ``force=True``, ``created_at`` = the session date; exact or near
duplicates come back ``reinforced`` and share the existing memory (all their turn ids
map to it). One data dir per question. Turn ranking: ``recall.rank`` (top
``candidates``), memories expanded to their turn ids. Session ranking: the sessions of
that turn ranking in order of first appearance (a session ranks where its best turn
ranks). Baselines on the same corpus, each at both granularities: BM25 on turns, dense-only
(memvault's dense channel alone: the same stored turn vectors, no keyword channel, no
fusion, no importance or recency; memories expanded to turns as above), session ranking
derived the same way; and BM25 on whole sessions (user turns joined, as the official
session-level corpus).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio

from bench.baselines import Bm25
from bench.common import DEFAULT_MODEL_CACHE, data_dir, md_table, write_result
from bench.metrics import dedupe, ndcg_at_k, recall_all, recall_any

KS = (1, 5, 10)
SYSTEMS = ("memvault", "bm25", "dense", "bm25-session-docs")
DEPTH = 100  # turns fetched per query before sessions are derived


def haystack_time(s: str) -> float:
    """Unix seconds of a LongMemEval date such as ``"2023/05/30 (Tue) 12:19"`` (taken as UTC)."""
    return datetime.strptime(s.split(" (")[0] + " " + s.split(") ")[1], "%Y/%m/%d %H:%M").replace(
        tzinfo=timezone.utc).timestamp()


def corpus(item: dict) -> tuple[list[tuple[str, str, str, float]], set[str], set[str]]:
    """User turns as (turn_id, session_id, text, unix time), gold turn ids, gold session ids.

    turn_id = ``<session_id>_<index of the turn in its session>`` (LongMemEval's own ids).
    """
    docs, gold_turns, sessions_with_answer = [], set(), set()
    for sid, date, sess in zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"],
                              strict=True):
        when = haystack_time(date)
        for i, t in enumerate(sess):
            if t["role"] != "user" or not t["content"].strip():
                continue
            tid = f"{sid}_{i + 1}"
            docs.append((tid, sid, t["content"], when))
            if t.get("has_answer"):
                gold_turns.add(tid)
                sessions_with_answer.add(sid)
    gold_sessions = set(item["answer_session_ids"]) & sessions_with_answer
    return docs, gold_turns, gold_sessions


def selected(items: list[dict], limit: int | None) -> list[dict]:
    """Non-``_abs`` questions with user-side evidence; ``limit`` picks that many round-robin by type."""
    ok = [it for it in items if not it["question_id"].endswith("_abs") and corpus(it)[1]]
    if not limit or limit >= len(ok):
        return ok
    by_type: dict[str, list[dict]] = defaultdict(list)
    for it in ok:
        by_type[it["question_type"]].append(it)
    out: list[dict] = []
    while len(out) < limit:
        for t in sorted(by_type):
            if by_type[t] and len(out) < limit:
                out.append(by_type[t].pop(0))
    return out


def scores(turn_rank: list[str], sess_rank: list[str], gold_t: set[str], gold_s: set[str]) -> dict[str, float]:
    """All metrics of one question for one system."""
    out = {}
    for gran, ranked, gold in (("session", sess_rank, gold_s), ("turn", turn_rank, gold_t)):
        for k in KS:
            out[f"{gran} any@{k}"] = recall_any(ranked, gold, k)
            out[f"{gran} all@{k}"] = recall_all(ranked, gold, k)
            out[f"{gran} ndcg@{k}"] = ndcg_at_k(ranked, gold, k)
    return out


async def run_question(item: dict, model_cache: Path, systems: tuple[str, ...]) -> dict[str, Any]:
    """Score one question with every system; returns {"id", "type", "stats", "scores": {system: metrics}}."""
    from bench.mv import open_runtime, remember_turns, search, search_dense

    docs, gold_t, gold_s = corpus(item)
    session_of = {tid: sid for tid, sid, _, _ in docs}
    q = item["question"]
    res: dict[str, Any] = {"id": item["question_id"], "type": item["question_type"], "turns": len(docs),
                           "scores": {}, "stats": {}}

    def by_turns(turn_rank: list[str]) -> tuple[list[str], list[str]]:
        return turn_rank, dedupe([session_of[t] for t in turn_rank])

    with tempfile.TemporaryDirectory(prefix="memvault-lme-") as tmp:
        rt = await open_runtime(Path(tmp) / "data", model_cache)
        try:
            if "memvault" in systems or "dense" in systems:  # dense reads memvault's index
                t0 = time.perf_counter()
                status: dict[str, int] = {}
                mem_turns = await remember_turns(rt, ((tid, text, when) for tid, _, text, when in docs), status)
                res["stats"]["remember_s"] = round(time.perf_counter() - t0, 2)
                res["stats"]["statuses"] = dict(status)
            if "memvault" in systems:
                ids = await search(rt, q, DEPTH)
                res["scores"]["memvault"] = scores(*by_turns([t for i in ids for t in mem_turns[i]]), gold_t, gold_s)
            if "dense" in systems:
                ids = await search_dense(rt, q, DEPTH)
                res["scores"]["dense"] = scores(*by_turns([t for i in ids for t in mem_turns[i]]), gold_t, gold_s)
            texts = [d[2] for d in docs]
            tids = [d[0] for d in docs]
            if "bm25" in systems:
                ranked = [tids[i] for i in Bm25(texts).search(q, DEPTH)]
                res["scores"]["bm25"] = scores(*by_turns(ranked), gold_t, gold_s)
            if "bm25-session-docs" in systems:
                sids = dedupe([d[1] for d in docs])
                joined = [" ".join(d[2] for d in docs if d[1] == s) for s in sids]
                sess_rank = [sids[i] for i in Bm25(joined).search(q, DEPTH)]
                # turn level for this baseline is BM25 on turns (identical to "bm25")
                turn_rank = [tids[i] for i in Bm25(texts).search(q, DEPTH)]
                res["scores"]["bm25-session-docs"] = scores(turn_rank, sess_rank, gold_t, gold_s)
        finally:
            await rt.close()
    return res


def summarise(results: list[dict], systems: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """{system: {metric: mean over questions}}."""
    out = {}
    for s in systems:
        per = [r["scores"][s] for r in results if s in r["scores"]]
        out[s] = {m: sum(p[m] for p in per) / len(per) for m in per[0]} if per else {}
        out[s]["n"] = len(per)
    return out


def table(summary: dict) -> str:
    """Markdown: one row per system and granularity."""
    heads = ["system", "granularity", "n", "any@1", "any@5", "all@5", "nDCG@5", "any@10", "all@10", "nDCG@10"]
    body = []
    for s, m in summary.items():
        for g in ("session", "turn"):
            if f"{g} any@5" in m:
                body.append([s, g, int(m["n"]), m[f"{g} any@1"], m[f"{g} any@5"], m[f"{g} all@5"], m[f"{g} ndcg@5"],
                             m[f"{g} any@10"], m[f"{g} all@10"], m[f"{g} ndcg@10"]])
    return md_table(heads, body)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected questions; print the table; write JSON; return the payload."""
    from tqdm import tqdm
    with gzip.open(data_dir(args.data) / "longmemeval_s_dev.json.gz", "rt") as f:
        items = json.load(f)
    chosen = selected(items, args.limit)
    systems = tuple(args.systems)
    t0 = time.perf_counter()
    results = []
    for it in tqdm(chosen, desc="longmemeval", unit="q", disable=args.no_progress):
        results.append(await run_question(it, args.model_cache, systems))
    summary = summarise(results, systems)
    payload = {"protocol": __doc__.strip(), "driver": "in-process tool handlers (remember / recall.rank)",
               "questions": len(results), "of_eligible": len(selected(items, None)),
               "elapsed_s": round(time.perf_counter() - t0, 1), "summary": summary, "per_question": results}
    path = write_result("longmemeval", payload)
    print(table(summary))
    print(f"\n{len(results)} questions, {payload['elapsed_s']} s. JSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--limit", type=int, help="N questions, round-robin over question types (default all)")
    p.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.longmemeval", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
