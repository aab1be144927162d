"""A refused value as an error message or a log line may show it: cut, masked, never whole.

An argument that fails a check is often the caller's own data (a note, a token pasted
into the wrong field), and the message about it reaches the reply and the server's log.
``masked`` shows enough to tell which value was meant and never the value itself:

* text that holds a secret (``find_secret``) is not shown at all: ``<42 characters that
  look like a GitHub token, not shown>``;
* a short plain word (at most ``WORD_CHARS`` letters, spaces, ``. _ -``: an unknown kind,
  ``'high'`` for a number) is shown as is: it names the mistake and carries no data;
* any other text shows its first characters (at most a third of it, at most
  ``PREFIX_CHARS``), with runs of letters mixed with digits (token-like) masked after
  their first two characters (``sk****``), then ``…`` and the length: ``'k gh…' (42 characters)``;
* numbers of up to ``NUMBER_CHARS`` characters are shown (``-1``, ``1e+308``), longer ones
  cut as text; lists and objects by their size alone (``a list of 3 items``), never their
  contents; ``True``/``False``/``None`` as they are.

Invisible and direction characters come out escaped (``repr``), never raw.
"""

from __future__ import annotations

import re

from memvault.policy.secrets.detect import find_secret

__all__ = ["masked"]

WORD_CHARS = 16
"""Longest plain word shown whole (the longest memory kind or status is 11 characters)."""
PREFIX_CHARS = 12
"""Most characters of other text shown."""
NUMBER_CHARS = 8
"""Longest number shown whole: a PIN or a card number is longer once it matters."""
SCAN_CHARS = 4_000
"""Characters of a value scanned for a secret (a huge value is cut before the scan)."""

_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:[ ._\-][^\W\d_]+)*")
_TOKEN_RUN = re.compile(r"(?=[A-Za-z0-9_\-+/=]{0,63}\d)(?=[A-Za-z0-9_\-+/=]{0,63}[A-Za-z])[A-Za-z0-9_\-+/=]{6,64}")


def _mask_runs(text: str) -> str:
    return _TOKEN_RUN.sub(lambda m: m.group(0)[:2] + "*" * (len(m.group(0)) - 2), text)


def masked(value: object) -> str:
    """``value`` as a message may show it (module doc). Never raises; never returns the
    whole of a string longer than ``WORD_CHARS`` or holding anything but letters."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= NUMBER_CHARS else f"{text[:2]}… ({len(text)} characters)"
    if isinstance(value, (list, tuple, set, frozenset)):
        n = len(value)
        return f"a list of {n} item{'' if n == 1 else 's'}"
    if isinstance(value, dict):
        n = len(value)
        return f"an object of {n} entr{'y' if n == 1 else 'ies'}"
    if not isinstance(value, str):
        return f"a value of type {type(value).__name__}"
    n = len(value)
    try:
        found = find_secret(value[:SCAN_CHARS])
    except Exception:  # showing must never fail the answer
        found = None
    if found is not None:
        return f"<{n} characters that look like {found.what}, not shown>"
    if n <= WORD_CHARS and _PLAIN_WORD.fullmatch(value):
        return repr(value)
    keep = max(1, min(PREFIX_CHARS, n // 3))
    head = repr(value[:keep])
    return f"{_mask_runs(head[:-1])}…{head[-1]} ({n} characters)"
