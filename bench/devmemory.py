"""Recall on a developer's memory store, per slice, beside plain dense cosine and BM25.

A set (``tests/data/devmemory/*.json``, written by hand before any system was run on it)
holds what a coding assistant stores for one developer over several projects (a good
share in Chinese, most of that with English identifiers in it) and questions asked
mid-task, a third of them cross-lingual, some carrying an identifier, some about facts
never stored (gold ``[]``).

Protocol: every memory stored in file order through the real ``remember`` handler
(``force=True``, one scope, as ``bench.mv.remember_turn``); for each question, the
candidates are captured (``bench.fusion_compare.Question``) and ordered as
``recall.rank`` orders them; at capture the default's order is checked against the real
``recall.rank``. Baselines on the same store: **dense**, plain e5 cosine over the stored
vectors (``bench.mv.search_dense``: no language correction, no keyword channel); **BM25**
over the memory texts (``bench.baselines.Bm25``: stemmed words and CJK bigrams).

Slices of the answerable questions, by the question's language and its gold memory's
(``en``, ``zh`` pure Chinese, ``zh+id`` Chinese with identifiers): en->en, zh->zh,
zh->zh+id, zh->en, en->zh (either Chinese kind), cross-lingual (zh->en and en->zh),
identifier (the question carries one), mixed (the gold memory is zh+id), all. Metrics:
R@1 and R@5 (a gold memory among the first k). Abstention: AUC of the first result's
calibrated relevance, answerable vs not stored, per question language; and the share of
each flagged ``nothing_relevant`` (first relevance below ``recall.LIKELY_ANSWER``).

Run: ``python -m bench.devmemory`` (every set) or ``--sets dev`` / ``--sets guard``; ``--store-size 20``
cuts each set into small stores (:func:`small_stores`), as a user's store is in its first days.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, REPO, md_table, write_result
from bench.ranking import Ranking

SET_DIR = REPO / "tests" / "data" / "devmemory"
SET_NAMES = ("dev", "guard", "holdout")
SLICES = ("en->en", "zh->zh", "zh->zh+id", "zh->en", "en->zh", "cross-lingual", "identifier", "mixed", "all")
SYSTEMS = ("memvault", "dense", "bm25")


def load_set(name: str) -> dict[str, Any]:
    """The set ``name`` (``tests/data/devmemory/NAME.json``)."""
    return json.loads((SET_DIR / f"{name}.json").read_text(encoding="utf-8"))


def slices_of(q: Mapping[str, Any], mem_lang: Mapping[str, str]) -> list[str]:
    """The slices an answerable question belongs to (``[]`` for an unanswerable one)."""
    if not q["gold"]:
        return []
    ql, gl = q["lang"], mem_lang[q["gold"][0]]
    out = ["all"]
    if ql == "en":
        out.append("en->en" if gl == "en" else "en->zh")
    else:
        out.append({"en": "zh->en", "zh": "zh->zh", "zh+id": "zh->zh+id"}[gl])
    if (ql == "en") != (gl == "en"):
        out.append("cross-lingual")
    if q.get("identifier"):
        out.append("identifier")
    if gl == "zh+id":
        out.append("mixed")
    return out


def small_stores(data: Mapping[str, Any], size: int, seed: int = 7) -> list[tuple[list[dict], list[dict]]]:
    """The set cut into stores of ``size`` memories, as a user's store is in its first days:
    memories shuffled (``seed``) and taken ``size`` at a time; each store is asked the questions
    whose gold memories it holds all of, and a share of the never-stored ones (dealt round
    robin). A question whose gold is split over two stores is left out."""
    mems = list(data["memories"])
    random.Random(seed).shuffle(mems)
    stores = [mems[i:i + size] for i in range(0, len(mems), size)]
    held = [{m["id"] for m in store} for store in stores]
    asked: list[list[dict]] = [[] for _ in stores]
    unanswerable = [q for q in data["questions"] if not q["gold"]]
    for n, q in enumerate(unanswerable):
        asked[n % len(stores)].append(q)
    for q in data["questions"]:
        for ids, qs in zip(held, asked, strict=True):
            if q["gold"] and set(q["gold"]) <= ids:
                qs.append(q)
    return list(zip(stores, asked, strict=True))


async def capture(name: str, model_cache: Path, store_size: int | None = None) -> list[Any]:
    """Store set ``name`` and capture every question (``fusion_compare.Question``; gold holds
    the set's gold ids, slices, language and the baselines' orders as set ids). With
    ``store_size``: the set cut into stores of that many memories (:func:`small_stores`), each
    stored and asked on its own."""
    data = load_set(name)
    mem_lang = {m["id"]: m["lang"] for m in data["memories"]}
    parts = small_stores(data, store_size) if store_size else [(data["memories"], data["questions"])]
    out: list[Any] = []
    for mems, questions in parts:
        out += await _capture_store(name, model_cache, mems, questions, mem_lang)
    return out


async def _capture_store(name: str, model_cache: Path, mems: list[dict], questions: list[dict],
                         mem_lang: Mapping[str, str]) -> list[Any]:
    """``mems`` stored in order through ``remember``, then each of ``questions`` captured."""
    from bench.baselines import Bm25
    from bench.fusion_compare import Question, _capture_memories, _check_memory_order
    from bench.mv import open_runtime, remember_turns, search_dense

    bm25 = Bm25([m["text"] for m in mems])
    out: list[Question] = []
    with tempfile.TemporaryDirectory(prefix="memvault-devmem-") as tmp:
        rt = await open_runtime(Path(tmp) / "data", model_cache)
        try:
            mem_sets = await remember_turns(rt, ((m["id"], m["text"], None) for m in mems))
            set_of = {mid: sids for mid, sids in mem_sets.items()}
            for n, q in enumerate(questions):
                ch, texts, meta, now, beside = await _capture_memories(rt, q["text"])
                dense = [s for mid in await search_dense(rt, q["text"], len(mems)) for s in set_of.get(mid, [])]
                bm = [mems[i]["id"] for i in bm25.search(q["text"], len(mems))]
                gold = {"gold": q["gold"], "lang": q["lang"], "slices": slices_of(q, mem_lang),
                        "dense": dense, "bm25": bm}
                item = Question(f"devmem-{name}", q["id"], ch, texts, meta, now, gold,
                                {i: set_of.get(i, []) for i in texts}, beside=beside)
                if n % 10 == 0:
                    await _check_memory_order(rt, item, 25)
                out.append(item)
        finally:
            await rt.close()
    return out


def _recall_at(order: list[str], gold: list[str], k: int) -> float:
    return float(any(g in order[:k] for g in gold))


def auc(pos: list[float], neg: list[float]) -> float | None:
    """P(a positive scores above a negative), ties half (Mann-Whitney); None if a side is empty."""
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def score(qs: list[Any], variant: Any, r: Any) -> dict[str, Any]:
    """Per slice and system: {n, R@1, R@5}; abstention per question language: AUC and the
    shares flagged nothing_relevant. ``variant`` orders memvault (``fusion_compare``)."""
    from bench.fusion_compare import order_and_scores
    from bench.metrics import dedupe
    from memvault.service.memory.recall import LIKELY_ANSWER

    acc: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    first_rel: dict[str, dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q in qs:
        ids, scored = order_and_scores(q, variant, r)
        rel = scored[ids[0]].relevance if ids else 0.0
        first_rel[q.gold["lang"]][bool(q.gold["gold"])].append(rel)
        orders = {"memvault": dedupe([s for i in ids for s in q.expand[i]]), "dense": q.gold["dense"],
                  "bm25": q.gold["bm25"]}
        for sl in q.gold["slices"]:
            for sys_, order in orders.items():
                acc[sl][sys_].append((_recall_at(order, q.gold["gold"], 1), _recall_at(order, q.gold["gold"], 5)))
    table = {sl: {s: {"n": len(v), "R@1": round(sum(a for a, _ in v) / len(v), 3),
                      "R@5": round(sum(b for _, b in v) / len(v), 3)} for s, v in acc[sl].items()}
             for sl in SLICES if sl in acc}
    abst = {}
    for lang, sides in sorted(first_rel.items()):
        pos, neg = sides[True], sides[False]
        a = auc(pos, neg)
        abst[lang] = {"answerable": len(pos), "not stored": len(neg), "AUC": None if a is None else round(a, 3),
                      "not stored flagged": round(sum(x < LIKELY_ANSWER for x in neg) / max(len(neg), 1), 3),
                      "answerable flagged": round(sum(x < LIKELY_ANSWER for x in pos) / max(len(pos), 1), 3)}
    return {"slices": table, "abstention": abst}


def tables(name: str, res: Mapping[str, Any]) -> str:
    """Markdown tables of one set's ``score``."""
    rows = [[sl, str(t["memvault"]["n"]), *[f"{t[s]['R@1']:.3f} / {t[s]['R@5']:.3f}" for s in SYSTEMS]]
            for sl, t in res["slices"].items()]
    out = md_table(["slice", "n", *[f"{s} R@1 / R@5" for s in SYSTEMS]], rows)
    out += "\n\n" + md_table(["question language", "answerable", "not stored", "AUC first relevance",
                              "not stored flagged", "answerable flagged"],
                             [[lang, a["answerable"], a["not stored"], a["AUC"], a["not stored flagged"],
                               a["answerable flagged"]] for lang, a in res["abstention"].items()])
    return f"### {name}\n\n{out}"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    from bench.fusion_compare import DEFAULT, VARIANTS

    t0 = time.perf_counter()
    results = {}
    for name in args.sets:
        qs = await capture(name, args.model_cache, args.store_size)
        results[name] = score(qs, VARIANTS[DEFAULT], Ranking())
        print(tables(name, results[name]), flush=True)
    payload = {"protocol": __doc__.strip(), "results": results, "loadavg": os.getloadavg(),
               "elapsed_s": round(time.perf_counter() - t0, 1)}
    path = write_result("devmemory", payload)
    print(f"\n{payload['elapsed_s']} s, load {payload['loadavg']}. JSON: {path}")
    return payload


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.devmemory", description=__doc__.splitlines()[0])
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--sets", nargs="*", default=list(SET_NAMES), choices=SET_NAMES)
    p.add_argument("--store-size", type=int, help="cut each set into stores of this many memories (small_stores)")
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
