"""What memvault counts as a CJK character: the one definition every policy uses.

CJK here means the letters of scripts written without spaces between words (Chinese
and Japanese) plus Korean Hangul, whose syllables the policies also handle one
character at a time. The class is built from whole Unicode blocks (or the letter runs
of a block), listed in :data:`CJK_BLOCKS`:

* Han: CJK Unified Ideographs and Extension A; Extensions B to I with the CJK
  Compatibility Ideographs Supplement (one range, U+20000..U+323AF); CJK Compatibility
  Ideographs; the ideographic letters of CJK Symbols and Punctuation (々 〆 〇, the
  Hangzhou numerals, the vertical repeat marks, 〼). Its punctuation (、。「」) is not
  included: it separates words.
* Japanese kana: Hiragana, Katakana, Katakana Phonetic Extensions, Kana Extended-B,
  Kana Supplement, Kana Extended-A, Small Kana Extension, halfwidth katakana. The
  Katakana block is taken whole, its middle dot ・ and double hyphen ゠ included.
* Bopomofo and Bopomofo Extended.
* Hangul: Jamo, Compatibility Jamo, Jamo Extended-A and -B, Syllables, halfwidth
  Hangul.

Left out on purpose: the radical and stroke blocks and enclosed / compatibility
symbols (symbols, not letters; NFKC maps most of them to the letters above) and the
fullwidth ASCII forms (NFKC maps them to ASCII).

Pure constants; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["CJK_BLOCKS", "CJK_CLASS", "CJK_CHAR", "CJK_RUN", "is_cjk"]

CJK_BLOCKS: tuple[tuple[str, str, str], ...] = (
    ("\u1100", "\u11ff", "Hangul Jamo"),
    ("\u3005", "\u3007", "CJK Symbols and Punctuation: 々 〆 〇"),
    ("\u3021", "\u3029", "CJK Symbols and Punctuation: Hangzhou numerals 1-9"),
    ("\u3031", "\u3035", "CJK Symbols and Punctuation: vertical kana repeat marks"),
    ("\u3038", "\u303c", "CJK Symbols and Punctuation: Hangzhou numerals 10-30, 〻, 〼"),
    ("\u3040", "\u309f", "Hiragana"),
    ("\u30a0", "\u30ff", "Katakana"),
    ("\u3100", "\u312f", "Bopomofo"),
    ("\u3130", "\u318f", "Hangul Compatibility Jamo"),
    ("\u31a0", "\u31bf", "Bopomofo Extended"),
    ("\u31f0", "\u31ff", "Katakana Phonetic Extensions"),
    ("\u3400", "\u4dbf", "CJK Unified Ideographs Extension A"),
    ("\u4e00", "\u9fff", "CJK Unified Ideographs"),
    ("\ua960", "\ua97f", "Hangul Jamo Extended-A"),
    ("\uac00", "\ud7af", "Hangul Syllables"),
    ("\ud7b0", "\ud7ff", "Hangul Jamo Extended-B"),
    ("\uf900", "\ufaff", "CJK Compatibility Ideographs"),
    ("\uff66", "\uff9f", "Halfwidth and Fullwidth Forms: halfwidth katakana"),
    ("\uffa0", "\uffdc", "Halfwidth and Fullwidth Forms: halfwidth Hangul"),
    ("\U0001aff0", "\U0001b16f", "Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension"),
    ("\U00020000", "\U000323af", "CJK Unified Ideographs Extensions B-I, CJK Compatibility Ideographs Supplement"),
)
"""(first, last, Unicode block) of every range in the class, in code point order."""

CJK_CLASS: str = "".join(f"{first}-{last}" for first, last, _ in CJK_BLOCKS)
"""The inside of a regex character class (no brackets), for building other patterns:
``re.compile(f"[{CJK_CLASS}]+")``, or ``[^{CJK_CLASS}]`` for everything else. Holds the
characters themselves, so it works in raw and plain pattern strings alike."""

CJK_CHAR: re.Pattern[str] = re.compile(f"[{CJK_CLASS}]")
"""One CJK character."""

CJK_RUN: re.Pattern[str] = re.compile(f"[{CJK_CLASS}]+")
"""A maximal run of CJK characters."""


def is_cjk(ch: str) -> bool:
    """True if ``ch`` (one character) is a CJK character as defined above."""
    return CJK_CHAR.fullmatch(ch) is not None
