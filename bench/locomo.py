"""LoCoMo turn retrieval (no LLM), by the rule of LoCoMo's own ``task_eval/evaluation.py``.

Protocol (../shared/bench/README.md): every turn of one conversation is one memory
(text = ``"<speaker>: <text>"`` plus ``" [shares a photo: <blip_caption>]"`` where the turn
has an image; time = the session date). Each QA item of categories 1-4 is a query;
recall@k = |evidence ∩ top-k| / |evidence|, evidence normalised with ``D\\d+:\\d+`` and
restricted to the conversation's turns. Reported overall and per category (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop).

memvault runs in-process through its tool handlers: one data dir per conversation,
``remember(force=True, created_at=session date)`` per turn in order (an exact or near
duplicate comes back ``reinforced`` with the existing id: such turns share one memory),
then ``recall.rank`` (the list recall returns, before access statistics) per question.
The ranked memories are expanded to their turn ids in rank order and cut at k.
Baselines on the same turns: BM25, and dense-only (memvault's dense channel alone: the
same stored turn vectors, no keyword channel, no fusion, no importance or recency;
memories expanded to turns as memvault's are).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio

from bench.baselines import Bm25
from bench.common import DEFAULT_MODEL_CACHE, data_dir, md_table, write_result
from bench.metrics import recall_at_k

KS = (1, 5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D\d+:\d+")
SYSTEMS = ("memvault", "bm25", "dense")


def session_time(s: str) -> float:
    """Unix seconds of a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"`` (taken as UTC)."""
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()


def load_samples(data: str | None, ids: list[str] | None = None) -> list[dict]:
    """The LoCoMo conversations of ``<data>/locomo_dev.json`` (data folder as bench.common.data_dir),
    only those whose ``sample_id`` is in ``ids`` when given, in file order."""
    samples = json.loads((data_dir(data) / "locomo_dev.json").read_text())
    return [s for s in samples if s["sample_id"] in ids] if ids else samples


def turns(sample: dict) -> list[tuple[str, str, float]]:
    """(dia_id, text, session unix time) of every turn of one conversation, in order."""
    conv = sample["conversation"]
    out = []
    nums = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)) and conv[k])
    for n in nums:
        when = session_time(conv[f"session_{n}_date_time"])
        for t in conv[f"session_{n}"]:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            out.append((t["dia_id"], text, when))
    return out


def questions(sample: dict, known: set[str]) -> list[tuple[str, int, list[str]]]:
    """(question, category, normalised evidence ids) for categories 1-4 with some known evidence."""
    out = []
    for qa in sample["qa"]:
        cat = qa.get("category")
        if cat not in CATEGORIES:
            continue
        ev = sorted({m for e in qa.get("evidence", []) for m in _DIA.findall(str(e)) if m in known})
        if ev:
            out.append((qa["question"], cat, ev))
    return out


async def run_conversation(sample: dict, model_cache: Path, systems: tuple[str, ...], kmax: int,
                           progress: bool) -> tuple[list[dict], dict[str, Any]]:
    """Score one conversation with each system; returns per-question rows and store stats."""
    from tqdm import tqdm

    from bench.mv import open_runtime, remember_turns, search, search_dense

    ts = turns(sample)
    known = {d for d, _, _ in ts}
    qs = questions(sample, known)
    rows = [{"sample": sample["sample_id"], "category": c, "evidence": ev, "ranked": {}} for _, c, ev in qs]
    stats: dict[str, Any] = {"sample": sample["sample_id"], "turns": len(ts), "questions": len(qs)}
    with tempfile.TemporaryDirectory(prefix="memvault-locomo-") as tmp:
        rt = await open_runtime(Path(tmp) / "data", model_cache)
        try:
            if "memvault" in systems or "dense" in systems:  # dense reads memvault's index
                t0 = time.perf_counter()
                status: dict[str, int] = {}
                mem_turns = await remember_turns(rt, tqdm(ts, desc=f"{sample['sample_id']} remember",
                                                          disable=not progress, leave=False), status)
                stats["remember_s"] = round(time.perf_counter() - t0, 1)
                stats["statuses"] = dict(status)
                stats["memories"] = len(mem_turns)
            if "memvault" in systems:
                t0 = time.perf_counter()
                for (q, _, _), row in zip(tqdm(qs, desc=f"{sample['sample_id']} recall", disable=not progress,
                                               leave=False), rows, strict=True):
                    ids = await search(rt, q, kmax)
                    row["ranked"]["memvault"] = [d for i in ids for d in mem_turns[i]][:kmax]
                stats["recall_s"] = round(time.perf_counter() - t0, 1)
            texts = [t for _, t, _ in ts]
            dias = [d for d, _, _ in ts]
            if "bm25" in systems:
                bm = Bm25(texts)
                for (q, _, _), row in zip(qs, rows, strict=True):
                    row["ranked"]["bm25"] = [dias[i] for i in bm.search(q, kmax)]
            if "dense" in systems:
                for (q, _, _), row in zip(qs, rows, strict=True):
                    ids = await search_dense(rt, q, kmax)
                    row["ranked"]["dense"] = [d for i in ids for d in mem_turns[i]][:kmax]
        finally:
            await rt.close()
    return rows, stats


def summarise(rows: list[dict], systems: tuple[str, ...]) -> dict[str, dict[str, dict[str, float]]]:
    """{system: {"overall"|category name: {"n": count, "R@k": mean recall}}}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for sys_ in systems:
        groups: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            groups["overall"].append(r)
            groups[CATEGORIES[r["category"]]].append(r)
        out[sys_] = {g: {"n": len(rs), **{f"R@{k}": sum(recall_at_k(r["ranked"][sys_], r["evidence"], k)
                                                          for r in rs) / len(rs) for k in KS}}
                     for g, rs in groups.items()}
    return out


def table(summary: dict) -> str:
    """Markdown: one row per (system, group) with R@1/5/10/25."""
    body = []
    for sys_, groups in summary.items():
        for g in ["overall", *CATEGORIES.values()]:
            if g in groups:
                m = groups[g]
                body.append([sys_, g, int(m["n"]), *[m[f"R@{k}"] for k in KS]])
    return md_table(["system", "questions", "n", *[f"R@{k}" for k in KS]], body)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected conversations; print the table; write JSON; return the payload."""
    samples = load_samples(args.data, args.conversations)
    if args.limit:
        samples = samples[: args.limit]
    systems = tuple(args.systems)
    rows, stats = [], []
    t0 = time.perf_counter()
    for s in samples:
        print(f"# locomo {s['sample_id']}", file=sys.stderr)
        r, st = await run_conversation(s, args.model_cache, systems, max(KS), not args.no_progress)
        rows += r
        stats.append(st)
    summary = summarise(rows, systems)
    payload = {"protocol": __doc__.strip(), "driver": "in-process tool handlers (remember / recall.rank)",
               "conversations": [s["sample_id"] for s in samples], "store_stats": stats,
               "elapsed_s": round(time.perf_counter() - t0, 1), "summary": summary}
    path = write_result("locomo", payload)
    print(table(summary))
    print(f"\nJSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--conversations", nargs="*", help="sample ids to run (default all)")
    p.add_argument("--limit", type=int, help="first N conversations only")
    p.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
