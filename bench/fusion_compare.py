"""Fusion variants compared on every quality set, on the same captured candidates.

Each set is stored once, exactly as its own bench stores it (``bench.locomo``,
``bench.longmemeval``, ``bench.beir --slice``, ``bench.bilingual``), and every question's
candidates are captured once (``service.search.search_channels``: dense and keyword top
``candidates``, the query's language dots, the candidates' texts, and for memories their
importance, creation and last-access times, the clock, and the memories written beside
each, ``service.memory.recall.written_around``). Each fusion variant then scores the same
candidates and orders them as ``recall.rank`` orders memories (fused score, conversation
neighbours' lift, time-expression boost, importance and recency) or as ``rank_chunks`` orders
document chunks (fused score). At capture time the default variant's order is checked
against the real ``recall.rank`` / ``rank_chunks`` output, so the re-scoring reproduces
the shipped ranking exactly.

Variants (``VARIANTS``): the shipped ranking, and the shipped ranking with each of its
mechanisms switched off on its own (conversation neighbours, time expressions, the
language correction of dense scores, keyword coverage, the cross-language keyword
credit, importance and recency), the language-corrected dense channel alone, and a shape
not shipped (``bench.language_free``). A
mechanism stays only while it helps some set and costs none more than 0.01.
Figures: LoCoMo turn R@k (per conversation set), LongMemEval session / turn any, all and
nDCG, SciFact and CMRC-zh slice nDCG@10 / Recall@100, bilingual probe R@1 / MRR per
direction, LongMemEval abstention (answerable turn / session any@5 after the
min_relevance filter), and the developer-memory sets (``bench.devmemory``: R@1 / R@5 per
slice, abstention AUC per language).

Run: ``python -m bench.fusion_compare --capture-dir /tmp/fc`` (captures are pickled there
and reused by later runs; ``--sets`` picks sets).
"""

from __future__ import annotations

import argparse
import gzip
import json
import pickle
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, data_dir, md_table, write_result
from bench.ranking import Ranking, score_with

SETS = ("locomo", "lme", "scifact", "cmrc", "bilingual", "devmem-dev", "devmem-guard", "devmem-holdout")


# --------------------------------------------------------------------------------------
# captured questions


@dataclass
class Question:
    """One question with its captured candidates.

    ``channels``: ``service.search.Channels``; ``texts``: candidate id -> text;
    ``meta``: candidate id -> (importance, created_at, last_accessed_at) for memories
    (empty for document chunks); ``now``: the clock at capture; ``gold``: what the set's
    metric needs (see each capture function); ``expand``: candidate id -> the set's own
    item ids (turn ids, doc ids) in order.
    """

    set: str
    qid: str
    channels: Any
    texts: dict[str, str]
    meta: dict[str, tuple[float, float, float]]
    now: float
    gold: dict[str, Any]
    expand: dict[str, list[str]] = field(default_factory=dict)
    df: dict[str, int] = field(default_factory=dict)  # keyword term -> stored items holding it (whole store)
    n_docs: int = 0
    # memory id -> (written just before, just after): service.memory.recall.written_around every candidate
    beside: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


def _store_df(texts: list[str]) -> dict[str, int]:
    from memvault.policy.keywords import keyword_terms

    df: dict[str, int] = defaultdict(int)
    for t in texts:
        for term in keyword_terms(t):
            df[term] += 1
    return dict(df)


async def _capture_memories(rt, query: str) -> tuple[Any, dict[str, str], dict[str, tuple[float, float, float]], float,
                                                   dict[str, tuple[str | None, str | None]]]:
    from bench.mv import PROJECT, USER
    from memvault.service.filters import scope_filter
    from memvault.service.memory.recall import written_around
    from memvault.service.runtime import MEMORY_COLLECTION
    from memvault.service.search import search_channels

    now = rt.clock.now()
    flt = scope_filter(USER, [PROJECT], now)
    ch = await search_channels(rt, MEMORY_COLLECTION, query, flt, max(Ranking().candidates, 100))
    rows = {m.id: m for m in await rt.facts.get(ch.ids())}
    alive = {i: row for i, row in rows.items()
             if row.status == "active" and (row.expires_at is None or row.expires_at > now)}
    return (ch, {i: row.content for i, row in alive.items()},
            {i: (row.importance, row.created_at, row.last_accessed_at) for i, row in alive.items()}, now,
            await written_around(rt, list(alive), now))


async def _check_memory_order(rt, q: Question, limit: int) -> None:
    from bench.mv import search

    want = await search(rt, q.channels.query, limit)
    got = order_memories(q, VARIANTS[DEFAULT], Ranking())[:limit]
    if want != got:
        raise AssertionError(f"{q.set} {q.qid}: re-scored default order differs from recall.rank")


async def capture_locomo(args) -> list[Question]:
    """Every conversation of ``args.locomo`` stored as ``bench.locomo`` stores it; one Question per
    question (gold: evidence turn ids, category; expand: memory id -> turn ids)."""
    from bench import locomo
    from bench.mv import open_runtime, remember_turns

    out: list[Question] = []
    for sample in locomo.load_samples(args.data, args.locomo or None):
        ts = locomo.turns(sample)
        qs = locomo.questions(sample, {d for d, _, _ in ts})
        print(f"# capture locomo {sample['sample_id']} ({len(ts)} turns, {len(qs)} q)", flush=True)
        with tempfile.TemporaryDirectory(prefix="memvault-fc-") as tmp:
            rt = await open_runtime(Path(tmp) / "data", args.model_cache)
            try:
                mem_turns = await remember_turns(rt, ts)
                rows = await rt.facts.get(list(mem_turns))
                df = _store_df([r.content for r in rows])
                for n, (qtext, cat, ev) in enumerate(qs):
                    ch, texts, meta, now, beside = await _capture_memories(rt, qtext)
                    q = Question("locomo", f"{sample['sample_id']}#{n}", ch, texts, meta, now,
                                 {"evidence": ev, "category": cat, "sample": sample["sample_id"]},
                                 {i: mem_turns[i] for i in texts}, df, len(rows), beside)
                    if n % 10 == 0:
                        await _check_memory_order(rt, q, 25)
                    out.append(q)
            finally:
                await rt.close()
    return out


async def capture_lme(args) -> list[Question]:
    """``args.lme`` LongMemEval questions (round-robin by type, as ``--limit``) stored as
    ``bench.longmemeval`` stores them (gold: turn ids, session ids, session of each turn)."""
    from bench import longmemeval
    from bench.mv import open_runtime, remember_turns

    with gzip.open(data_dir(args.data) / "longmemeval_s_dev.json.gz", "rt") as f:
        items = json.load(f)
    out: list[Question] = []
    for n, item in enumerate(longmemeval.selected(items, args.lme)):
        docs, gold_t, gold_s = longmemeval.corpus(item)
        print(f"# capture lme {n} {item['question_id']} ({len(docs)} turns)", flush=True)
        with tempfile.TemporaryDirectory(prefix="memvault-fc-") as tmp:
            rt = await open_runtime(Path(tmp) / "data", args.model_cache)
            try:
                mem_turns = await remember_turns(rt, ((tid, text, when) for tid, _, text, when in docs))
                rows = await rt.facts.get(list(mem_turns))
                df = _store_df([r.content for r in rows])
                ch, texts, meta, now, beside = await _capture_memories(rt, item["question"])
                q = Question("lme", item["question_id"], ch, texts, meta, now,
                             {"turns": gold_t, "sessions": gold_s,
                              "session_of": {tid: sid for tid, sid, _, _ in docs}},
                             {i: mem_turns[i] for i in texts}, df, len(rows), beside)
                await _check_memory_order(rt, q, longmemeval.DEPTH)
                out.append(q)
            finally:
                await rt.close()
    return out


async def capture_beir(args, name: str, folder_name: str) -> list[Question]:
    """A ``bench.beir --slice`` sub-set indexed through the documents path (gold: qrels)."""
    from bench import beir
    from bench.mv import open_runtime
    from memvault.service.documents.collection import DOCS_COLLECTION
    from memvault.service.documents.search import rank_chunks
    from memvault.service.search import search_channels
    from memvault.storage.docs import DocStore

    nq, others = (int(x) for x in args.slice.split(":"))
    bs = beir.slice_set(beir.load_set(data_dir(args.data) / folder_name), nq, others)
    print(f"# capture {name} ({len(bs.docs)} docs, {len(bs.qids)} q)", flush=True)
    out: list[Question] = []
    with tempfile.TemporaryDirectory(prefix="memvault-fc-") as tmp:
        rt = await open_runtime(Path(tmp) / "data", args.model_cache)
        try:
            await beir.index_set(rt, bs, raw_sample=0, progress=False)
            df = _store_df([t for _, t in bs.docs])
            flt = beir.docs_filter(bs.name)
            async with DocStore.connect(rt.settings.db_path) as store:
                for n, qid in enumerate(bs.qids):
                    qtext = bs.queries[qid]
                    ch = await search_channels(rt, DOCS_COLLECTION, qtext, flt, max(Ranking().candidates,
                                                                                   beir.DEPTH))
                    rows = await store.chunks(ch.ids())
                    live = {c: r for c, r in rows.items() if r.file is not None}
                    q = Question(name, qid, ch, {c: r.text for c, r in live.items()}, {}, rt.clock.now(),
                                 {"qrels": bs.qrels[qid]}, {c: [r.file.path] for c, r in live.items()},
                                 df, len(bs.docs))
                    if n % 10 == 0:
                        hits = await rank_chunks(rt, [beir.PROJECT], qtext, limit=beir.DEPTH, collection=bs.name)
                        want = [row.file.path for row, _ in hits if row.file is not None]
                        if want != order_docs(q, VARIANTS[DEFAULT], Ranking()):
                            raise AssertionError(f"{name} {qid}: re-scored default order differs from rank_chunks")
                    out.append(q)
        finally:
            await rt.close()
    return out


async def capture_bilingual(args) -> list[Question]:
    """The probe's two stores (``bench.bilingual.capture_store``); gold: target id, direction."""
    from bench import bilingual

    facts = bilingual.load_probe()
    out: list[Question] = []
    with tempfile.TemporaryDirectory(prefix="memvault-fc-") as tmp:
        asked = [*await bilingual.capture_store(facts, 0, args.model_cache, Path(tmp)),
                 *await bilingual.capture_store(facts, 1, args.model_cache, Path(tmp))]
    for n, a in enumerate(asked):
        # the probe's memories are stored at one time: recency is equal for all (created = accessed = 0)
        out.append(Question("bilingual", f"{a.store}#{n}", a.channels, a.texts,
                            {i: (imp, 0.0, 0.0) for i, imp in a.importance.items()}, 0.0,
                            {"target": a.target, "direction": a.direction, "fact": a.fact}, beside=a.beside))
    return out


# --------------------------------------------------------------------------------------
# variants: (Channels, texts, Ranking, Question) -> {id: Scored}, best first


Variant = Callable[[Any, Mapping[str, str], Any, Question], dict]

_POSITIONS: dict[str, float] = {}  # text -> the model's language position (``service.centroids``)
_EMBEDDER: list[Any] = []


def text_positions(ch: Any, texts: Mapping[str, str]) -> dict[str, float]:
    """The bench's ``service.search.stored_positions``: the candidates that mix two languages
    (``service.search.mixed_ids``) placed by their text embedded as a passage, which is the
    vector a store holds for a memory or chunk of one window (every text of these sets).
    Captures need not carry them; the model is the one the captures' runtimes share
    (``bench.mv.shared_embedder``), loaded on first need if no capture ran in this process."""
    from bench.mv import shared_embedder
    from memvault.config import Settings
    from memvault.service.centroids import language_centroids, language_positions
    from memvault.service.search import mixed_ids

    ids = mixed_ids(ch, texts)
    todo = sorted({texts[i] for i in ids} - _POSITIONS.keys())
    if todo:
        if not _EMBEDDER:
            _EMBEDDER.append(shared_embedder(Settings(model_cache_dir=DEFAULT_MODEL_CACHE)))
        emb = _EMBEDDER[0]
        vecs = emb.embed_passages(todo)
        _POSITIONS.update(language_positions({t: list(map(float, v)) for t, v in zip(todo, vecs, strict=True)},
                                             language_centroids(emb)))
    return {i: _POSITIONS[texts[i]] for i in ids if texts[i] in _POSITIONS}


def v_shipped(**over) -> Variant:
    """``service.search.score_candidates`` with ``bench.ranking.Ranking`` overrides (``order_memories``
    applies them too: e.g. ``neighbour_lift``)."""
    def f(ch, texts, r, q):
        rr = replace(r, **over)
        c = ch if rr.language_neutral else replace(ch, query_dots={})
        return score_with(c, texts, rr.fusion_dense_weight, text_positions(c, texts))
    f.ranking_over = over  # type: ignore[attr-defined]
    return f


def v_options(coverage_weighted: bool = True, cross_script: bool = True, translated: bool = True,
              unseen_name: bool = True) -> Variant:
    """The shipped ranking with keyword coverage (``coverage_weighted``), the cross-language
    stand-in (``cross_script``), the dictionary's cross-language matches (``translated``) or
    the relevance term of a name no candidate holds (``unseen_name``) switched off:
    ``service.search.score_candidates``'s steps with those arguments of
    ``policy.fusion.convex_fuse`` changed."""
    def f(ch, texts, r, q):
        from memvault.policy.fusion import convex_fuse
        from memvault.service.search import fusion_inputs, scored
        fi = fusion_inputs(ch, texts, text_positions(ch, texts))
        if not unseen_name:
            fi = replace(fi, unseen_name=False)
        fused = convex_fuse(fi.dense, fi.keyword, dense_weight=r.fusion_dense_weight,
                            coverage=fi.coverage if coverage_weighted else None,
                            unjudged=fi.unjudged if cross_script else None,
                            translated=fi.translated if translated else None)
        return scored(fi, fused, ch)
    f.ranking_over = {"neighbour_lift": 0.7}  # type: ignore[attr-defined]
    return f


def v_no_time(variant: Variant) -> Variant:
    """``variant`` without the time-expression boost (``policy.time_expressions``)."""
    variant.time_expressions = False  # type: ignore[attr-defined]
    return variant


def _language_free(**kw: Any) -> Variant:
    from bench.language_free import v_language_free

    return v_language_free(**kw)


DEFAULT = "memvault (default)"

VARIANTS: dict[str, Variant] = {
    # the shipped ranking: convex fusion (dense weight 0.4) with keyword coverage over the terms each
    # candidate can be judged by and the cross-language credit, conversation neighbours lifted to
    # 0.7 x their hit's score, the time-expression boost, importance and recency
    DEFAULT: v_shipped(neighbour_lift=0.7),
    # each mechanism switched off on its own
    "no conversation neighbours": v_shipped(neighbour_lift=0.0),
    "no time expressions": v_no_time(v_shipped(neighbour_lift=0.7)),
    "no language correction": v_shipped(neighbour_lift=0.7, language_neutral=False),
    "no coverage weighting": v_options(coverage_weighted=False),
    "no cross-language credit": v_options(cross_script=False),
    "no dictionary translation": v_options(translated=False),
    "no unseen-name term": v_options(unseen_name=False),
    "no importance or recency": v_shipped(neighbour_lift=0.7, weight_relevance=1.0, weight_importance=0.0,
                                          weight_recency=0.0),
    # one channel alone, through the same ranking
    "dense channel alone (language-corrected)": v_shipped(neighbour_lift=0.7, fusion_dense_weight=1.0),
    # a candidate shape, not shipped: the language direction taken out of both vectors (bench.language_free)
    "language-free cosine, fixed cross-language credit": _language_free(),
    "language-free cosine, two directions, no shift": _language_free(credit=0.4, two_directions=True),
}


# --------------------------------------------------------------------------------------
# ordering and metrics


def order_memories(q: Question, variant: Variant, r) -> list[str]:
    """Candidate ids best first, as ``recall.rank`` orders them (``r`` with the variant's own
    ``Ranking`` overrides, if it has any)."""
    return order_and_scores(q, variant, r)[0]


def order_and_scores(q: Question, variant: Variant, r) -> tuple[list[str], dict]:
    """``order_memories`` and the variant's ``{id: Scored}`` it was ordered from (its
    relevance per candidate), from one scoring instead of two."""
    from memvault.policy.neighbours import (
        NEIGHBOUR_MAX_CHARS,
        NEIGHBOUR_REACH,
        conversation_neighbours,
        final_scores_with_neighbours,
    )
    from memvault.policy.ranking import final_score, recency
    from memvault.policy.time_expressions import time_boosted, time_spans
    from memvault.service.memory.recall import LIKELY_ANSWER

    r = replace(r, **getattr(variant, "ranking_over", {}))
    scored = variant(q.channels, q.texts, r, q)
    near = conversation_neighbours(q.beside, {i: m[1] for i, m in q.meta.items()},
                                   {i: len(t) for i, t in q.texts.items()},
                                   reach=getattr(variant, "neighbour_reach", NEIGHBOUR_REACH),
                                   max_chars=getattr(variant, "neighbour_max_chars", NEIGHBOUR_MAX_CHARS))
    spans = time_spans(q.channels.query, q.now) if getattr(variant, "time_expressions", True) else []

    def final(i: str, s: float) -> float:
        imp, created, accessed = q.meta[i]
        rec = recency(accessed, q.now, r.half_life_days)
        return final_score(time_boosted(s, created, spans), imp, rec, r.weight_relevance, r.weight_importance,
                           r.weight_recency)

    scores = final_scores_with_neighbours({i: sc.score for i, sc in scored.items()}, near, r.neighbour_lift, final,
                                          {i: sc.relevance for i, sc in scored.items()}, LIKELY_ANSWER)
    return sorted(scored, key=lambda i: -scores[i][0]), scored  # stable, as recall.rank's list.sort


def order_docs(q: Question, variant: Variant, r) -> list[str]:
    """Document ids best first, as ``rank_chunks`` orders chunks (depth 100)."""
    scored = variant(q.channels, q.texts, r, q)
    return [q.expand[c][0] for c in list(scored)[:100]]


def score_locomo(qs: list[Question], variant: Variant, r) -> dict[str, dict[str, float]]:
    """{group: {R@1, R@5, R@10, R@25}} for "all", each conversation pair named in GROUPS."""
    from bench.metrics import recall_at_k

    per: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    for q in qs:
        turns = [t for i in order_memories(q, variant, r) for t in q.expand[i]][:25]
        s = q.gold["sample"]
        per["all"].append((turns, q.gold["evidence"]))
        if s == "conv-30":
            per["conv-30"].append((turns, q.gold["evidence"]))
        if s in ("conv-26", "conv-30"):
            per["conv-26+30"].append((turns, q.gold["evidence"]))
    out = {}
    for g, rows in per.items():
        out[g] = {"n": len(rows), **{f"R@{k}": round(sum(recall_at_k(t, ev, k) for t, ev in rows) / len(rows), 3)
                                     for k in (1, 5, 10, 25)}}
    return out


def score_lme(qs: list[Question], variant: Variant, r, limit: int | None = None) -> dict[str, float]:
    """Mean LongMemEval metrics (``bench.longmemeval.scores``) over the first ``limit`` questions."""
    from bench.longmemeval import scores
    from bench.metrics import dedupe

    acc: dict[str, float] = defaultdict(float)
    chosen = qs[:limit] if limit else qs
    for q in chosen:
        turns = [t for i in order_memories(q, variant, r) for t in q.expand[i]]
        sess = dedupe([q.gold["session_of"][t] for t in turns])
        for m, v in scores(turns, sess, q.gold["turns"], q.gold["sessions"]).items():
            acc[m] += v
    return {m: round(v / len(chosen), 3) for m, v in acc.items()} | {"n": len(chosen)}


def score_abstention(qs: list[Question], variant: Variant, r, limit: int = 8,
                     thresholds=(0.0, 0.1, 0.3, 0.5)) -> dict[str, tuple[float, float]]:
    """Answerable side of ``bench.abstention``: {min_relevance: (turn any@5, session any@5)} after the filter."""
    from bench.metrics import recall_any

    out = {}
    for t in thresholds:
        ta = sa = 0.0
        for q in qs[:limit]:
            scored = variant(q.channels, q.texts, r, q)
            rel = {i: sc.relevance for i, sc in scored.items()}
            kept = [i for i in order_memories(q, variant, r) if rel[i] >= t][:5]
            turns = [tt for i in kept for tt in q.expand[i]]
            ta += recall_any(turns, q.gold["turns"], len(turns))
            sa += recall_any([q.gold["session_of"][tt] for tt in turns], q.gold["sessions"], len(turns))
        out[f"{t:g}"] = (round(ta / limit, 3), round(sa / limit, 3))
    return out


def score_beir(qs: list[Question], variant: Variant, r) -> dict[str, float]:
    """nDCG@10 and Recall@100 as ``bench.beir.score``."""
    from bench.beir import ndcg_at, recall_at

    n = len(qs)
    nd = sum(ndcg_at(order_docs(q, variant, r), q.gold["qrels"], 10) for q in qs) / n
    rc = sum(recall_at(order_docs(q, variant, r), q.gold["qrels"], 100) for q in qs) / n
    return {"ndcg@10": round(nd, 4), "recall@100": round(rc, 4), "n": n}


def score_bilingual(qs: list[Question], variant: Variant, r) -> dict[str, dict[str, float]]:
    """{direction: {n, R@1, MRR}} as ``bench.bilingual.direction_scores``."""
    acc: dict[str, list[int]] = defaultdict(list)
    for q in qs:
        t = q.gold["target"]
        if t is None:
            continue
        ids = order_memories(q, variant, r)
        acc[q.gold["direction"]].append(ids.index(t) + 1 if t in ids else 0)
    return {d: {"n": len(x), "R@1": round(sum(v == 1 for v in x) / len(x), 3),
                "MRR": round(sum(1 / v for v in x if v) / len(x), 3)} for d, x in sorted(acc.items())}


async def weak_keyword_cases(model_cache: Path, variants: Mapping[str, Variant]) -> dict[str, dict[str, Any]]:
    """The weak-keyword fault cases per variant: the reported ``search_docs`` folder and the
    other bilingual document cases (first hit right), and the recall case of
    tests/bench_floors/test_recall_relevance.py (16 probe facts, "backed up" finds the Chinese memory)."""
    from bench import bilingual
    from bench.mv import PROJECT, SCOPE, USER, open_runtime, remember_turn
    from memvault.service.documents.collection import DOCS_COLLECTION
    from memvault.service.documents.indexing import index_docs
    from memvault.service.filters import scope_filter
    from memvault.service.runtime import MEMORY_COLLECTION
    from memvault.service.search import search_channels
    from memvault.storage.docs import DocStore
    from memvault.storage.vectors.base import VectorFilter

    out: dict[str, dict[str, Any]] = {v: {"docs_first": [], "recall_backed_up": None} for v in variants}
    cases = json.loads(bilingual.DOC_CASES.read_text(encoding="utf-8"))["cases"]
    with tempfile.TemporaryDirectory(prefix="memvault-fc-") as tmp_s:
        tmp = Path(tmp_s)
        rt = await open_runtime(tmp / "docs", model_cache)
        try:
            r = Ranking()
            for n, case in enumerate(cases):
                folder = tmp / f"case{n}"
                for rel, text in case["files"].items():
                    p = folder / rel
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text(text, encoding="utf-8")
                coll = f"case{n}"
                await index_docs(rt, SCOPE, [folder], coll, [folder], cite_bases=[folder])
                flt = VectorFilter(projects=[PROJECT], status=None, path_prefix=None, equals={"collection": coll})
                ch = await search_channels(rt, DOCS_COLLECTION, case["query"], flt, r.candidates)
                async with DocStore.connect(rt.settings.db_path) as store:
                    rows = await store.chunks(ch.ids())
                live = {c: row for c, row in rows.items() if row.file is not None}
                q = Question("docs", str(n), ch, {c: row.text for c, row in live.items()}, {}, 0.0, {},
                             {c: [row.file.path] for c, row in live.items()})
                for name, var in variants.items():
                    out[name]["docs_first"].append(order_docs(q, var, r)[0] == case["want"])
        finally:
            await rt.close()
        rt = await open_runtime(tmp / "mem", model_cache)
        try:
            facts = bilingual.load_probe()
            ids = {}
            for i in range(16):
                res = await remember_turn(rt, facts[i].zh if i % 2 == 0 else facts[i].en, None)
                ids[i] = res.id
            rows = {m.id: m for m in await rt.facts.get(list(ids.values()))}
            query = "How often is the production database backed up?"
            flt = scope_filter(USER, [PROJECT], rt.clock.now())
            ch = await search_channels(rt, MEMORY_COLLECTION, query, flt, Ranking().candidates)
            texts = {c: rows[c].content for c in ch.ids() if c in rows}
            meta = {c: (rows[c].importance, rows[c].created_at, rows[c].last_accessed_at) for c in texts}
            q = Question("recall", "backed", ch, texts, meta, rt.clock.now(), {})
            for name, var in variants.items():
                out[name]["recall_backed_up"] = order_memories(q, var, Ranking())[0] == ids[0]
        finally:
            await rt.close()
    return out


# --------------------------------------------------------------------------------------


async def capture(args) -> dict[str, list[Question]]:
    """Captured questions per set, from ``args.capture_dir`` when there, else made and kept there."""
    from bench import devmemory

    caps: dict[str, list[Question]] = {}
    makers = {"locomo": lambda: capture_locomo(args), "lme": lambda: capture_lme(args),
              "scifact": lambda: capture_beir(args, "scifact", "scifact"),
              "cmrc": lambda: capture_beir(args, "cmrc", "cmrc2018_zh"),
              "bilingual": lambda: capture_bilingual(args),
              "devmem-dev": lambda: devmemory.capture("dev", args.model_cache),
              "devmem-guard": lambda: devmemory.capture("guard", args.model_cache),
              "devmem-holdout": lambda: devmemory.capture("holdout", args.model_cache)}
    args.capture_dir.mkdir(parents=True, exist_ok=True)
    for s in args.sets:
        path = args.capture_dir / f"{s}.pkl"
        if path.is_file():
            from bench.calibration import load_captures
            caps[s] = load_captures(path)  # noqa: ASYNC240 - one step at a time
            continue
        t0 = time.perf_counter()
        caps[s] = await makers[s]()
        path.write_bytes(pickle.dumps(caps[s]))  # noqa: ASYNC240
        print(f"# captured {s}: {len(caps[s])} questions in {time.perf_counter() - t0:.0f} s", flush=True)
    return caps


def evaluate(caps: dict[str, list[Question]], variants: Mapping[str, Variant], lme_limits=(8, 16)) -> dict:
    """Every metric of every set for every variant."""
    from bench import devmemory
    # the variants measured before the neighbour lift are scored without it, as they were
    r = Ranking(neighbour_lift=0.0)
    res: dict[str, dict[str, Any]] = {}
    for name, var in variants.items():
        row: dict[str, Any] = {}
        if "locomo" in caps:
            row["locomo"] = score_locomo(caps["locomo"], var, r)
        if "lme" in caps:
            limits = sorted({*lme_limits, len(caps["lme"])})  # and every captured question
            row["lme"] = {str(n): score_lme(caps["lme"], var, r, n) for n in limits if n <= len(caps["lme"])}
            row["abstention"] = score_abstention(caps["lme"], var, r)
        for s in ("scifact", "cmrc"):
            if s in caps:
                row[s] = score_beir(caps[s], var, r)
        if "bilingual" in caps:
            row["bilingual"] = score_bilingual(caps["bilingual"], var, r)
        for s in ("devmem-dev", "devmem-guard"):
            if s in caps:
                row[s] = devmemory.score(caps[s], var, r)
        res[name] = row
    return res


def tables(res: dict) -> str:
    """Markdown tables of ``evaluate``'s result."""
    parts = []
    first = next(iter(res.values()))
    if "locomo" in first:
        heads = ["variant"] + [f"LoCoMo {g} R@5 / R@10" for g in first["locomo"]]
        parts.append(md_table(heads, [[v] + [f"{m['R@5']:.3f} / {m['R@10']:.3f}" for m in row["locomo"].values()]
                                      for v, row in res.items()]))
    if "lme" in first:
        for n in first["lme"]:
            heads = ["variant", f"LME {n} q: sess any@1", "sess all@5", "sess all@10", "sess nDCG@5", "turn any@1",
                     "turn any@5", "turn all@5", "turn any@10"]
            parts.append(md_table(heads, [[v, *[row["lme"][n][m] for m in (
                "session any@1", "session all@5", "session all@10", "session ndcg@5", "turn any@1", "turn any@5",
                "turn all@5", "turn any@10")]] for v, row in res.items()]))
        parts.append(md_table(["variant", *[f"abstention answerable turn/session any@5 @ {t}"
                                             for t in first["abstention"]]],
                              [[v, *[f"{a} / {b}" for a, b in row["abstention"].values()]] for v, row in res.items()]))
    beir_sets = [s for s in ("scifact", "cmrc") if s in first]
    if beir_sets:
        parts.append(md_table(["variant", *[f"{s} nDCG@10 / R@100" for s in beir_sets]],
                              [[v, *[f"{row[s]['ndcg@10']:.3f} / {row[s]['recall@100']:.3f}" for s in beir_sets]]
                               for v, row in res.items()]))
    if "bilingual" in first:
        dirs = ["en->zh", "zh->en", "en->en", "zh->zh"]
        parts.append(md_table(["variant", *[f"{d} R@1 / MRR" for d in dirs]],
                              [[v, *[f"{row['bilingual'][d]['R@1']:.3f} / {row['bilingual'][d]['MRR']:.3f}"
                                     for d in dirs]] for v, row in res.items()]))
    for s in ("devmem-dev", "devmem-guard"):
        if s in first:
            slices = list(first[s]["slices"])
            parts.append(md_table(["variant", *[f"{s} {sl} R@1 / R@5" for sl in slices]],
                                  [[v, *[f"{row[s]['slices'][sl]['memvault']['R@1']:.3f} / "
                                         f"{row[s]['slices'][sl]['memvault']['R@5']:.3f}" for sl in slices]]
                                   for v, row in res.items()]))
            langs = list(first[s]["abstention"])
            parts.append(md_table(["variant", *[f"{s} AUC {lang}" for lang in langs]],
                                  [[v, *[row[s]["abstention"][lang]["AUC"] for lang in langs]]
                                   for v, row in res.items()]))
    if "weak_keyword" in first:
        parts.append(md_table(["variant", "search_docs cases first (of 6)", "reported docs case", "recall 'backed up'"],
                              [[v, sum(row["weak_keyword"]["docs_first"]), row["weak_keyword"]["docs_first"][0],
                                row["weak_keyword"]["recall_backed_up"]] for v, row in res.items()]))
    return "\n\n".join(parts)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Capture (or load) the sets, evaluate every variant, print and write the results."""
    import os

    t0 = time.perf_counter()
    caps = await capture(args)
    variants = {k: v for k, v in VARIANTS.items() if not args.variants or k in args.variants}
    res = evaluate(caps, variants)
    if not args.no_cases:
        for name, cases in (await weak_keyword_cases(args.model_cache, variants)).items():
            res[name]["weak_keyword"] = cases
    payload = {"protocol": __doc__.strip(), "sets": {s: len(q) for s, q in caps.items()}, "slice": args.slice,
               "locomo": args.locomo, "lme": args.lme, "results": res, "loadavg": os.getloadavg(),
               "elapsed_s": round(time.perf_counter() - t0, 1)}
    path = write_result("fusion_compare", payload)
    print(tables(res))
    print(f"\n{payload['elapsed_s']} s, load {payload['loadavg']}. JSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--capture-dir", type=Path, required=True, help="captured candidates are kept and reused here")
    p.add_argument("--sets", nargs="*", default=list(SETS), choices=SETS)
    p.add_argument("--locomo", nargs="*", default=[], help="LoCoMo conversations (default all 7)")
    p.add_argument("--lme", type=int, default=16, help="LongMemEval questions, round-robin by type (default 16)")
    p.add_argument("--slice", default="100:400", help="SciFact / CMRC slice QUERIES:OTHERS as bench.beir --slice")
    p.add_argument("--variants", nargs="*", help="variant names (default all)")
    p.add_argument("--no-cases", action="store_true", help="leave out the weak-keyword cases")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fusion_compare", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
