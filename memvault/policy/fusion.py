"""Fusing the dense and keyword channels into one ranking, and a calibrated relevance.

Pure functions over per-candidate channel scores.

Why not equal-weight Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009): RRF sees ranks
only, so a document whose one incidental word matches the query ("backed" meets
"roll back") is keyword rank 1 and beats the dense winner (dense rank 1, no keyword
match) whenever it is dense rank 2. :func:`convex_fuse` combines the scores instead
(Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS
2023: a convex combination of normalised scores beats RRF and needs one parameter), and
lets keyword evidence count in proportion to how much of the query it covers.

Cross-lingual: multilingual-e5 ranks passages in the query's language first whatever
they say. :func:`language_shift` removes each language's mean embedding from the
passage side, to first order (after Libovický, Rosa & Fraser, "On the Language
Neutrality of Pre-trained Multilingual Representations", Findings of EMNLP 2020): with
``c_L`` the mean passage embedding of language L, ``q . (p - c_L) = q . p - q . c_L``,
and adding back ``q . c_{lang(q)}`` leaves same-language scores unchanged.

:func:`calibrated_relevance` maps how far a candidate's corrected cosine stands above the
query's background (:func:`dense_background`), its keyword coverage and whether it is in
another script to an estimated probability that it answers the query (logistic;
parameters fitted by ``bench.calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

from memvault.policy.language import CJK, OTHER, terms_weight

__all__ = [
    "language_shift",
    "store_language_gap",
    "STORE_GAP_RANKS",
    "STORE_GAP_SHARE",
    "LANGUAGE_SHIFT_SCALE",
    "LANGUAGE_SHIFT_SCALE_CJK",
    "keyword_coverage",
    "convex_fuse",
    "normalised_parts",
    "fuse_parts",
    "stand_in_credit",
    "CROSS_SCRIPT_FLOOR",
    "calibrated_relevance",
    "relevance_logit",
    "RELEVANCE_BIAS",
    "RELEVANCE_COVERAGE",
    "RELEVANCE_CROSS_SCRIPT",
    "RELEVANCE_GAP",
    "RELEVANCE_TRANSLATED",
    "RELEVANCE_UNSEEN_NAME",
    "DENSE_BACKGROUND",
    "DENSE_BACKGROUND_CJK",
    "dense_background",
]

Id = TypeVar("Id", bound=Hashable)

LANGUAGE_SHIFT_SCALE = 1.0
LANGUAGE_SHIFT_SCALE_CJK = 0.6
"""Share of the language component :func:`language_shift` removes, for an English query and
for a Chinese one (a query mixing both: in proportion). The component is measured on
everyday parallel sentences (``service.centroids``); for Chinese questions on a developer's
store the whole of it over-corrects, lifting English memories above the Chinese answer.
Chosen on the ``dev`` developer-memory set (``python -m bench.devmemory --sets dev``): the
Chinese scale trades zh->zh R@1 against zh->en R@5, the English one en->zh against en->en."""

STORE_GAP_RANKS = (5, 30)
STORE_GAP_SHARE = 0.5
""":func:`store_language_gap` averages each language's dense hits ranked 6 to 30 (the best 5
may be about the query, the rest mostly are not), and :func:`language_shift` takes half its
shift from it, half from the parallel sentences. The parallel sentences are everyday text;
a store's own memories show the language effect in its domain, for this very query, but
also the topics each language happens to hold: half of each did best on the ``dev``
developer-memory set over other rank windows and shares (``bench.devmemory``)."""

RELEVANCE_BIAS = -9.46
RELEVANCE_GAP = 155.22
RELEVANCE_COVERAGE = 8.33
RELEVANCE_CROSS_SCRIPT = 5.38
RELEVANCE_TRANSLATED = 11.0
RELEVANCE_UNSEEN_NAME = -2.5
"""Logistic parameters of :func:`calibrated_relevance` (see there). The first four were fitted by
logistic regression on the best-ranked 10 candidates of the bilingual probe's questions about
facts 0-49; ``RELEVANCE_TRANSLATED``, the dictionary's matches, on those and the ``dev``
developer-memory set with the four held (``python -m bench.calibration``, likelihood over a
grid of 0.5); ``RELEVANCE_UNSEEN_NAME``, a property of the question rather than of a
candidate, the same way on each of those questions' first result (on the best 10 the rows
of answerable questions swamp it). The held-out AUC of each step is in docs/benchmarks.md.
Refitting the first four with the others reads unrelated memories of small stores as likely
answers, so they stay as fitted on the probe."""

CROSS_SCRIPT_FLOOR = 0.5
"""Least share of its dense part that :func:`convex_fuse` credits a candidate in another
script than the query with as keyword part (it can share no term with the query). With the
whole dense part, memories of the other language rise above same-language answers that hold
only some of the question's terms; with none, cross-lingual answers lose to same-language
memories sharing one incidental word. Chosen on the bilingual probe (``bench.bilingual``)."""

BACKGROUND_RANKS = 10
DENSE_BACKGROUND = 0.724
""":func:`dense_background` averages the corrected cosines ranked 2 to 11 of a query; a store
with fewer candidates fills the missing ranks with 0.724, the 10th percentile over the
probe's questions of their mean corrected cosine to the memories that do not answer them
(median 0.776): a memory missing from a small store counts as an unrelated one, and on
the low side, because a small store gives little evidence of what "unrelated" scores and
an empty reply that should not be is the worse mistake there. (With 0.81, the mean of
ranks 2-11, a lone memory that answers its question, "which package manager should I
use?" against "The user prefers pnpm over npm ...", cosine 0.80, read as 0.006.) For a
query in CJK script see ``DENSE_BACKGROUND_CJK``."""

DENSE_BACKGROUND_CJK = 0.802
"""``DENSE_BACKGROUND`` for a query written in CJK script: e5-small's cosines run higher for
Chinese queries, to memories in either language once corrected (on the probe, the mean
corrected cosine of a question to the memories that do not answer it: median 0.818 and
10th percentile 0.802 for Chinese questions, against 0.733 and 0.718 for English ones). With
the one value of both, 0.724, three English memories asked about in Chinese all read as
relevant (0.996-1.000: "预发布环境的服务器比生产环境小吗？" against "The user's cat is
named Miso.")."""


def store_language_gap(cjk_scores: Iterable[float], other_scores: Iterable[float]) -> float | None:
    """How much higher a memory in CJK script scores than one in another script for this
    query, whatever it says: the mean cosine of the dense hits ranked ``STORE_GAP_RANKS`` in
    each language (best first; the best few are left out, they may be about the query), CJK
    minus other. None when either language has too few hits to tell."""
    lo, hi = STORE_GAP_RANKS
    means = []
    for scores in (cjk_scores, other_scores):
        ranked = sorted(scores, reverse=True)[lo:hi]
        if not ranked:
            return None
        means.append(sum(ranked) / len(ranked))
    return means[0] - means[1]


def language_shift(query_dots: Mapping[str, float], query_cjk: float, passage_cjk: float,
                   store_gap: float | None = None) -> float:
    """What to subtract from a passage's cosine to the query so that languages compete on meaning.

    ``query_dots[L]`` = dot product of the query embedding with language L's mean passage
    embedding (unnormalised mean of L2-normalised vectors), for L in ``policy.language``'s
    ``CJK`` and ``OTHER``. ``query_cjk`` / ``passage_cjk``: each text's CJK weight in [0, 1]
    (``policy.language.cjk_weight``): a text mixing the two languages carries a mixture
    of their components. The component from the parallel sentences is ``scale *
    (passage_cjk - query_cjk) * (query_dots[CJK] - query_dots[OTHER])``, the scale
    ``LANGUAGE_SHIFT_SCALE_CJK`` for a Chinese query and ``LANGUAGE_SHIFT_SCALE`` for an
    English one (a mixed query: in proportion). ``store_gap`` (:func:`store_language_gap`),
    when known, measures the same component on the store's own memories for this query;
    the shift is then ``STORE_GAP_SHARE`` of ``(passage_cjk - query_cjk) * store_gap`` and the
    rest of the parallel sentences' one. 0 for a passage in the query's language, and 0
    when either language is missing from ``query_dots`` (neutrality off).
    """
    if CJK not in query_dots or OTHER not in query_dots:
        return 0.0
    scale = LANGUAGE_SHIFT_SCALE_CJK * query_cjk + LANGUAGE_SHIFT_SCALE * (1.0 - query_cjk)
    centroid = scale * (passage_cjk - query_cjk) * (query_dots[CJK] - query_dots[OTHER])
    if store_gap is None:
        return centroid
    return STORE_GAP_SHARE * (passage_cjk - query_cjk) * store_gap + (1.0 - STORE_GAP_SHARE) * centroid


def keyword_coverage(query_terms: Iterable[str], doc_terms: Iterable[str]) -> float:
    """Share of the query's distinct keyword terms that the document holds, in [0, 1], each
    term weighted by ``policy.language.term_weight`` (a CJK unigram or bigram a quarter of a
    word: a run of n characters gives 2n - 1 terms for n / 2 words' worth of text).

    Terms are ``memvault.policy.keywords.keyword_terms`` keys. A query with no terms -> 0.0.
    """
    q = set(query_terms)
    total = terms_weight(q)
    if not total:
        return 0.0
    return terms_weight(q & set(doc_terms)) / total


def convex_fuse(
    dense: Mapping[Id, float],
    keyword: Mapping[Id, float],
    *,
    dense_weight: float,
    coverage: Mapping[Id, float] | None = None,
    unjudged: Mapping[Id, float] | None = None,
    translated: Mapping[Id, float] | None = None,
) -> dict[Id, float]:
    """Convex combination of min-max normalised channel scores, best first.

    ``dense``: score per dense hit (cosine, language-corrected); ``keyword``: raw keyword
    score (IDF-weighted BM25, >= 0) per keyword hit. Per query, dense scores are scaled to
    [0, 1] by the min and max over ``dense`` (a candidate missing from ``dense`` counts as
    the min: it ranked below every dense hit; a single dense hit, or all equal, -> 1.0) and
    keyword scores by the max over ``keyword`` (a missing one -> 0). Then ``K`` is
    multiplied by ``coverage[id]`` when ``coverage`` is given (missing -> 0). ``unjudged[id]`` (missing -> 0) is the
    share of the query's terms the keyword channel cannot judge that candidate by (CJK
    terms against an English memory, English words against a Chinese one:
    ``policy.language.judged_terms``); that part of the keyword evidence is not counted
    against it; with ``U`` its unjudged
    share and ``B`` the best ``K`` of a candidate judged on the whole query (0 when none
    has a keyword hit): a memory in the other language is credited with the keyword
    evidence the query's own language reached, scaled by how well it matches in meaning,
    and at least half of that (see ``CROSS_SCRIPT_FLOOR``). The part it can be judged by
    counts in proportion: ``K = (1 - U) * K + U * S`` with the stand-in
    ``S = D * max(B, CROSS_SCRIPT_FLOOR)``, so that one borrowed word ("DAG" in a Chinese
    question) matched by an English memory is not full coverage. ``translated[id]`` (missing
    -> 0) is the share of that unjudged part the candidate matches through a bilingual
    dictionary (``policy.dictionary``): real keyword evidence, combined with the stand-in as
    independent evidence, ``S = 1 - (1 - D * max(B, CROSS_SCRIPT_FLOOR)) * (1 - T)``, which
    needs no weight of its own and stays in [0, 1]. The fused score is
    ``dense_weight * D + (1 - dense_weight) * K``, in [0, 1]. Every id of either channel
    is returned; ties keep the order dense ids first, then keyword-only ids.

    Raises ValueError if ``dense_weight`` is not in [0, 1].
    """
    if not (0.0 <= dense_weight <= 1.0):
        raise ValueError(f"dense_weight must be in [0, 1], got {dense_weight}")
    parts = normalised_parts(dense, keyword, coverage)
    blind = unjudged or {}
    return fuse_parts(parts, dense_weight=dense_weight, credit=stand_in_credit(parts, blind), unjudged=blind,
                      translated=translated)


def stand_in_credit(parts: Mapping[Id, tuple[float, float]], unjudged: Mapping[Id, float]) -> float:
    """The credit :func:`convex_fuse` gives the stand-in of a candidate's unjudged part, per unit
    of its dense part: ``max(B, CROSS_SCRIPT_FLOOR)``, ``B`` the best keyword part ``K`` of
    :func:`normalised_parts` among the candidates judged on every query term (``unjudged`` 0 or
    missing; 0 when there is none)."""
    own_best = max((k for i, (_, k) in parts.items() if not unjudged.get(i, 0.0)), default=0.0)
    return max(own_best, CROSS_SCRIPT_FLOOR)


def normalised_parts(dense: Mapping[Id, float], keyword: Mapping[Id, float],
                     coverage: Mapping[Id, float] | None = None) -> dict[Id, tuple[float, float]]:
    """The first step of :func:`convex_fuse`: id -> ``(D, K)``, the dense score min-max scaled
    and the keyword score scaled by its max and multiplied by ``coverage`` (see there), every
    id of either channel, dense ids first."""
    dmin = min(dense.values(), default=0.0)
    dmax = max(dense.values(), default=0.0)
    kmax = max(keyword.values(), default=0.0)
    parts: dict[Id, tuple[float, float]] = {}
    for i in dict.fromkeys([*dense, *keyword]):
        if i not in dense:
            d = 0.0
        elif dmax > dmin:
            d = (dense[i] - dmin) / (dmax - dmin)
        else:
            d = 1.0
        k = keyword.get(i, 0.0) / kmax if kmax > 0 else 0.0
        if coverage is not None:
            k *= coverage.get(i, 0.0)
        parts[i] = (d, k)
    return parts


def fuse_parts(parts: Mapping[Id, tuple[float, float]], *, dense_weight: float, credit: float,
               unjudged: Mapping[Id, float] | None = None,
               translated: Mapping[Id, float] | None = None) -> dict[Id, float]:
    """The second step of :func:`convex_fuse`: the unjudged share of each candidate's keyword part
    stood in for by ``D * credit`` combined with its dictionary matches, then ``dense_weight * D
    + (1 - dense_weight) * K``; best first, ties in the order of ``parts``."""
    blind = unjudged or {}
    via = translated or {}
    out: dict[Id, float] = {}
    for i, (d, k) in parts.items():
        u = blind.get(i, 0.0)
        if u > 0:
            k = (1.0 - u) * k + u * (1.0 - (1.0 - d * credit) * (1.0 - via.get(i, 0.0)))
        out[i] = dense_weight * d + (1.0 - dense_weight) * k
    order = sorted(out, key=lambda i: -out[i])  # stable
    return {i: out[i] for i in order}


def dense_background(scores: Iterable[float], query_script: str = "other") -> float:
    """How well unrelated passages score for this query: the mean of the dense scores ranked
    2 to ``BACKGROUND_RANKS + 1`` (best first), missing ranks counted as ``DENSE_BACKGROUND``
    (``DENSE_BACKGROUND_CJK`` when ``query_script``, ``policy.language.script_class`` of the
    query, is ``"cjk"``).

    A memory that answers the query stands out from this background; when nothing does,
    the best score is close to it. (Empty input -> the padding value.)
    """
    pad = DENSE_BACKGROUND_CJK if query_script == "cjk" else DENSE_BACKGROUND
    ranked = sorted(scores, reverse=True)[1: BACKGROUND_RANKS + 1]
    ranked += [pad] * (BACKGROUND_RANKS - len(ranked))
    return sum(ranked) / BACKGROUND_RANKS


def relevance_logit(gap: float | None, coverage: float, cross_script: float = 0.0) -> float:
    """The log-odds :func:`calibrated_relevance` starts from, before the dictionary's term:
    ``RELEVANCE_BIAS + RELEVANCE_GAP * gap + RELEVANCE_COVERAGE * (1 - cross_script) * coverage
    + RELEVANCE_CROSS_SCRIPT * cross_script`` (``gap`` None -> -0.05). ``bench.calibration``
    fits ``RELEVANCE_TRANSLATED`` on top of it."""
    g = -0.05 if gap is None else gap
    return (RELEVANCE_BIAS + RELEVANCE_GAP * g + RELEVANCE_COVERAGE * (1.0 - cross_script) * coverage
            + RELEVANCE_CROSS_SCRIPT * cross_script)


def calibrated_relevance(gap: float | None, coverage: float, cross_script: float = 0.0,
                         translated: float = 0.0, unseen_name: bool = False) -> float:
    """Estimated probability, in [0, 1], that a candidate is what the query asks about.

    ``sigmoid(RELEVANCE_BIAS + RELEVANCE_GAP * gap + RELEVANCE_COVERAGE * (1 - cross_script)
    * coverage + RELEVANCE_CROSS_SCRIPT * cross_script + RELEVANCE_TRANSLATED * cross_script
    * translated + RELEVANCE_UNSEEN_NAME * unseen_name)``, with ``gap`` the candidate's
    language-corrected cosine minus :func:`dense_background` of its query (``None``, no
    dense score -> -0.05, below the background), ``coverage`` its keyword coverage in
    [0, 1] over the query terms it can be judged by and ``cross_script`` the share of the
    query's terms it cannot be judged by, in [0, 1] (1 for a memory in the other language
    sharing no identifier with the query; the term stands in for the keyword evidence it
    cannot have) and ``translated`` the share of that part it matches through the bilingual
    dictionary (``policy.dictionary``), in [0, 1]; ``unseen_name``: the query names something
    (an identifier, a product, an English term in a Chinese question) that no candidate holds
    (``service.search.unseen_name``), the same for every candidate of a query. Fitted by logistic regression on labelled English and Chinese
    questions, same-language and cross-lingual (``bench.calibration``), so 0.5 means "as
    likely relevant as not", in either language. The absolute cosine was a feature too and
    added nothing once the gap was in (e5 cosines sit in a narrow band that moves with the
    query: the gap is what separates an answer from the rest).
    """
    z = relevance_logit(gap, coverage, cross_script) + RELEVANCE_TRANSLATED * cross_script * translated
    if unseen_name:
        z += RELEVANCE_UNSEEN_NAME
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
