"""What makes two identifiers look alike: invisible characters and mixed scripts (pure).

An identifier (a key, a tag, a task id, a project name ...) is compared character by
character, so two that look the same on screen must not be two different values:

- **Invisible characters**: format characters (Unicode category Cf: zero-width space,
  joiners, the bidirectional embeddings, overrides and isolates, the byte-order mark,
  the soft hyphen, ...), controls (Cc), line and paragraph separators (Zl, Zp), and a
  few letters and marks that draw nothing (Hangul fillers, the combining grapheme
  joiner, variation selectors). :func:`first_invisible` finds them.
- **Mixed scripts**: a word (a run of letters and digits) whose letters come from
  scripts that are not written together, such as Latin with Cyrillic ("lаnguage" with
  U+0430) or Greek, is the classic look-alike. A word may use one script, or Latin with
  the scripts of Chinese, Japanese or Korean (Han, kana, Bopomofo, Hangul), as those
  are written together (the "highly restrictive" level of Unicode TS #39, applied per
  word). Digits other than ASCII count as letters of their script. And a word written
  only with Cyrillic or Greek letters that each look like a Latin letter ("рор") is
  refused in an identifier that has Latin letters elsewhere. :func:`mixed_script` finds
  both.

Scripts are read from the Unicode character names (the first word: LATIN, CYRILLIC,
GREEK, CJK ...), which is enough to tell scripts apart without a script table. Run
these on NFKC-normalised text: NFKC folds full-width, mathematical and other
compatibility letters into the ordinary ones first.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["char_label", "first_invisible", "mixed_script", "script_of"]

# Draw nothing, though not in category Cf / Cc: Hangul fillers, the combining grapheme
# joiner, Mongolian free variation selectors, variation selectors, the braille blank.
_INVISIBLE_EXTRA = frozenset(
    ["\u115f", "\u1160", "\u3164", "\uffa0", "\u034f", "\u2800", *map(chr, range(0x180B, 0x1810)),
     *map(chr, range(0xFE00, 0xFE10)), *map(chr, range(0xE0100, 0xE01F0))]
)
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp"})

# First word of a character name -> its script (others are taken as named).
_SCRIPT_ALIASES = {"CJK": "Han", "IDEOGRAPHIC": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana",
                   "KATAKANA-HIRAGANA": "Kana", "HALFWIDTH": None, "FULLWIDTH": None}
# Scripts one word may mix (besides any single script).
_QUALIFIERS = frozenset({"EXTENDED", "OLD", "NEW", "SMALL"})
_ALLOWED_MIXES = (frozenset({"Latin", "Han", "Kana"}), frozenset({"Latin", "Han", "Bopomofo"}),
                  frozenset({"Latin", "Han", "Hangul"}))
# Cyrillic and Greek letters that look like a Latin letter.
_LATIN_LOOKALIKES = frozenset(
    "аеорсухѕіјһԁԛԝӏАВЕКМНОРСТХЅІЈҮԚԜ"  # Cyrillic
    "οινκυαΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek
)
_WORD = re.compile(r"[^\W_]+")


def char_label(ch: str) -> str:
    """``"U+0430 CYRILLIC SMALL LETTER A"``: code point and Unicode name (or category) of ``ch``."""
    name = unicodedata.name(ch, "") or f"unnamed character of category {unicodedata.category(ch)}"
    return f"U+{ord(ch):04X} {name}"


def first_invisible(text: str) -> str | None:
    """The first character of ``text`` that draws nothing or steers the text direction
    (see the module docstring), or None."""
    for ch in text:
        if unicodedata.category(ch) in _INVISIBLE_CATEGORIES or ch in _INVISIBLE_EXTRA:
            return ch
    return None


def script_of(ch: str) -> str | None:
    """Script of a letter or non-ASCII digit (``"Latin"``, ``"Cyrillic"``, ``"Han"``, ``"Kana"``,
    ``"Hangul"`` ...); None for ASCII digits, marks, punctuation and symbols (any script)."""
    cat = unicodedata.category(ch)
    if not (cat.startswith("L") or (cat in ("Nd", "Nl", "No") and not ch.isascii())):
        return None
    words = unicodedata.name(ch, "").split(" ")
    first = words[1] if words[0] in _QUALIFIERS and len(words) > 1 else words[0]
    if not first:
        return None
    if first in _SCRIPT_ALIASES:
        return _SCRIPT_ALIASES[first]
    return first.split("-", 1)[0].capitalize()


def _allowed(scripts: set[str]) -> bool:
    return len(scripts) <= 1 or any(scripts <= mix for mix in _ALLOWED_MIXES)


def _odd_one(word: str, main: str) -> str:
    """The character of ``word`` to name: the first whose script may not go with ``main``,
    else the first that makes the word's scripts a mix that is not allowed."""
    scripts = [(ch, script_of(ch)) for ch in word]
    for ch, s in scripts:
        if s is not None and not _allowed({main, s}):
            return ch
    seen: set[str] = set()
    for ch, s in scripts:
        if s is not None:
            seen.add(s)
            if not _allowed(seen):
                return ch
    return word[0]  # not reached: the caller found the word's scripts not allowed


def mixed_script(text: str) -> tuple[str, str, list[str]] | None:
    """The first look-alike word of ``text`` (see the module docstring), or None.

    Returns (word, the character that does not belong, the scripts of the word: Latin
    first, then the most frequent). For "pref.lаnguage" with U+0430: ``("lаnguage", "а", ["Latin", "Cyrillic"])``.
    """
    words = _WORD.findall(text)
    has_latin = any(script_of(ch) == "Latin" for w in words for ch in w)
    for word in words:
        counts: dict[str, int] = {}
        for ch in word:
            s = script_of(ch)
            if s is not None:
                counts[s] = counts.get(s, 0) + 1
        ranked = sorted(counts, key=lambda s: (s != "Latin", -counts[s], s))  # Latin first: name the intruder
        if not _allowed(set(counts)):
            return word, _odd_one(word, ranked[0]), ranked
        if has_latin and ranked and set(ranked) <= {"Cyrillic", "Greek"} and \
                all(ch in _LATIN_LOOKALIKES for ch in word if script_of(ch) is not None):
            return word, word[0], ranked
    return None
