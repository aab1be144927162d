"""Cross-lingual recall probe (English <-> Chinese) and "nothing relevant" on stores lacking the answer.

Data: ``tests/data/bilingual_probe.tsv`` (written for memvault): 123 facts, each as an
English memory, a Chinese memory, an English question and a Chinese question. Facts
share incidental words on purpose (back / backup / rollback, run, key, train ...). The
first 100 facts are split into A (even lines) and B (odd lines); the other 23 (C) are
never stored.

Two stores, each through the real ``remember`` handler (one data dir each):
``zh-A/en-B`` holds A's facts in Chinese and B's in English, ``en-A/zh-B`` the reverse.
In each store every A and B fact is asked in both languages: a question in the other
language than its memory is a cross-lingual pair (en->zh or zh->en; 100 per direction
over both stores), the other a same-language pair; the same-language memories of other
facts are the distractors. C's questions (46 per store) have no answer in the store.

Per option of fusion (``bench.bilingual.OPTIONS``: dense weights of convex fusion, with
and without the language correction) the same captured
candidates (``service.search.search_channels``) are scored with
``service.search.score_candidates`` and ordered as ``recall.rank`` orders them
(``final_score`` with the row's importance; recency is equal for all). Reported:
recall@1 and MRR per direction, and for the default option the "nothing relevant"
curve: for each min_relevance, the share of C's questions whose reply is empty and the
share of answerable questions whose memory is still in the (filtered) top 5.

Document cases (``tests/data/bilingual_docs.json``): a folder per case indexed with the
``index_docs`` handler, one query whose answer is in a page of the other language;
``search_docs`` ranking (``rank_chunks``) must put that page first.

Run: ``python -m bench.bilingual`` (about a minute; two stores of 100 memories).
"""

from __future__ import annotations

import argparse
import json
import pickle
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from bench import calibration
from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result
from bench.ranking import Ranking, score_with

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "data" / "bilingual_probe.tsv"
DOC_CASES = ROOT / "tests" / "data" / "bilingual_docs.json"
STORED = 100  # facts 0..99 are stored (A even, B odd); the rest are asked but never stored
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

# name -> bench.ranking.Ranking overrides (one option per dense weight, and without the language
# correction; the other mechanisms are switched off one at a time by bench.fusion_compare)
OPTIONS: dict[str, dict[str, Any]] = {
    "convex 0.4 (default)": {},
    "convex 0.4, no language correction": {"language_neutral": False},
    "convex 0.5": {"fusion_dense_weight": 0.5},
    "convex 0.6": {"fusion_dense_weight": 0.6},
    "convex 0.8": {"fusion_dense_weight": 0.8},
    "dense only": {"fusion_dense_weight": 1.0},
    "dense only, no language correction": {"fusion_dense_weight": 1.0, "language_neutral": False},
}
DEFAULT_OPTION = "convex 0.4 (default)"  # the shipped defaults


@dataclass(frozen=True)
class Fact:
    """One probe line."""

    en: str
    zh: str
    q_en: str
    q_zh: str


def load_probe(path: Path = PROBE) -> list[Fact]:
    """The probe's facts, in file order (comment lines skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        en, zh, q_en, q_zh = line.split("\t")
        out.append(Fact(en, zh, q_en, q_zh))
    return out


def store_layout(facts: list[Fact], zh_parity: int) -> list[tuple[int, str, str]]:
    """(fact index, language, text) of each memory of one store: facts of parity ``zh_parity``
    in Chinese, the others in English; only the first ``STORED`` facts."""
    return [(i, "zh" if i % 2 == zh_parity else "en", f.zh if i % 2 == zh_parity else f.en)
            for i, f in enumerate(facts[:STORED])]


@dataclass
class Asked:
    """One question against one store, with its captured candidates."""

    store: str
    fact: int
    qlang: str
    direction: str  # "en->zh", "zh->en", "en->en", "zh->zh", or "none" (no answer stored)
    target: str | None  # memory id of the answer, None when the store lacks it
    channels: Any
    texts: dict[str, str]
    importance: dict[str, float]
    # memory id -> (written just before, just after), every stored memory (FactStore.written_beside)
    beside: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


async def capture_store(facts: list[Fact], zh_parity: int, model_cache: Path, tmp: Path) -> list[Asked]:
    """Fill one store and capture every question's candidates."""
    from bench.mv import PROJECT, USER, open_runtime, remember_turn
    from memvault.service.filters import scope_filter
    from memvault.service.runtime import MEMORY_COLLECTION
    from memvault.service.search import search_channels

    name = "zh-A/en-B" if zh_parity == 0 else "en-A/zh-B"
    rt = await open_runtime(tmp / f"store{zh_parity}", model_cache)
    try:
        ids: dict[int, str] = {}
        langs: dict[int, str] = {}
        for i, lang, text in store_layout(facts, zh_parity):
            res = await remember_turn(rt, text, None)
            assert res.id is not None, f"fact {i} was not stored: {res.status}"
            ids[i], langs[i] = res.id, lang
        rows = {r.id: r for r in await rt.facts.get(list(ids.values()))}
        beside = await rt.facts.written_beside(list(ids.values()), rt.clock.now())
        out: list[Asked] = []
        n = Ranking().candidates
        for i, f in enumerate(facts):
            for qlang, q in (("en", f.q_en), ("zh", f.q_zh)):
                flt = scope_filter(USER, [PROJECT], rt.clock.now())
                ch = await search_channels(rt, MEMORY_COLLECTION, q, flt, n, language_neutral=True)
                texts = {c: rows[c].content for c in ch.ids() if c in rows}
                imp = {c: rows[c].importance for c in texts}
                direction = f"{qlang}->{langs[i]}" if i in ids else "none"
                out.append(Asked(name, i, qlang, direction, ids.get(i), ch, texts, imp, beside))
        return out
    finally:
        await rt.close()


def order(asked: Asked, option: str, rk) -> list[tuple[str, float]]:
    """(memory id, relevance) best first, as ``recall.rank`` orders them under ``option``."""
    from dataclasses import replace

    from bench.fusion_compare import text_positions
    from memvault.policy.neighbours import conversation_neighbours, final_scores_with_neighbours
    from memvault.policy.ranking import final_score
    from memvault.service.memory.recall import LIKELY_ANSWER

    r = replace(rk, **OPTIONS[option])
    ch = asked.channels if r.language_neutral else replace(asked.channels, query_dots={})
    scored = score_with(ch, asked.texts, r.fusion_dense_weight, text_positions(ch, asked.texts))
    # the probe's memories are stored at one time: one conversation, in the probe's order
    near = conversation_neighbours(asked.beside, dict.fromkeys(asked.texts, 0.0),
                                   {i: len(t) for i, t in asked.texts.items()})

    def final(i: str, s: float) -> float:  # recency is equal for all: 1.0
        return final_score(s, asked.importance[i], 1.0, r.weight_relevance, r.weight_importance, r.weight_recency)

    scores = final_scores_with_neighbours({i: sc.score for i, sc in scored.items()}, near, r.neighbour_lift, final,
                                          {i: sc.relevance for i, sc in scored.items()}, LIKELY_ANSWER)
    ranked = sorted(scored.items(), key=lambda kv: -scores[kv[0]][0])
    return [(mid, sc.relevance) for mid, sc in ranked]


def direction_scores(asked: list[Asked], option: str, rk) -> dict[str, dict[str, float]]:
    """{direction: {n, R@1, MRR}} over the answerable questions."""
    acc: dict[str, list[int]] = {}
    for a in asked:
        if a.target is None:
            continue
        ids = [m for m, _ in order(a, option, rk)]
        rank = ids.index(a.target) + 1 if a.target in ids else 0
        acc.setdefault(a.direction, []).append(rank)
    return {d: {"n": len(r), "R@1": round(sum(x == 1 for x in r) / len(r), 3),
                "MRR": round(sum(1 / x for x in r if x) / len(r), 3)} for d, r in sorted(acc.items())}


def abstention_curve(asked: list[Asked], option: str, rk, k: int = 5) -> list[dict[str, float]]:
    """Per min_relevance: share of unanswerable questions with an empty reply; share of
    answerable ones whose memory is in the top k after the filter (cross-lingual and same-language)."""
    ordered = [(a, order(a, option, rk)) for a in asked]
    rows = []
    for t in THRESHOLDS:
        empty = [not any(rel >= t for _, rel in o) for a, o in ordered if a.target is None]
        kept: dict[str, list[bool]] = {"cross": [], "same": []}
        for a, o in ordered:
            if a.target is None:
                continue
            top = [m for m, rel in o if rel >= t][:k]
            kept["same" if a.direction in ("en->en", "zh->zh") else "cross"].append(a.target in top)
        rows.append({"min_relevance": t, "unanswerable_empty": round(sum(empty) / len(empty), 3),
                     f"cross R@{k}": round(sum(kept["cross"]) / len(kept["cross"]), 3),
                     f"same R@{k}": round(sum(kept["same"]) / len(kept["same"]), 3)})
    return rows


def calibration_rows(asked: list[Asked], rk, option: str = DEFAULT_OPTION, top: int = 10
                     ) -> list[tuple[int, float, float, float, int]]:
    """(fact, gap, keyword coverage, share of the question the candidate cannot be judged by,
    is the answer) for the ``top`` best-ranked candidates of every question (what a reply
    could show) under ``option``; gap = corrected cosine minus the query's
    ``dense_background`` (``service.search.fusion_inputs``, as recall computes them)."""
    from bench.fusion_compare import text_positions
    from memvault.policy.fusion import dense_background
    from memvault.service.search import fusion_inputs

    r = replace(rk, **OPTIONS[option])
    out = []
    for a in asked:
        ch = a.channels if r.language_neutral else replace(a.channels, query_dots={})
        f = fusion_inputs(ch, a.texts, text_positions(ch, a.texts))
        background = dense_background(f.dense.values(), f.query_script)
        for mid, _ in order(a, option, rk)[:top]:
            if mid in f.dense:
                out.append((a.fact, f.dense[mid] - background, f.coverage.get(mid, 0.0), f.unjudged.get(mid, 0.0),
                            int(mid == a.target)))
    return out


async def doc_cases(model_cache: Path, tmp: Path) -> list[dict[str, Any]]:
    """Each document case through ``index_docs`` and ``rank_chunks``: the first hit's path."""
    from bench.mv import PROJECT, SCOPE, open_runtime
    from memvault.service.documents.indexing import index_docs
    from memvault.service.documents.search import rank_chunks

    cases = json.loads(DOC_CASES.read_text(encoding="utf-8"))["cases"]
    out = []
    rt = await open_runtime(tmp / "docs", model_cache)
    try:
        for n, case in enumerate(cases):
            folder = tmp / f"case{n}"
            for rel, text in case["files"].items():
                p = folder / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text, encoding="utf-8")
            coll = f"case{n}"
            await index_docs(rt, SCOPE, [folder], coll, [folder], cite_bases=[folder])
            hits = await rank_chunks(rt, [PROJECT], case["query"], limit=5, collection=coll)
            paths = [row.file.path for row, _ in hits if row.file is not None]
            out.append({"query": case["query"], "want": case["want"], "got": paths[:2],
                        "relevance": [round(sc.relevance, 3) for _, sc in hits[:2]],
                        "first": bool(paths) and paths[0] == case["want"]})
    finally:
        await rt.close()
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Capture both stores, score every option, run the document cases; print and write the results."""

    t0 = time.perf_counter()
    facts = load_probe()
    rk = Ranking()
    with tempfile.TemporaryDirectory(prefix="memvault-bilingual-") as tmp:
        if args.capture is not None and args.capture.is_file():
            asked = pickle.loads(args.capture.read_bytes())  # noqa: ASYNC240 - one step at a time
        else:
            asked = [*await capture_store(facts, 0, args.model_cache, Path(tmp)),
                     *await capture_store(facts, 1, args.model_cache, Path(tmp))]
            if args.capture is not None:
                args.capture.write_bytes(pickle.dumps(asked))
        docs = [] if args.no_docs else await doc_cases(args.model_cache, Path(tmp))
    options = {o: direction_scores(asked, o, rk) for o in OPTIONS}
    cal = calibration_rows(asked, rk)
    train = [c for c in cal if c[0] < STORED // 2]  # facts 0..49; 50..99 and the unstored ones are held out
    fitted = calibration.fit_logistic([(d, cov, cross) for _, d, cov, cross, _ in train], [y for *_, y in train])
    # the curve on questions the calibration was not fitted on: facts 50..99 and the unstored ones
    curve = abstention_curve([a for a in asked if a.fact >= STORED // 2], DEFAULT_OPTION, rk)
    payload = {"protocol": __doc__.strip(), "facts": len(facts), "options": options, "default": DEFAULT_OPTION,
               "abstention": curve, "doc_cases": docs,
               "calibration_fit": {"rows": len(train), "bias": fitted[0], "gap": fitted[1], "coverage": fitted[2],
                                   "cross_script": fitted[3]}, "elapsed_s": round(time.perf_counter() - t0, 1)}
    path = write_result("bilingual", payload)
    dirs = ["en->zh", "zh->en", "en->en", "zh->zh"]
    print(md_table(["option", *[f"{d} R@1 / MRR" for d in dirs]],
                   [[o, *[f"{v[d]['R@1']:.3f} / {v[d]['MRR']:.3f}" for d in dirs]] for o, v in options.items()]))
    print()
    print(md_table(list(curve[0]), [list(r.values()) for r in curve]))
    print()
    if docs:
        print(md_table(["query", "want", "got (first two)", "relevance", "first?"],
                       [[d["query"], d["want"], ", ".join(d["got"]), d["relevance"], d["first"]] for d in docs]))
    print(f"\ncalibration fit on facts 0-{STORED // 2 - 1} ({len(train)} rows): bias {fitted[0]:.3f}, "
          f"gap {fitted[1]:.3f}, coverage {fitted[2]:.3f}, cross-script {fitted[3]:.3f}")
    print(f"\n{payload['elapsed_s']} s. JSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--capture", type=Path, help="keep the captured candidates in this file and reuse them "
                   "(to compare scoring options without filling the stores again)")
    p.add_argument("--no-docs", action="store_true", help="leave out the document cases")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.bilingual", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
