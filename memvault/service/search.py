"""Scoring the candidates of one search: channel hits -> fused rank score, calibrated relevance.

``search_channels`` gathers the dense and keyword candidates of a query (filtered in the
engine); ``score_candidates`` turns them into one ``Scored`` per candidate, given the
candidates' texts (which the caller reads from SQLite anyway). Shared by ``recall``,
``forget`` and ``search_docs``. The pure parts are in ``memvault.policy.fusion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from memvault.embedding.embedder import Embedder
from memvault.policy.cjk import CJK_CHAR
from memvault.policy.dictionary import translated_terms
from memvault.policy.fusion import (
    calibrated_relevance,
    convex_fuse,
    dense_background,
    keyword_coverage,
    language_shift,
    store_language_gap,
)
from memvault.policy.keywords import keyword_term_set
from memvault.policy.language import (
    CJK,
    OTHER,
    cjk_weight,
    judged_terms,
    judged_whatever_held,
    named_things,
    passage_language,
    script_class,
    terms_weight,
)
from memvault.service.centroids import LANGUAGE_NEUTRAL, language_centroids, language_neutral_query, language_positions
from memvault.service.indexing import keyword_vector
from memvault.service.runtime import Runtime
from memvault.storage.vectors.base import VectorFilter, VectorIndex, canonical_id

CANDIDATES = 100
"""Candidates each channel (dense, keyword) gives before fusion, at least the k asked for: the
value every recall figure of docs/benchmarks.md was measured with."""
_NO_TERMS: frozenset[str] = frozenset()
DENSE_WEIGHT = 0.4
"""Share of the dense channel in convex fusion (the keyword channel has the rest): chosen on
LoCoMo, LongMemEval, SciFact, CMRC and the bilingual probe (docs/benchmarks.md, "Convex vs RRF,
measured fairly")."""


@dataclass(frozen=True)
class Channels:
    """What each channel found for one query: ``dense`` cosine and ``keyword`` score by item id
    (each best first; see ``search_channels`` for how many), and ``query_dots``: the query embedding's dot product with
    each language's mean passage embedding (empty when language neutrality is off).
    ``stored``: the stored dense vectors the search read already (``dense_candidates``'s
    ``read``), so that the scoring does not read them again."""

    query: str
    dense: dict[str, float]
    keyword: dict[str, float]
    query_dots: dict[str, float]
    stored: Mapping[str, list[float]] = field(default_factory=dict)

    def ids(self) -> list[str]:
        """Every candidate id, dense hits first."""
        return list(dict.fromkeys([*self.dense, *self.keyword]))


@dataclass(frozen=True)
class Scored:
    """One candidate's scores: ``score`` the fused rank score in [0, 1] (orders results),
    ``relevance`` the calibrated probability of being relevant in [0, 1], ``similarity``
    the raw dense cosine (None when the dense channel did not return it)."""

    score: float
    relevance: float
    similarity: float | None


async def search_channels(rt: Runtime, collection: str, query: str, flt: VectorFilter, n: int,
                          *, language_neutral: bool | None = None) -> Channels:
    """Dense and keyword candidates of ``query`` (``n`` per channel and, with language
    neutrality on, up to ``n`` more dense ones in the other language: see
    ``dense_candidates``), filtered in the engine by ``flt``.

    One worker-thread call does all of it (the query embedding, its keyword vector, both
    searches, the dot products with the language centroids): each hand-off to a worker
    thread and back is a thread wake-up and a GIL hand-over, which on a loaded machine
    costs more than the small steps between them.
    """
    emb, vectors = await rt.ready()
    neutral = LANGUAGE_NEUTRAL if language_neutral is None else language_neutral

    def search() -> Channels:
        qvec = emb.embed_queries([query])[0]
        centroids = language_centroids(emb) if neutral else {}
        read: dict[str, list[float]] = {}
        dense = dense_candidates(vectors, collection, qvec, flt, n, centroids, language_of(query)[0] == CJK, read=read)
        sparse = keyword_vector(query, query=True)
        sparse_hits = vectors.search_sparse(collection, sparse, flt, n) if sparse.indices else []
        dots = {lang: float(np.dot(c, qvec)) for lang, c in centroids.items()}
        return Channels(query=query, dense=dense, keyword={h.id: h.score for h in sparse_hits}, query_dots=dots,
                        stored=read)

    return await rt.run_sync(search)


def dense_candidates(vectors: VectorIndex, collection: str, qvec: np.ndarray, flt: VectorFilter, n: int,
                     centroids: Mapping[str, np.ndarray], query_cjk: bool = False, *,
                     read: dict[str, list[float]] | None = None) -> dict[str, float]:
    """Item id -> cosine to ``qvec`` (of the item's best point), best first: the top ``n`` by
    cosine, and, given the language ``centroids``, those of the top ``n`` by the
    language-neutral query (``service.centroids.language_neutral_query``) that the first
    search missed and that the model places in the other language than the query's
    (``query_cjk``: the query is Chinese; ``service.centroids.language_positions`` of their
    own point's stored vector, an item's first window, on the other side of the midpoint),
    with their cosine computed from that vector. Without the second search a store with more
    than ``n`` memories in the question's language never offers one in the other language;
    keeping only the other language's leaves a store in one language ranked exactly as by
    the first search alone. When the first search returns fewer than ``n``, every item the
    filter admits is a candidate already and the second's answer is not used.

    Both searches are one engine call (``VectorIndex.search_dense_many``: one pass over the
    points for the two). ``read``, when given, receives the stored vectors read here (item
    id -> vector), for ``stored_positions``. Blocking: call from a worker thread."""
    neutral_q = language_neutral_query(qvec, dict(centroids)) if centroids else None
    queries = [qvec.tolist()] if neutral_q is None else [qvec.tolist(), neutral_q.tolist()]
    answers = vectors.search_dense_many(collection, queries, flt, n)
    hits = {h.id: h.score for h in answers[0]}
    if neutral_q is None or len(hits) < n:  # fewer than n match the filter: every one is a candidate already
        return hits
    missed = [h.id for h in answers[1] if h.id not in hits]
    if not missed:
        return hits
    found = {i: vec for i, vec in own_vectors(vectors, collection, missed).items() if len(vec) == len(qvec)}
    if read is not None:
        read.update(found)
    positions = language_positions(found, dict(centroids))
    for i, vec in found.items():
        if i in positions and (positions[i] >= 0.5) != query_cjk:
            hits[i] = float(np.dot(np.asarray(vec, dtype=np.float32), qvec))
    return dict(sorted(hits.items(), key=lambda kv: -kv[1]))


@dataclass(frozen=True)
class FusionInputs:
    """What fusion reads of the candidates of ``Channels`` that have a text: ``ids`` (the
    candidates kept, channel order), ``dense`` (cosine minus the language shift between
    the query's language and the candidate's), ``keyword`` (the keyword channel's scores),
    ``coverage`` (weighted share of the query terms the keyword channel can judge the
    candidate by that it holds, [0, 1]; ``policy.language.judged_terms`` and
    ``terms_weight``), ``unjudged`` (weighted share of the query's distinct terms it cannot
    be judged by, [0, 1]: 0 in the query's own language,
    1 for a memory in the other language that shares no identifier, number or word with
    it), ``query_terms``, ``query_script`` (``policy.language.script_class`` of the query),
    ``translated`` (for a candidate with an unjudged part: the share of that part it matches
    through the bilingual dictionary, ``policy.dictionary.translated_terms``, [0, 1]),
    ``unseen_name`` (the query names something, ``policy.language.named_things``, that no
    candidate holds: see ``unseen_name``)."""

    ids: list[str]
    dense: dict[str, float]
    keyword: dict[str, float]
    coverage: dict[str, float]
    unjudged: dict[str, float]
    query_terms: frozenset[str]
    query_script: str
    translated: dict[str, float] = field(default_factory=dict)
    unseen_name: bool = False


def mixed_ids(ch: Channels, texts: Mapping[str, str]) -> list[str]:
    """The dense candidates of ``ch`` whose text in ``texts`` mixes CJK characters with words
    of another language (``policy.language.cjk_weight`` strictly between 0 and 1): the ones
    whose language the correction reads from the model (``policy.language.passage_language``).
    Empty when language neutrality is off (``ch.query_dots`` empty)."""
    if not ch.query_dots:
        return []
    return [i for i in ch.dense if i in texts and 0.0 < language_of(texts[i])[1] < 1.0]


def stored_positions(emb: Embedder, vectors: VectorIndex, collection: str, ids: list[str],
                     known: Mapping[str, list[float]] | None = None) -> dict[str, float]:
    """``service.centroids.language_positions`` of the stored items ``ids`` of ``collection``
    (their own point's dense vector: taken from ``known`` when there, the item id -> vector
    already read this call, else read from the index; ids without a point are left out).
    Blocking: call from a worker thread."""
    if not ids:
        return {}
    have = known or {}
    got = {i: have[i] for i in ids if i in have}
    rest = [i for i in ids if i not in got]
    if rest:
        got |= own_vectors(vectors, collection, rest)
    return language_positions(got, language_centroids(emb))


def own_vectors(vectors: VectorIndex, collection: str, ids: list[str]) -> dict[str, list[float]]:
    """Item id -> the dense vector of the item's own point (an item of several windows: its
    first), for the ``ids`` that have one. Blocking: call from a worker thread."""
    by_point = {canonical_id(i): i for i in ids}
    return {by_point[p]: pt.dense for p, pt in vectors.retrieve(collection, list(by_point)).items()
            if p in by_point and pt.dense}


async def score_texts(rt: Runtime, collection: str, ch: Channels, texts: Mapping[str, str]) -> dict[str, Scored]:
    """``score_candidates`` of ``ch`` over ``texts``, with the model's language positions of the
    candidates that mix two languages read from ``collection`` first (one worker-thread call)."""
    emb, vectors = await rt.ready()

    def work() -> dict[str, Scored]:
        positions = stored_positions(emb, vectors, collection, mixed_ids(ch, texts), ch.stored)
        return score_candidates(ch, texts, positions)

    return await rt.run_sync(work)


def language_of(text: str) -> tuple[str, float]:
    """``(policy.language.script_class(text), policy.language.cjk_weight(text))``.

    A text without a CJK character is ``"other"`` with CJK weight 0.0 whatever its words,
    so its words are not counted (a regex pass with a look-ahead per character, ~0.1-0.3 ms
    for a memory's text not seen before; recall asks about ~160 candidates a call).
    """
    if text.isascii() or CJK_CHAR.search(text) is None:
        return OTHER, 0.0
    return script_class(text), cjk_weight(text)


def fusion_inputs(ch: Channels, texts: Mapping[str, str],
                  positions: Mapping[str, float] | None = None) -> FusionInputs:
    """``FusionInputs`` of the candidates of ``ch`` found in ``texts`` (pure; the keyword
    analysis of the texts is memoised by ``keyword_term_set``). ``positions``: where the
    model places candidates that mix two languages (``stored_positions``); the language
    correction reads their CJK weight from it (``policy.language.passage_language``)."""
    where = positions or {}
    ids = [i for i in ch.ids() if i in texts]
    qlang, qmix = language_of(ch.query)
    qterms = keyword_term_set(ch.query)
    qweight = terms_weight(qterms)
    langs = {i: language_of(texts[i]) for i in ids}
    for i, pos in where.items():  # a text mixing the two languages: where the model places it
        if i in langs:
            langs[i] = passage_language(texts[i], pos)
    by_lang: dict[str, list[float]] = {CJK: [], OTHER: []}
    for i, cos in ch.dense.items():
        if i in langs:
            by_lang[langs[i][0]].append(cos)
    gap = store_language_gap(by_lang[CJK], by_lang[OTHER])
    dense: dict[str, float] = {}
    coverage: dict[str, float] = {}
    unjudged: dict[str, float] = {}
    # A candidate is judged by its script and by which of the query's terms it holds, nothing
    # else of its text (``judged_terms``, ``keyword_coverage``): candidates alike in both
    # (most hold none or one) share one answer, computed over those few terms.
    judged_by: dict[tuple[str, frozenset[str]], tuple[float, float, frozenset[str]]] = {}
    translated: dict[str, float] = {}
    # A candidate the keyword channel did not return, in a script that every query term judges
    # whatever it holds (``judged_whatever_held``: an English memory for an English question),
    # needs no analysis of its text: its coverage is not used, and nothing is unjudged.
    any_terms = {script: judged_whatever_held(qterms, script) for script in (CJK, OTHER)}
    skipped: list[str] = []
    for i in ids:
        if i in ch.dense:
            dense[i] = ch.dense[i] - language_shift(ch.query_dots, qmix, langs[i][1], gap)
        if not qterms:
            continue
        if i not in ch.keyword and any_terms[langs[i][0]]:
            key = (langs[i][0], _NO_TERMS)
            skipped.append(i)
        else:
            key = (langs[i][0], qterms & keyword_term_set(texts[i]))
        got = judged_by.get(key)
        if got is None:
            judged = judged_terms(qterms, key[1], key[0])
            got = judged_by[key] = (1.0 - terms_weight(judged) / qweight, keyword_coverage(judged, key[1]),
                                    qterms - judged)
        unjudged[i] = got[0]
        if i in ch.keyword:
            coverage[i] = got[1]
        if got[0] > 0:
            translated[i] = terms_weight(translated_terms(ch.query, texts[i]) & got[2]) / (got[0] * qweight)
    keyword = {i: ch.keyword[i] for i in ids if i in ch.keyword}
    held = frozenset().union(*(terms for _, terms in judged_by))
    unseen = unseen_name(ch.query, qterms, held)
    if unseen and skipped:  # a candidate not analysed above may hold the name: look before doubting
        held = held.union(*(qterms & keyword_term_set(texts[i]) for i in skipped))
        unseen = unseen_name(ch.query, qterms, held)
    return FusionInputs(ids, dense, keyword, coverage, unjudged, qterms, qlang, translated, unseen)


def unseen_name(query: str, query_terms: frozenset[str], held: frozenset[str]) -> bool:
    """Whether ``query`` names something (``policy.language.named_things``: an identifier, a
    product, an acronym, an English term in a Chinese sentence) whose keyword term none of
    the candidates holds (``held``: the query terms the candidates hold between them). A
    name's term is the name itself, lower-cased, when the keyword channel keeps it whole
    (``SHOP-4091``, ``max.poll.interval.ms``), else its longest term (``Kubernetes`` ->
    ``kubernet``); a name written whole whose parts are all held counts as held
    (``class-based`` against "class" and "based"); a name the query's own terms do not hold
    is left out.

    The candidates stand for the store: a memory holding a name that rare scores high on
    it in the keyword channel, which returns its top ``CANDIDATES`` hits. A question about a
    thing the store never mentions cannot be answered from it, however close in topic the
    best memory is (calibrated relevance lowers its estimate: ``policy.fusion``)."""
    for name in named_things(query):
        terms = keyword_term_set(name)
        whole = name.lower() if name.lower() in terms else max(terms, key=len, default="")
        parts = terms - {whole}
        if whole in query_terms and whole not in held and not (parts and parts <= held):
            return True
    return False


def scored(f: FusionInputs, fused: Mapping[str, float], ch: Channels) -> dict[str, Scored]:
    """``Scored`` of each candidate of ``fused`` (its fused score, best first as given), with
    the calibrated relevance of ``policy.fusion.calibrated_relevance`` from ``f``."""
    background = dense_background(f.dense.values(), f.query_script)
    return {i: Scored(score=s, relevance=calibrated_relevance(f.dense[i] - background if i in f.dense else None,
                                                              f.coverage.get(i, 0.0), f.unjudged.get(i, 0.0),
                                                              f.translated.get(i, 0.0), f.unseen_name),
                      similarity=ch.dense.get(i)) for i, s in fused.items()}


def score_candidates(ch: Channels, texts: Mapping[str, str],
                     positions: Mapping[str, float] | None = None) -> dict[str, Scored]:
    """Fused and calibrated scores of the candidates of ``ch`` that have a text in ``texts``
    (the others, e.g. rows gone since, are left out), best first by ``score``: convex fusion
    (``policy.fusion.convex_fuse``) with keyword coverage over the terms each candidate can
    be judged by and the cross-language stand-in for the rest; the dense channel's share is
    ``DENSE_WEIGHT``.

    ``positions``: see ``fusion_inputs``. Blocking (keyword analysis of the candidates'
    texts): call from a worker thread.
    """
    f = fusion_inputs(ch, texts, positions)
    fused = convex_fuse(f.dense, f.keyword, dense_weight=DENSE_WEIGHT, coverage=f.coverage,
                        unjudged=f.unjudged, translated=f.translated)
    return scored(f, fused, ch)
