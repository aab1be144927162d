"""A dense score with the language direction taken out of both vectors: a fusion variant.

multilingual-e5 puts every passage of one language on one side of a direction (the Chinese
mean passage embedding minus the English one, ``service.centroids``); recall corrects a
cosine for it to first order (``policy.fusion.language_shift``). This variant removes that
direction from the query and from each candidate and renormalises both before the cosine
(after Yang et al., "A Simple and Effective Method To Eliminate the Self Language Bias in
Multilingual Representations", EMNLP 2021, with one direction from memvault's own 40
parallel sentences):

    cos' = (q . p - (q . a)(p . a)) / sqrt((1 - (q . a)^2)(1 - (p . a)^2)),  a unit axis

then applies recall's language shift on top and fuses with a fixed cross-language credit
(the keyword stand-in of a candidate the keyword channel cannot judge is
``dense part x CROSS_CREDIT``, not the best own-language keyword part): with a dense channel
that ranks across languages, the stand-in's generous credit is what made English memories beat
paraphrased Chinese answers. Constants chosen on the ``dev`` developer-memory set only.

It needs each candidate's vector: the bench embeds the candidate's text as a passage
(memoised per text), which is the stored vector for a memory of one window (recall would read
its dense candidates' stored vectors). Not shipped: on the developer-memory sets it moves
cross-lingual and mixed-memory questions up and some same-language ones down (the guard set's
R@1 a little), and in small stores (where the store's own language gap cannot be measured) it
flags fewer never-stored questions and, built into recall, lifted unrelated English memories
above the Chinese answers of the small-store tests (CHANGELOG.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from bench.common import DEFAULT_MODEL_CACHE

DENSE_WEIGHT = 0.4
CROSS_CREDIT = 0.1

_PASSAGES: dict[str, np.ndarray] = {}
_QUERIES: dict[tuple[str, bool], np.ndarray] = {}
_STATE: dict[str, Any] = {}


def _model() -> tuple[Any, np.ndarray, np.ndarray]:
    """The shared embedder, the unit language direction of passages (Chinese centroid minus
    English) and that of queries (the same parallel sentences embedded as queries)."""
    if not _STATE:
        from bench.mv import shared_embedder
        from memvault.config import Settings
        from memvault.policy.language import CJK, OTHER
        from memvault.service.centroids import PARALLEL_SENTENCES, language_centroids

        emb = shared_embedder(Settings(model_cache_dir=DEFAULT_MODEL_CACHE))
        c = language_centroids(emb)
        axis = np.asarray(c[CJK] - c[OTHER], dtype=np.float64)
        zh = np.asarray(emb.embed_queries([b for _, b in PARALLEL_SENTENCES]), dtype=np.float64).mean(axis=0)
        en = np.asarray(emb.embed_queries([a for a, _ in PARALLEL_SENTENCES]), dtype=np.float64).mean(axis=0)
        _STATE.update(emb=emb, axis=axis / np.linalg.norm(axis), query_axis=(zh - en) / np.linalg.norm(zh - en))
    return _STATE["emb"], _STATE["axis"], _STATE["query_axis"]


def _unit_off_axis(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    w = v - float(v @ axis) * axis
    return w / np.linalg.norm(w)


def language_free_dense(ch: Any, texts: Mapping[str, str], two_directions: bool = False) -> dict[str, float]:
    """Candidate id -> cosine with the language axis removed from both sides (``ch.dense`` ids
    that have a text); ``two_directions``: the queries' own direction removed from the query
    (the two differ: e5 embeds a query with its prefix)."""
    emb, axis, query_axis = _model()
    ids = [i for i in ch.dense if i in texts]
    todo = sorted({texts[i] for i in ids} - _PASSAGES.keys())
    if todo:
        for t, v in zip(todo, emb.embed_passages(todo), strict=True):
            _PASSAGES[t] = _unit_off_axis(np.asarray(v, dtype=np.float64), axis)
    key = (ch.query, two_directions)
    if key not in _QUERIES:
        vec = np.asarray(emb.embed_queries([ch.query])[0], dtype=np.float64)
        _QUERIES[key] = _unit_off_axis(vec, query_axis if two_directions else axis)
    q = _QUERIES[key]
    return {i: float(q @ _PASSAGES[texts[i]]) for i in ids}


def fuse_fixed_credit(dense: Mapping[str, float], keyword: Mapping[str, float], coverage: Mapping[str, float],
                      unjudged: Mapping[str, float], translated: Mapping[str, float], dense_weight: float,
                      credit: float) -> dict[str, float]:
    """``policy.fusion.convex_fuse`` with the cross-language stand-in credited ``credit`` times
    the candidate's dense part (instead of the best own-language keyword part, at least
    ``CROSS_SCRIPT_FLOOR``): its two steps with that credit. Best first."""
    from memvault.policy.fusion import fuse_parts, normalised_parts

    return fuse_parts(normalised_parts(dense, keyword, coverage), dense_weight=dense_weight, credit=credit,
                      unjudged=unjudged, translated=translated)


def v_language_free(dense_weight: float = DENSE_WEIGHT, credit: float = CROSS_CREDIT,
                    two_directions: bool = False) -> Any:
    """The fusion variant (``bench.fusion_compare.Variant``): recall's fusion inputs with the
    language-free cosine in place of the raw one, fused by :func:`fuse_fixed_credit`;
    calibrated relevance as shipped (not refitted for the new cosine). ``two_directions``:
    each side's own direction removed and no language shift (``query_dots`` emptied: the
    shift is what the second direction replaces)."""
    def f(ch, texts, r, q):
        from bench.fusion_compare import text_positions
        from memvault.service.search import fusion_inputs, scored

        free = replace(ch, dense=language_free_dense(ch, texts, two_directions),
                       **({"query_dots": {}} if two_directions else {}))
        fi = fusion_inputs(free, texts, text_positions(ch, texts))
        fused = fuse_fixed_credit(fi.dense, fi.keyword, fi.coverage, fi.unjudged, fi.translated, dense_weight, credit)
        return scored(fi, fused, free)
    f.ranking_over = {"neighbour_lift": 0.7}  # type: ignore[attr-defined]
    return f
