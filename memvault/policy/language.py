"""Which script family a text is written in, for language-aware scoring.

multilingual-e5 embeddings carry a language component besides meaning: a query scores
higher against passages in its own language, whatever they say (in the probe set of
``tests/data/bilingual_probe.tsv``, the right English memory came first for 4 of 100
Chinese questions, dense channel alone). Recall removes that component per language
(``memvault.policy.fusion.language_corrected``), which needs each text's language.

Two classes are told apart, by script, with no model: ``"cjk"`` (Chinese, Japanese,
Korean: at least ``CJK_SHARE`` of the letters are CJK characters, as
``memvault.policy.cjk`` defines them) and ``"other"`` (everything else; in practice
English and other Latin-script text). Pure functions.
"""

from __future__ import annotations

import functools
import re

from memvault.policy.cjk import CJK_CHAR

__all__ = ["CJK", "OTHER", "CJK_SHARE", "LANGUAGES", "script_class"]

CJK = "cjk"
OTHER = "other"
LANGUAGES: tuple[str, ...] = (CJK, OTHER)
"""Every class :func:`script_class` returns."""

CJK_SHARE = 0.3
"""Share of letters that must be CJK for a text to count as CJK. CJK text carries Latin
identifiers often ("对该部署执行 kubectl rollout undo 即可回滚": 9 CJK characters of
29 letters, 0.31, and the e5 embedding of such a text sits with the Chinese ones), while
English text quoting a CJK word stays far below."""

_SAMPLE_CHARS = 1_000
"""Only the first characters are looked at: enough to tell, bounded in cost."""

_LETTER = re.compile(r"[^\W\d_]")


@functools.lru_cache(maxsize=4096)  # recall asks about the same stored texts again and again
def script_class(text: str) -> str:
    """``"cjk"`` if at least ``CJK_SHARE`` of the letters in the first 1,000 characters of
    ``text`` are CJK, else ``"other"`` (also for a text with no letters)."""
    sample = text[:_SAMPLE_CHARS]
    letters = len(_LETTER.findall(sample))
    cjk = len(CJK_CHAR.findall(sample))
    return CJK if letters and cjk / letters >= CJK_SHARE else OTHER
