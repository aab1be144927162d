"""Analysis for the keyword (sparse) retrieval channel.

The dense channel understands paraphrase; this channel must catch what embeddings blur:
code identifiers, error codes, file names, versions, IDs and Chinese/Japanese/Korean
text, which has no spaces (a whitespace tokenizer would make one token of a whole
sentence). Both documents and queries go through :func:`keyword_terms`, then
:func:`sparse_from_terms` turns the terms into a Qdrant sparse vector.

Analysis, in order:

1. NFKC (full-width letters and digits fold to ASCII), zero-width characters removed,
   curly apostrophes straightened.
2. Runs of Han / kana / Hangul -> every character (unigram) plus every adjacent pair
   (bigram): ``深色主题`` -> 深, 色, 主, 题, 深色, 色主, 主题. No dictionary needed and
   both a two-character word and a one-character query match.
3. Everything else is cut into chunks of letters, digits and the joiners ``_ . - / \\ :
   @ + # ~ '``. A chunk is kept whole (casefolded) and, when it is compound, also split
   into parts: on the joiners (snake_case, kebab-case, dotted names, file names, paths,
   URLs) and on camelCase humps. ``ERR_PNPM_OUTDATED_LOCKFILE`` -> the whole plus err,
   pnpm, outdated, lockfile (stemmed by step 5: outdat, lockfil); ``package.json`` -> whole, package, json; ``useEffect`` ->
   whole, use, effect. Numbers and versions stay whole (``3.11``, ``v1.2.3`` also as
   ``1.2.3``) and are not split into digits. A chunk longer than ``MAX_ANALYSED_CHARS``
   (128) is only cut at the joiners, and its pieces longer than that are dropped.
4. A small English stopword list drops function words and contractions (``the``,
   ``don't``) and single letters, but never a compound whole (``the_end`` stays).
5. English stemming (Snowball "english", i.e. Porter2, from the pure-Python
   ``snowballstemmer`` package) of plain ASCII words and identifier parts, so that prose
   "lockfiles are outdated" meets ``ERR_PNPM_OUTDATED_LOCKFILE`` and "prefers" meets
   "preferred". Compound wholes, numbers and non-ASCII words are not stemmed. Measured
   on the LoCoMo dev conversations with plain BM25 (1,033 questions, categories 1-4):
   turn recall@5 0.494 -> 0.531 and @10 0.571 -> 0.606 with stemming. Term ids are baked
   into stored vectors: changing this analysis needs a reindex.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

import snowballstemmer

from memvault.policy.cjk import CJK_CLASS as _CJK_RANGES

__all__ = [
    "BM25_K1",
    "BM25_B",
    "AVG_DOC_TERMS",
    "AVG_CHUNK_TERMS",
    "DOC_KEYWORD_SCHEME",
    "MAX_TERM_CHARS",
    "MAX_ANALYSED_CHARS",
    "keyword_terms",
    "term_id",
    "sparse_from_terms",
]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (Robertson & Zaragoza 2009, the usual 1.2)."""

BM25_B = 0.75
"""BM25 length normalisation strength (the usual 0.75)."""

AVG_DOC_TERMS = 14.0
"""Average document length, in terms (sum of :func:`keyword_terms` counts), assumed for
BM25 length normalisation. A fixed constant because a per-collection average would
change every stored vector as the collection grows. Measured with this analyser: the
mean over the 4,124 turns of the LoCoMo dev conversations (speaker + text + image
caption; memory-sized English) is 13.9 terms (median 12). Chinese text yields about
2 terms per character (unigrams + bigrams), so Chinese memories count as longer."""

AVG_CHUNK_TERMS = 120.0
"""Average length, in terms, assumed for document chunks (``index_docs``), whose keyword
vectors are normalised against chunk-sized text, not memory-sized. Measured with this
analyser on chunks as ``index_docs`` cuts them (path + heading + text, e5-small window):
memvault's own Python 90 terms (627 chunks), its Markdown 136, the shared design notes
121, the stdlib ``json`` package 120, qdrant-client's Python 115 (679 chunks); SciFact
abstracts 159. With memories' 14 every chunk was over-penalised: replaying the keyword
channel on SciFact gives nDCG@10 0.640 at avgdl 14, 0.687 at 100, 0.681 at 160, 0.678 at
250; on CMRC-zh 0.961 at 14, 0.979 at 100, 0.982 at 160 (``bench.beir``)."""

DOC_KEYWORD_SCHEME = 2
"""Version of the chunk keyword weighting. Stored with each indexed file, so that
``index_docs`` re-indexes files written under another one. 1: avgdl = AVG_DOC_TERMS;
2: avgdl = AVG_CHUNK_TERMS."""

MAX_TERM_CHARS = 128
"""Longer wholes (base64 blobs, minified code) are not kept whole; their parts still are."""

MAX_ANALYSED_CHARS = MAX_TERM_CHARS
"""Longest chunk (or joiner-free segment of one) that meets the number, version and
camelCase patterns. A longer chunk cannot be kept whole anyway, so it is only cut at
the joiners, and segments longer than this are dropped without further analysis.
Defence in depth: the patterns are linear, but a chunk comes straight from users and
documents (a pasted tracking URL, a base64 blob, minified code) and can be any length;
with this cap a pattern that one day backtracks more than linearly still only sees a
bounded input. Equal to MAX_TERM_CHARS so that every chunk short enough to be a term
(all normal text: words, identifiers, paths, versions, ordinary URLs) is analysed as
before and keeps its stored term ids."""

# --- character classes -------------------------------------------------------------

_JOINERS = r"_.\-/\\:@+#~'"
# A chunk: letters/digits of non-CJK scripts and joiners. [^\W] is \w; CJK excluded.
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK_RANGES}]+)|(?P<chunk>(?:(?![{_CJK_RANGES}])[\w{_JOINERS}])+)")
_CHUNK_ONLY = re.compile(rf"[\w{_JOINERS}]+")  # _TOKEN's chunks in text that holds no CJK character
_CJK_CHAR = re.compile(rf"[{_CJK_RANGES}]")
_SPLIT = re.compile(rf"[{_JOINERS}]+")
_LEAD_STRIP = _JOINERS
_TRAIL_STRIP = r"_.\-/\\:@~'"  # keep a trailing + or # (c++, c#, f#)
_CAMEL = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_PLAIN_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A version: v?, digits, a dot, a digit, then letters/digits with single . - + between
# (1.2.3, v1.2.3-beta.1, 1.2.3+build5). Written so that each character can be consumed
# in one way only: a run of letters and digits is never split between two repetitions,
# which made ``(?:[.\-+]?[a-z0-9]+)*`` backtrack exponentially on a token such as
# "1.2.aaaa…a#". The lookbehind keeps a search from restarting inside a run of digits.
_VERSION = re.compile(r"(?<![a-z0-9])v?\d+\.\d[a-z0-9]*(?:[.\-+][a-z0-9]+)*", re.IGNORECASE)
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_CONTRACTION_SUFFIXES = frozenset({"t", "re", "ve", "ll", "d", "m"})

STOPWORDS: frozenset[str] = frozenset(
    """
    a an and are as at be been being but by can could did do does doing for from had has
    have having he her here hers him his how i if in into is it its itself just me my
    myself no nor not of on once only or other our ours out over own same she should so
    some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself also about after again against all am any because
    before below between both down during each few further more most off s t won can't
    """.split()
)
"""English function words dropped as plain words and as identifier parts."""


_stemmer = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()  # a Snowball stemmer object keeps state while it works


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    with _stem_lock:
        return _stemmer.stemWord(word)


def _is_ascii_alpha(s: str) -> bool:
    return s.isascii() and s.isalpha()


def _camel_parts(segment: str) -> list[str]:
    """camelCase / PascalCase humps of an ASCII segment (digits stay attached)."""
    if not segment.isascii() or segment.islower() or segment.isupper():
        return [segment]
    return _CAMEL.findall(segment) or [segment]


def _keep_part(part: str) -> bool:
    if not part:
        return False
    if len(part) == 1 and not part.isdigit():
        return False  # single letters: variable names, possessive s
    return part not in STOPWORDS


def _chunk_terms(chunk: str) -> list[str]:
    """Terms of one non-CJK chunk (original case in, casefolded terms out)."""
    core = chunk.lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    if not core:
        return []

    # Apostrophes: possessives keep the stem ("user's" -> user); contractions are
    # function words ("don't", "we're") and are dropped.
    if "'" in core:
        head, _, tail = core.rpartition("'")
        if tail.casefold() == "s" and "'" not in head:
            core = head
        elif tail.casefold() in _CONTRACTION_SUFFIXES and _is_ascii_alpha(head.replace("'", "")):
            return []
        if not core:
            return []

    whole = core.casefold()

    # Numbers and versions: kept whole, never split into digit runs. A chunk too long to
    # be a term is neither (see MAX_ANALYSED_CHARS).
    if len(core) <= MAX_ANALYSED_CHARS:
        if _PLAIN_NUMBER.fullmatch(core):
            return [whole]
        if _VERSION.fullmatch(core):
            version_terms = [whole]
            if whole[0] == "v":
                version_terms.append(whole[1:])
            return version_terms

    segments = [s for s in _SPLIT.split(core) if s]
    parts: list[str] = []
    for seg in segments:
        if len(seg) > MAX_ANALYSED_CHARS:
            continue  # a blob, not a word: no part of it can be a term
        humps = _camel_parts(seg)
        if len(humps) > 1 and len(segments) > 1:
            parts.append(seg.casefold())  # src/useEffect.ts: useeffect as well as use, effect
        parts.extend(h.casefold() for h in humps)

    compound = len(parts) > 1 or (parts and parts[0] != whole)
    terms: list[str] = []
    if compound:
        if len(whole) <= MAX_TERM_CHARS:
            terms.append(whole)
        terms.extend(_stem_term(p) for p in parts if _keep_part(p) and len(p) <= MAX_TERM_CHARS)
    elif _keep_part(whole) and len(whole) <= MAX_TERM_CHARS:
        terms.append(_stem_term(whole))
    return terms


def _stem_term(term: str) -> str:
    return _stem(term) if _is_ascii_alpha(term) else term


def _cjk_terms(run: str) -> list[str]:
    """Character unigrams plus adjacent bigrams of a Han/kana/Hangul run."""
    terms = list(run)
    terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


CHUNK_CACHE_SIZE = 32_768
"""Chunks (words, identifiers) whose terms ``_cached_chunk_terms`` keeps: a store's texts
share most of their words, so a text not analysed before is mostly cache hits (recall
analyses the text of up to 100 keyword hits per call; at 10,000 memories most are new
to ``keyword_term_set``'s cache). A few MiB at most."""


@functools.lru_cache(maxsize=CHUNK_CACHE_SIZE)
def _cached_chunk_terms(chunk: str) -> tuple[str, ...]:
    return tuple(_chunk_terms(chunk))


def _term_runs(text: str) -> list[Sequence[str]]:
    """The terms of ``text`` in order, one sequence per CJK run or chunk (see ``keyword_terms``).

    Text without a CJK character is all chunks, found by ``_CHUNK_ONLY`` (the same runs as
    ``_TOKEN``'s chunk alternative, whose look-ahead for CJK costs ~5x per character); ASCII
    text is also its own NFKC form and holds no invisible character or curly apostrophe.
    """
    if text.isascii():
        return [_cached_chunk_terms(c) for c in _CHUNK_ONLY.findall(text)]
    norm = unicodedata.normalize("NFKC", text).translate(_INVISIBLE).translate(_APOSTROPHES)
    if _CJK_CHAR.search(norm) is None:
        return [_cached_chunk_terms(c) for c in _CHUNK_ONLY.findall(norm)]
    out: list[Sequence[str]] = []
    for m in _TOKEN.finditer(norm):
        cjk = m.group("cjk")
        out.append(_cjk_terms(cjk) if cjk is not None else _cached_chunk_terms(m.group("chunk")))
    return out


def keyword_terms(text: str) -> dict[str, int]:
    """Terms of ``text`` for the keyword channel, with their counts.

    Returns ``{term: count}`` (terms casefolded; see the module docstring for the rules).
    Empty or punctuation-only text gives ``{}``. Deterministic and pure.
    """
    counts: Counter[str] = Counter()
    for terms in _term_runs(text):
        counts.update(terms)
    return dict(counts)


#: Texts whose term sets ``keyword_term_set`` keeps (a recall analyses up to 100 keyword
#: hits, and the same memories come back call after call).
TERM_SET_CACHE_SIZE = 4096


@functools.lru_cache(maxsize=TERM_SET_CACHE_SIZE)
def keyword_term_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``: ``frozenset(keyword_terms(text))``, memoised for the
    last ``TERM_SET_CACHE_SIZE`` texts (pure, so a cached answer is always right; thread-safe)."""
    terms: set[str] = set()
    for run in _term_runs(text):
        terms.update(run)
    return frozenset(terms)


def term_id(term: str) -> int:
    """Stable uint32 id of a term: the first 4 bytes (little-endian) of BLAKE2b(UTF-8).

    The same in every process, platform and Python version (unlike ``hash()``), so ids
    stored in the index stay valid across restarts.
    """
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


def sparse_from_terms(terms: Mapping[str, int], *, query: bool, avgdl: float = AVG_DOC_TERMS
                      ) -> tuple[list[int], list[float]]:
    """Sparse vector ``(indices, values)`` for Qdrant from :func:`keyword_terms` output.

    ``indices`` are :func:`term_id` values (uint32), sorted ascending and unique: terms
    whose ids collide are merged (counts added). Terms with count <= 0 are ignored.

    * ``query=False`` (documents): BM25 term-frequency saturation
      ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` with ``k1 = BM25_K1``,
      ``b = BM25_B``, ``dl`` = total term count of the document and ``avgdl``
      the average length in terms (``AVG_DOC_TERMS`` for memories, ``AVG_CHUNK_TERMS``
      for document chunks; must be > 0). IDF is not included: the collection's sparse
      vector is configured with Qdrant's IDF modifier, which applies it at query time over
      the live corpus.
    * ``query=True``: weight 1.0 per unique term (the IDF modifier supplies the rest).

    Empty ``terms`` -> ``([], [])``.
    """
    merged: dict[int, int] = {}
    for term, count in terms.items():
        if count > 0:
            tid = term_id(term)
            merged[tid] = merged.get(tid, 0) + int(count)
    indices = sorted(merged)
    if query:
        return indices, [1.0] * len(indices)
    dl = sum(merged.values())
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl)
    values = [merged[i] * (BM25_K1 + 1.0) / (merged[i] + norm) for i in indices]
    return indices, values
