"""Near-duplicate test for writes (pure).

Measured on multilingual-e5-small (q4), passage embeddings: true duplicates that differ
only in case, punctuation, spacing or an article score 0.974-0.998; but so do different
facts: "prefers pnpm over npm" / "npm over pnpm" 0.999, "深色主题" / "浅色主题" 0.981,
"port 8001" / "port 8002" 0.969 (measured with the bundled multilingual-e5-small). Cosine alone
cannot tell them apart, so a near duplicate must pass both gates: cosine at or above the
calibrated threshold (setting ``dedup_threshold``, 0.97: below every measured duplicate)
AND the same content words in the same order once case, punctuation, spacing and a few
function words are ignored.
"""

from __future__ import annotations

import re
import unicodedata

from memvault.policy.cjk import CJK_CLASS as _CJK_CLASS

# Words whose presence or absence does not change what a memory says.
FUNCTION_WORDS = frozenset(
    "a an the this that these those to of in on at for by with and or is are was were be been "
    "do does did please just really very also".split()
)
_TOKEN = re.compile(r"[^\W_]+|_+", re.UNICODE)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_SPLIT = re.compile(f"[{_CJK_CLASS}]|[^{_CJK_CLASS}]+")


def content_words(text: str) -> list[str]:
    """Ordered content tokens: NFKC, casefolded, punctuation dropped, CJK split per character,
    function words removed. ``"We chose Postgres."`` -> ``["we", "chose", "postgres"]``."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for tok in _TOKEN.findall(norm):
        if _CJK.search(tok):
            # one token per CJK character; Latin runs inside stay whole words
            out.extend(p for p in _CJK_SPLIT.findall(tok) if p not in FUNCTION_WORDS)
        elif tok not in FUNCTION_WORDS:
            out.append(tok)
    return out


def is_near_duplicate(new_text: str, old_text: str, cosine: float, threshold: float) -> bool:
    """True when ``new_text`` restates ``old_text``: cosine >= threshold and equal content words."""
    return cosine >= threshold and content_words(new_text) == content_words(old_text)
