"""Text helpers for memory content: validation, hashing for dedup, cutting to budgets.

Pure functions (no I/O). Lengths are counted in Python ``str`` characters (Unicode code
points), the unit of every ``*_chars`` setting in :mod:`memvault.config`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memvault.policy.cjk import is_cjk

__all__ = ["normalise_for_hash", "content_hash", "cut", "preview", "validate_content"]

_WS = re.compile(r"\s+")

# Characters that may not start the kept tail of a cut: combining marks, joiners and
# variation selectors belong to the character before them (cutting before one would
# split an accented letter or an emoji sequence).
_ZWJ = "\u200d"

# How far back ``cut`` looks for a space before it settles for a plain character cut.
_WORD_LOOKBACK = 30

MARKER_TEMPLATE = " …[truncated: {n} more chars]"
"""Appended by :func:`cut`; ``n`` is the number of characters of the original left out."""


def normalise_for_hash(text: str) -> str:
    """Canonical form of ``text`` used for exact-duplicate detection.

    NFKC (full-width and compatibility forms folded), Unicode casefold, every run of
    whitespace (any Unicode space, tabs, newlines) collapsed to one ASCII space, trimmed.
    ``"  Prefers\\tPNPM "`` and ``"prefers pnpm"`` normalise alike.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WS.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    """SHA-256 hex digest (64 lowercase hex chars) of :func:`normalise_for_hash` (UTF-8).

    Stable across processes, platforms and Python versions; stored as ``content_hash`` on
    each memory so that the same content in the same scope is recognised as a duplicate.
    """
    return hashlib.sha256(normalise_for_hash(text).encode("utf-8")).hexdigest()


def _marker(n: int) -> str:
    return MARKER_TEMPLATE.format(n=n)


def _is_attached(ch: str) -> bool:
    """True if ``ch`` binds to the character before it (combining mark, ZWJ, selector)."""
    return (
        unicodedata.combining(ch) != 0
        or ch == _ZWJ
        or "\ufe00" <= ch <= "\ufe0f"  # variation selectors
        or "\U000e0100" <= ch <= "\U000e01ef"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"  # skin-tone modifiers
    )


def _is_word_char(ch: str) -> bool:
    """Letters/digits of a word that a cut should keep whole: not CJK (see ``policy.cjk``)."""
    return (ch.isalnum() or ch == "_") and not is_cjk(ch)


def _safe_end(text: str, end: int) -> int:
    """Move ``end`` back so that ``text[:end]`` does not split a cluster or a word."""
    while 0 < end < len(text) and (_is_attached(text[end]) or text[end - 1] == _ZWJ):
        end -= 1
    if 0 < end < len(text) and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
        start = end
        floor = max(0, end - _WORD_LOOKBACK)
        while start > floor and _is_word_char(text[start - 1]):
            start -= 1
        if start > 0 and not _is_word_char(text[start - 1]):
            end = start  # the word starts within reach: cut before it
        # else: one very long "word" (a hash, a URL, base64): cut inside it.
    return end


def cut(text: str, budget: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``budget`` characters, marker included.

    Returns ``(text, False)`` when it already fits. Otherwise returns
    ``(head + " …[truncated: N more chars]", True)`` where ``head`` is the longest prefix
    ending at a word boundary (Latin-script words are not split when a space lies within
    30 characters; CJK text and very long tokens are cut between characters; combining
    marks and emoji sequences are never split), trailing whitespace dropped, and ``N`` is
    ``len(text) - len(head)``. The total ``len`` is always ``<= budget``. When ``budget``
    is too small for the marker, the result is ``text[:budget-1] + "…"``.

    Raises ValueError if ``budget < 1``.
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 character, got {budget}")
    if len(text) <= budget:
        return text, False

    total = len(text)
    # Longest head whose marker still fits. The marker grows with the digits of N, and
    # N shrinks as the head grows, so scan down from the most optimistic length.
    end = budget - len(_marker(total))
    while end > 0 and end + len(_marker(total - end)) > budget:
        end -= 1
    if end <= 0:
        head = text[: _safe_end(text, budget - 1)].rstrip() if budget > 1 else ""
        return head + "…", True

    end = _safe_end(text, end)
    head = text[:end].rstrip()
    # Backing off only increases N by as many characters as the head lost, and the
    # marker grows by at most that many digits, so the budget still holds.
    return head + _marker(total - len(head)), True


def preview(text: str, n: int = 80) -> str:
    """One-line preview of at most ``n`` characters for listings and log lines.

    Whitespace (newlines included) collapsed to single spaces and trimmed; longer text
    is cut at a word boundary (as :func:`cut` does) and ends with ``"…"``.
    Raises ValueError if ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"preview length must be at least 1, got {n}")
    flat = _WS.sub(" ", text).strip()
    if len(flat) <= n:
        return flat
    end = _safe_end(flat, n - 1)
    return flat[:end].rstrip() + "…"


def _is_blank(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) == "Cf"


def validate_content(text: str, max_chars: int) -> str:
    """Check memory content and return it trimmed of surrounding whitespace.

    Raises ValueError (message meant for the person or model that sent it) when the
    content is not a string, is longer than ``max_chars`` characters after trimming
    (checked before anything reads it), contains a NUL character, or is empty or only
    whitespace/invisible formatting characters.
    """
    if not isinstance(text, str):
        raise ValueError(f"content must be text, got {type(text).__name__}")
    stripped = text.strip()
    if len(stripped) > max_chars:  # first: nothing else reads a content over the limit
        raise ValueError(
            f"content is {len(stripped)} characters, over the limit of {max_chars}; "
            "shorten it or split it into several memories"
        )
    if "\x00" in stripped:
        raise ValueError("content contains a NUL character (\\x00); send plain text, not binary data")
    if not stripped or all(_is_blank(ch) for ch in stripped):
        raise ValueError("content is empty or only whitespace; there is nothing to remember")
    return stripped
