"""Which language a text is written in, judged by its words, for language-aware scoring.

multilingual-e5 embeddings carry a language component besides meaning: a query scores
higher against passages in its own language, whatever they say. Recall removes that
component per language (``memvault.policy.fusion.language_shift``), and the keyword
channel can only compare terms a text's language can hold; both need each text's
language.

Developers write Chinese sentences full of English identifiers
(``order-svc 的重试次数由 ORDER_RETRY_MAX 控制``). Counting letters would call such a
sentence English. So language is judged at the level of terms:

- **CJK** characters (``memvault.policy.cjk``) are Chinese / Japanese / Korean text;
- **words**: plain lower-case alphabetic words (and the capitalised first word of a
  sentence) are natural-language text of a Latin (or other spaced) script;
- **neutral**: identifiers, names, numbers, versions, paths, URLs and code
  (``snake_case``, ``kebab-case``, ``dotted.names``, ``camelCase``, ``ALLCAPS``,
  ``Capitalised`` names inside a sentence, anything holding a digit or a joiner) belong
  to no language: they are written the same way in a Chinese and an English sentence.

A text is ``"cjk"`` when its CJK characters weigh at least ``CJK_SHARE`` of its language
units (2 CJK characters = 1 unit, as ``memvault.policy.importance`` counts length; a word
= 1 unit; neutral terms = 0), else ``"other"``. Pure functions, no model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Iterator

from memvault.policy.cjk import CJK_CHAR, CJK_CLASS

__all__ = [
    "passage_language",
    "CJK",
    "OTHER",
    "WORD",
    "NEUTRAL",
    "CJK_SHARE",
    "LANGUAGES",
    "language_units",
    "named_things",
    "cjk_weight",
    "script_class",
    "term_kind",
    "judged_terms",
    "CJK_TERM_WEIGHT",
    "terms_weight",
]

CJK = "cjk"
OTHER = "other"
LANGUAGES: tuple[str, ...] = (CJK, OTHER)
"""Every class :func:`script_class` returns."""

WORD = "word"
NEUTRAL = "neutral"
"""Kinds of keyword terms besides ``CJK`` (see :func:`term_kind`)."""

CJK_SHARE = 1 / 3
"""Least share of a text's language units that must be CJK for the text to count as CJK:
a Chinese clause around English commands (``用 terraform apply 发布``: 2 CJK units, 2
words) is Chinese, an English sentence quoting a Chinese word (``the cat is named 小米``:
1 CJK unit, 4 words) is not."""

_SAMPLE_CHARS = 1_000
"""Only the first characters are looked at: enough to tell, bounded in cost."""

_JOINERS = r"_.\-/\\:@+#~'"
_CHUNK = re.compile(rf"(?:(?![{CJK_CLASS}])[\w{_JOINERS}])+")
_SENTENCE_ENDS = frozenset(".!?。！？")
_LOWER_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")  # user's, don't: still a word
_NAME_SHAPE = re.compile(r"\d|[a-z][A-Z]|[A-Z]{2}")  # (beside a letter) a digit, an inner capital, two capitals


def _chunk_is_word(chunk: str, sentence_start: bool) -> bool:
    """Whether a non-CJK chunk (letters, digits, joiners) is a natural-language word."""
    core = chunk.strip(_JOINERS.replace("'", "") + "'")
    if not core or not _LOWER_WORD.fullmatch(core):
        return False  # digits, joiners inside, or nothing: an identifier, number or code
    if core.islower():
        return True
    # Capitalised: the first word of a sentence is a word ("The", "Commit"); elsewhere a
    # capital marks a name (Kafka, PostHog, AWS), which every language writes the same way.
    return sentence_start and core[0].isupper() and core[1:].islower()


def _chunks(sample: str) -> Iterator[tuple[str, bool]]:
    """Each non-CJK chunk of ``sample`` (letters, digits, joiners) with whether it is a
    natural-language word (:func:`_chunk_is_word`, told where sentences start)."""
    end = 0  # where the previous chunk ended
    for m in _CHUNK.finditer(sample):
        gap = sample[end:m.start()]  # what lies between this chunk and the one before
        before = sample[max(end - 1, 0):m.start()].rstrip()  # with the last character of that chunk
        starts = end == 0 and not gap.strip() or "\n" in gap or before[-1:] in _SENTENCE_ENDS
        yield m.group(), _chunk_is_word(m.group(), starts)
        end = m.end()


@functools.lru_cache(maxsize=8192)  # recall asks about the same stored texts again and again
def language_units(text: str) -> tuple[float, int]:
    """``(cjk_units, words)`` of the first 1,000 characters of ``text``: CJK characters / 2,
    and the count of natural-language words (see the module docstring; identifiers, names
    and numbers count in neither)."""
    sample = text[:_SAMPLE_CHARS]
    cjk = len(CJK_CHAR.findall(sample))
    return cjk / 2.0, sum(1 for _, is_word in _chunks(sample) if is_word)


@functools.lru_cache(maxsize=256)
def named_things(text: str) -> tuple[str, ...]:
    """The names ``text`` (a question) carries, once each, in order, written as no word of
    English prose is: a chunk holding a letter and a digit, an inner capital or two capitals
    (``SHOP-4091``, ``p95``, ``PostHog``, ``SLO``; a plural ``s`` after capitals dropped:
    ``GPUs`` -> ``GPU``); and, in a text holding CJK characters, every chunk of Latin letters
    of 2 characters or more: in a Chinese sentence an English word or name is a borrowed term
    written as it is written (``Kubernetes``, ``token``, ``shop-web``). English prose
    capitalises and hyphenates its own words (``Postgres``, ``self-review``), so those are
    not names in an English question."""
    cjk = CJK_CHAR.search(text) is not None
    out: dict[str, None] = {}
    for chunk, _ in _chunks(text[:_SAMPLE_CHARS]):
        core = chunk.strip(_JOINERS)
        if len(core) < 2 or not any(c.isalpha() for c in core):
            continue
        if len(core) > 2 and core.endswith("s") and core[-2].isupper():
            core = core[:-1]
        if cjk or _NAME_SHAPE.search(core):
            out[core] = None
    return tuple(out)


def cjk_weight(text: str) -> float:
    """Share of the language units of ``text`` that are CJK, in [0, 1] (:func:`language_units`):
    1.0 for Chinese, 0.0 for English, in between for a text that mixes the two languages'
    words; 0.0 for a text with neither (a bare identifier, written in Latin letters)."""
    cjk, words = language_units(text)
    return cjk / (cjk + words) if cjk else 0.0


def passage_language(text: str, model_position: float | None = None) -> tuple[str, float]:
    """``(script class, CJK weight)`` of a passage for the keyword judgement and the language
    correction of dense scores: :func:`script_class` and :func:`cjk_weight` for a text in one
    language or an unknown ``model_position``; for a text that mixes CJK characters with
    words of another language, where the embedding model places it between the two
    languages (``model_position``, ``service.centroids.language_positions``: 0 English, 1
    Chinese): clipped to [0, 1] as its weight, and the side of the midpoint as its class.
    Counting words misjudges such texts: e5 embeds a Chinese sentence full of English words
    and identifiers next to Chinese text."""
    w = cjk_weight(text)
    if model_position is None or w in (0.0, 1.0):
        return script_class(text), w
    return (CJK if model_position >= 0.5 else OTHER), min(max(model_position, 0.0), 1.0)


@functools.lru_cache(maxsize=8192)
def script_class(text: str) -> str:
    """``"cjk"`` if CJK characters make at least ``CJK_SHARE`` of the language units of the
    first 1,000 characters of ``text`` (:func:`language_units`), else ``"other"`` (also for
    a text with neither CJK characters nor words, e.g. a bare identifier)."""
    cjk, words = language_units(text)
    return CJK if cjk and cjk / (cjk + words) >= CJK_SHARE else OTHER


def term_kind(term: str) -> str:
    """Kind of one keyword term (``memvault.policy.keywords.keyword_terms`` output):
    ``CJK`` (holds a CJK character), ``WORD`` (letters only: a stemmed word or a part of an
    identifier) or ``NEUTRAL`` (holds a digit or a joiner: an identifier whole, a number,
    a version, a path)."""
    if CJK_CHAR.search(term):
        return CJK
    return WORD if term.isalpha() else NEUTRAL


CJK_TERM_WEIGHT = 0.25
"""Weight of one CJK keyword term against a word's 1: a run of n CJK characters gives 2n - 1
terms (unigrams and bigrams, ``policy.keywords``) for n / 2 words' worth of text (2 characters
= 1 unit, as :func:`language_units` counts), so a Chinese question's characters would
otherwise outweigh the identifier it carries (``Sentry DSN 的环境变量叫啥？``: 13 CJK terms, 2
identifiers)."""


def terms_weight(terms: Iterable[str]) -> float:
    """Summed weight of keyword terms: ``CJK_TERM_WEIGHT`` for a CJK term, 1 for any other."""
    return sum(CJK_TERM_WEIGHT if CJK_CHAR.search(t) else 1.0 for t in terms)


def judged_terms(query_terms: Iterable[str], doc_terms: Collection[str], doc_script: str) -> frozenset[str]:
    """The query terms the keyword channel can judge a document by, for keyword coverage.

    A term counts (for the document when it holds it, against it when not) if the
    document's language could hold it: neutral terms always; CJK terms when the document
    is CJK (``doc_script``, :func:`script_class`); words when it is not. A term of the other
    kind counts only when the document holds it anyway (a Chinese memory quoting
    ``pnpm``; an English one quoting ``支付``): it is evidence for, never against."""
    return frozenset(t for t in query_terms if _script_holds(term_kind(t), doc_script) or t in doc_terms)


def _script_holds(kind: str, doc_script: str) -> bool:
    """Whether a document of ``doc_script`` could hold a term of ``kind`` (``term_kind``):
    neutral terms always, CJK terms a CJK document, words any other."""
    return kind == NEUTRAL or (kind == CJK) == (doc_script == CJK)


def judged_whatever_held(query_terms: Iterable[str], doc_script: str) -> bool:
    """Whether ``judged_terms(query_terms, doc_terms, doc_script)`` is every query term whatever
    ``doc_terms`` holds: no query term is of the other kind than a document of ``doc_script``
    holds (a word for a CJK document, a CJK term for another). Then a document's terms matter
    only for its keyword coverage, not for which terms judge it."""
    return all(_script_holds(term_kind(t), doc_script) for t in query_terms)
