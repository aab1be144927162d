"""Near-duplicate test for writes (pure).

Measured on multilingual-e5-small (q4), passage embeddings: restatements that differ
only in case, punctuation, spacing or an article score 0.96-0.998; but so do different
facts: "prefers pnpm over npm" / "npm over pnpm" 0.999, "requires Python >= 3.10" /
"<= 3.10" 0.997, "accepts JSON and YAML" / "JSON or YAML" 0.992, "深色主题" / "浅色主题"
0.981, "tabs in C" / "tabs in C++" 0.980, "offset -5" / "offset 5" 0.978. Cosine alone
cannot tell them apart, so a near duplicate must pass every gate: cosine at or above
the calibrated threshold (``DEDUP_THRESHOLD``, 0.97), the same content words in
the same order (:func:`content_words`), and the same meaning marks (quantities with their
units, times of day, negation: :func:`memvault.policy.meaning.same_meaning`, the guard
consolidation uses too).

The word gate is built so that equal words mean the same statement. It ignores only
what never changes a fact: letter case (but not of a unit after a number, "Mb" / "MB",
or of a command-line flag, "-v" / "-V"), full-width versus half-width forms (NFKC),
whitespace, quotes and parentheses, punctuation that ends a clause (``"."`` ``","``
``";"`` ``":"`` ``"!"`` attached to the word before it, 。 、), a dash between words,
the articles a / an / the (a capital "A" inside a sentence is a name: "plan A"), the
fillers please / just / really / also, 请 where it opens a clause, and English contractions ("doesn't" = "does
not", "can't" = "cannot" = "can not"). Everything else is content: every other symbol
(``+ # - < > = ! ? ~ ^ * / % $ & | @ [ ] { }``), the sign of a number, whole numbers
with their decimal separators ("3.10" is not "3.1"), units, and every other word,
function words included (and / or, to / from, for / against, with / without, not / no,
before / after, above / below, is / was, this / that ...). ``≥ ≤ ≠`` and the minus sign
U+2212 count as ``>= <= != -``.

The pair set in ``tests/data/dedup_pairs.jsonl`` (217 distinct-but-similar pairs, 106
restatements) measures both sides: no distinct pair merges; see ``tests/bench_floors/test_dedup_pairs.py``
for the share of restatements merged.
"""

from __future__ import annotations

import re
import unicodedata

from memvault.policy.cjk import CJK_CLASS as _CJK_CLASS
from memvault.policy.meaning import marks, same_meaning

DEDUP_THRESHOLD = 0.97
"""Cosine at or above which two same-scope, same-kind memories may be near duplicates: the floor
of the restatements above on multilingual-e5-small, held by ``tests/data/dedup_pairs.jsonl``."""

FUNCTION_WORDS = frozenset("a an the please just really also".split())
"""Words whose presence or absence never changes what a memory says (see the module docstring)."""
CJK_PLEASE = "请"
"""Dropped where it opens a clause ("请用空格缩进"); inside a word (请假, 请求) it is content."""

# Symbols read as the operators they stand for; typographic apostrophes as "'".
_SYMBOLS = str.maketrans({"≥": ">=", "≤": "<=", "≠": "!=", "\u2212": "-", "\u2010": "-", "\u2011": "-",
                          "\u2012": "-", "\u2013": "-", "\u2019": "'", "\u2018": "'"})
# Contractions spelled out (after NFKC and the apostrophe fold; case-insensitive).
_CONTRACTIONS = [
    (re.compile(r"\b(ca)n't\b", re.IGNORECASE), r"\1n not"),
    (re.compile(r"\b(can)not\b", re.IGNORECASE), r"\1 not"),
    (re.compile(r"\b(w)on't\b", re.IGNORECASE), r"\1ill not"),
    (re.compile(r"\b(sha)n't\b", re.IGNORECASE), r"\1ll not"),
    (re.compile(r"\b(\w+)n't\b", re.IGNORECASE), r"\1 not"),
    (re.compile(r"\b(\w+)'re\b", re.IGNORECASE), r"\1 are"),
    (re.compile(r"\b(\w+)'ll\b", re.IGNORECASE), r"\1 will"),
    (re.compile(r"\b(\w+)'ve\b", re.IGNORECASE), r"\1 have"),
    (re.compile(r"\b(i)'m\b", re.IGNORECASE), r"\1 am"),
]
# Never content: quotes, parentheses, em dashes and CJK clause punctuation.
_IGNORED = frozenset("'\"`‚‛“”„‟«»‹›「」『』《》〈〉〝〞()【】〔〕—―。、")
# Clause punctuation: not content when attached to the character before it and followed
# by a space, the end, or a CJK character.
_CLAUSE = frozenset(".,;:!")
_NUMBER = r"\d+(?:[.,]\d+)*"
_TOKEN = re.compile(rf"(?P<num>{_NUMBER})|(?P<word>[^\W\d_]+)|(?P<under>_+)|(?P<sym>[^\w\s]+)", re.UNICODE)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_SPLIT = re.compile(f"[{_CJK_CLASS}]|[^{_CJK_CLASS}]+")
_UNIT_CHARS = 3  # letters right after a number, up to this many, are a unit: case kept


def _canonical(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_SYMBOLS)
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


def _clause_end(text: str, start: int, end: int) -> bool:
    """Whether the clause punctuation at ``text[start:end]`` only ends a clause (not content):
    attached to the character before it and followed by a space, the end or a CJK character.
    Standing alone it is named, not used ("separate the fields with ,")."""
    i = start - 1
    while i >= 0 and text[i] in _IGNORED:
        i -= 1
    if i < 0 or text[i].isspace():
        return False
    return end == len(text) or text[end].isspace() or _CJK.match(text[end]) is not None


def _symbols(text: str, m: re.Match[str]) -> tuple[str, bool]:
    """The content of one run of symbols, and whether it ended a sentence."""
    tok = m.group()
    k = len(tok)
    while k > 0 and (tok[k - 1] in _CLAUSE or tok[k - 1] in _IGNORED):
        k -= 1
    head = "".join(ch for ch in tok[:k] if ch not in _IGNORED)
    tail = "".join(ch for ch in tok[k:] if ch not in _IGNORED)
    if tail and _clause_end(text, m.start() + k, m.end()):
        return head, "." in tail or "!" in tail
    return head + tail, "。" in tok


def content_words(text: str) -> list[str]:
    """Ordered content tokens of ``text`` (see the module docstring for what is left out).

    ``"We chose Postgres."`` -> ``["we", "chose", "postgres"]``; ``"requires Python >= 3.10"``
    -> ``["requires", "python", ">=", "3.10"]``; CJK text gives one token per character.
    Linear in the length of ``text``.
    """
    text = _canonical(text)
    out: list[str] = []
    prev = ""  # kind of the token before: num | word | under | sym | flag, "" after a dropped one
    prev_end = -1
    sentence_start = True
    for m in _TOKEN.finditer(text):
        kind, tok = m.lastgroup or "", m.group()
        adjacent = m.start() == prev_end
        if kind == "sym":
            kept, ends = _symbols(text, m)
            if kept == "-" and prev == "word" and not adjacent and m.end() < len(text) and text[m.end()].isspace():
                kept = ""  # a dash between words: "required - always"
            if kept:
                out.append(kept)
                # a flag's letters keep their case ("-v" is not "-V")
                prev = "flag" if kept in ("-", "--") and not adjacent else "sym"
                prev_end = m.end()
            else:
                prev, prev_end = "", -1
            sentence_start = ends or (sentence_start and not kept)
            continue
        if kind == "word":
            keep_case = (prev == "flag" and adjacent) or (prev == "num" and len(tok) <= _UNIT_CHARS)
            low = tok if keep_case else tok.casefold()
            if _CJK.search(low):
                # one token per CJK character; Latin runs inside stay whole words
                parts = _CJK_SPLIT.findall(low)
                if parts[0] == CJK_PLEASE and not adjacent:
                    parts = parts[1:]
                out.extend(p for p in parts if p not in FUNCTION_WORDS)
            elif low in FUNCTION_WORDS and not (tok == "A" and not sentence_start):
                pass  # an article or a filler; a capital A inside a sentence is a name ("plan A")
            else:
                out.append(low)
        else:
            out.append(tok)
        sentence_start = False
        prev, prev_end = kind, m.end()
    return out


def restates_exactly(new_text: str, old_text: str) -> bool:
    """True when the two texts have the same content words and the same meaning marks (the
    word gate, without cosine)."""
    return content_words(new_text) == content_words(old_text) and same_meaning(marks(new_text), marks(old_text))


def is_near_duplicate(new_text: str, old_text: str, cosine: float, threshold: float) -> bool:
    """True when ``new_text`` restates ``old_text``: cosine >= threshold, equal content words and
    equal meaning marks."""
    return cosine >= threshold and restates_exactly(new_text, old_text)
