""""Nothing relevant": LongMemEval's abstention questions against answerable ones, per min_relevance.

LongMemEval_S marks questions whose haystack lacks the answer with a question id ending
``_abs`` (5 of the 98 dev questions); their haystacks hold related sessions (the user
tried Korean restaurants, the question asks about Italian ones). Each question's user
turns are stored as memories exactly as ``bench.longmemeval`` stores them (one data dir
per question), then ranked with ``recall.rank`` (every candidate, with its calibrated
``relevance``). For each min_relevance: the share of ``_abs`` questions whose reply would
be empty (no candidate reaches it), and, over ``--answerable`` answerable questions
(round-robin by type, as ``bench.longmemeval --limit``), turn recall_any@5 and session
recall_any@5 of the reply after the filter (k = 5 as recall's default; the session of a
kept turn counts). The same curve on the bilingual probe's never-stored questions is in
``bench.bilingual``.

Run: ``python -m bench.abstention --answerable 10``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, data_dir, md_table, write_result
from bench.longmemeval import corpus, selected
from bench.metrics import dedupe

THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
K = 5


async def ranked_relevance(item: dict, model_cache: Path) -> dict[str, Any]:
    """Store one question's haystack; return its ranked turns with relevance and its gold."""
    from bench.mv import PROJECT, USER, open_runtime, remember_turns
    from memvault.service.memory.recall import rank
    from memvault.service.search import CANDIDATES

    docs, gold_t, gold_s = corpus(item)
    session_of = {tid: sid for tid, sid, _, _ in docs}
    with tempfile.TemporaryDirectory(prefix="memvault-abs-") as tmp:
        rt = await open_runtime(Path(tmp) / "data", model_cache)
        try:
            mem_turns = await remember_turns(rt, ((tid, text, when) for tid, _, text, when in docs))
            ranked = await rank(rt, USER, [PROJECT], item["question"], limit=CANDIDATES)
        finally:
            await rt.close()
    return {"id": item["question_id"], "type": item["question_type"],
            "ranked": [(mem_turns[r.row.id], r.relevance) for r in ranked],
            "gold_turns": sorted(gold_t), "gold_sessions": sorted(gold_s), "session_of": session_of}


def curve(abstain: list[dict], answer: list[dict]) -> list[dict[str, float]]:
    """Per min_relevance: empty-reply share on ``abstain``; turn / session recall_any@K kept on ``answer``."""
    rows = []
    for t in THRESHOLDS:
        empty = [not any(rel >= t for _, rel in q["ranked"]) for q in abstain]
        turn_hit, sess_hit = [], []
        for q in answer:
            kept = [turns for turns, rel in q["ranked"] if rel >= t][:K]
            turns = [x for ts in kept for x in ts]
            sessions = dedupe([q["session_of"][x] for x in turns])
            turn_hit.append(bool(set(turns) & set(q["gold_turns"])))
            sess_hit.append(bool(set(sessions) & set(q["gold_sessions"])))
        rows.append({"min_relevance": t, "_abs empty": round(sum(empty) / max(1, len(empty)), 3),
                     f"turn any@{K}": round(sum(turn_hit) / max(1, len(turn_hit)), 3),
                     f"session any@{K}": round(sum(sess_hit) / max(1, len(sess_hit)), 3)})
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the abstention and answerable questions; print the curve; write JSON."""
    t0 = time.perf_counter()
    path = data_dir(args.data) / "longmemeval_s_dev.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:  # noqa: ASYNC230 - one step at a time
        items = json.load(f)
    abstain_items = [it for it in items if it["question_id"].endswith("_abs")]
    answer_items = selected(items, args.answerable)
    abstain = [await ranked_relevance(it, args.model_cache) for it in abstain_items]
    answer = [await ranked_relevance(it, args.model_cache) for it in answer_items]
    rows = curve(abstain, answer)
    payload = {"protocol": __doc__.strip(), "abstention_questions": len(abstain), "answerable_questions": len(answer),
               "curve": rows, "top_relevance_abs": {q["id"]: q["ranked"][0][1] if q["ranked"] else None
                                                    for q in abstain},
               "elapsed_s": round(time.perf_counter() - t0, 1)}
    out = write_result("abstention", payload)
    print(md_table(list(rows[0]), [list(r.values()) for r in rows]))
    print(f"\n{len(abstain)} _abs, {len(answer)} answerable questions; {payload['elapsed_s']} s. JSON: {out}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--answerable", type=int, default=10, help="answerable questions, round-robin by type")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.abstention", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
