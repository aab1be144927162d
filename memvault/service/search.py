"""Scoring the candidates of one search: channel hits -> fused rank score, calibrated relevance.

``search_channels`` gathers the dense and keyword candidates of a query (filtered in the
engine); ``score_candidates`` turns them into one ``Scored`` per candidate, given the
candidates' texts (which the caller reads from SQLite anyway). Shared by ``recall``,
``forget`` and ``search_docs``. The pure parts are in ``memvault.policy.fusion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from memvault.config import RankingSettings
from memvault.policy.fusion import (
    calibrated_relevance,
    convex_fuse,
    dense_background,
    keyword_coverage,
    language_shift,
    store_language_gap,
)
from memvault.policy.keywords import keyword_term_set
from memvault.policy.language import CJK, OTHER, cjk_weight, judged_terms, script_class, terms_weight
from memvault.service.centroids import language_centroids
from memvault.service.indexing import embed_query, keyword_vector
from memvault.service.runtime import Runtime
from memvault.storage.vectors.base import VectorFilter


@dataclass(frozen=True)
class Channels:
    """What each channel found for one query: ``dense`` cosine and ``keyword`` score by item id
    (each best first, at most n), and ``query_dots``: the query embedding's dot product with
    each language's mean passage embedding (empty when language neutrality is off)."""

    query: str
    dense: dict[str, float]
    keyword: dict[str, float]
    query_dots: dict[str, float]

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
    """Dense and keyword candidates of ``query`` (``n`` per channel, filtered in the engine by ``flt``)."""
    emb, vectors = await rt.ready()
    neutral = rt.settings.ranking.language_neutral if language_neutral is None else language_neutral
    qvec = await embed_query(rt, query)
    dense_hits = await rt.run_sync(vectors.search_dense, collection, qvec.tolist(), flt, n)
    sparse = await rt.run_sync(lambda: keyword_vector(query, query=True))
    sparse_hits = []
    if sparse.indices:
        sparse_hits = await rt.run_sync(vectors.search_sparse, collection, sparse, flt, n)
    dots: dict[str, float] = {}
    if neutral:
        centroids = await rt.run_sync(language_centroids, emb)
        dots = {lang: float(np.dot(c, qvec)) for lang, c in centroids.items()}
    return Channels(query=query, dense={h.id: h.score for h in dense_hits},
                    keyword={h.id: h.score for h in sparse_hits}, query_dots=dots)


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
    it), ``query_terms``, ``query_script`` (``policy.language.script_class`` of the query)."""

    ids: list[str]
    dense: dict[str, float]
    keyword: dict[str, float]
    coverage: dict[str, float]
    unjudged: dict[str, float]
    query_terms: frozenset[str]
    query_script: str


def fusion_inputs(ch: Channels, texts: Mapping[str, str]) -> FusionInputs:
    """``FusionInputs`` of the candidates of ``ch`` found in ``texts`` (pure; the keyword
    analysis of the texts is memoised by ``keyword_term_set``)."""
    ids = [i for i in ch.ids() if i in texts]
    qlang = script_class(ch.query)
    qmix = cjk_weight(ch.query)
    qterms = keyword_term_set(ch.query)
    by_lang: dict[str, list[float]] = {CJK: [], OTHER: []}
    for i, cos in ch.dense.items():
        if i in texts:
            by_lang[script_class(texts[i])].append(cos)
    gap = store_language_gap(by_lang[CJK], by_lang[OTHER])
    dense: dict[str, float] = {}
    coverage: dict[str, float] = {}
    unjudged: dict[str, float] = {}
    for i in ids:
        plang = script_class(texts[i])
        if i in ch.dense:
            dense[i] = ch.dense[i] - language_shift(ch.query_dots, qmix, cjk_weight(texts[i]), gap)
        if not qterms:
            continue
        dterms = keyword_term_set(texts[i])
        judged = judged_terms(qterms, dterms, plang)
        unjudged[i] = 1.0 - terms_weight(judged) / terms_weight(qterms)
        if i in ch.keyword:
            coverage[i] = keyword_coverage(judged, dterms)
    keyword = {i: ch.keyword[i] for i in ids if i in ch.keyword}
    return FusionInputs(ids, dense, keyword, coverage, unjudged, qterms, qlang)


def scored(f: FusionInputs, fused: Mapping[str, float], ch: Channels) -> dict[str, Scored]:
    """``Scored`` of each candidate of ``fused`` (its fused score, best first as given), with
    the calibrated relevance of ``policy.fusion.calibrated_relevance`` from ``f``."""
    background = dense_background(f.dense.values(), f.query_script)
    return {i: Scored(score=s, relevance=calibrated_relevance(f.dense[i] - background if i in f.dense else None,
                                                              f.coverage.get(i, 0.0), f.unjudged.get(i, 0.0)),
                      similarity=ch.dense.get(i)) for i, s in fused.items()}


def score_candidates(ch: Channels, texts: Mapping[str, str], r: RankingSettings) -> dict[str, Scored]:
    """Fused and calibrated scores of the candidates of ``ch`` that have a text in ``texts``
    (the others, e.g. rows gone since, are left out), best first by ``score``: convex fusion
    (``policy.fusion.convex_fuse``) with keyword coverage over the terms each candidate can
    be judged by and the cross-language stand-in for the rest.

    Blocking (keyword analysis of the candidates' texts): call from a worker thread.
    """
    f = fusion_inputs(ch, texts)
    fused = convex_fuse(f.dense, f.keyword, dense_weight=r.fusion_dense_weight, coverage=f.coverage,
                        unjudged=f.unjudged)
    return scored(f, fused, ch)
