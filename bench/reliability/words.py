"""Unique made-up words (markers) that no model, tokenizer or secret check mistakes for anything.

Letters only, pronounceable, 4 syllables by default: ``"kavomirulet"``-like words are
one keyword to memvault's keyword channel, never flagged as a credential (no digits, no
high-entropy mix), and a substring search for one finds nothing else by chance.
"""

from __future__ import annotations

import random

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gl", "kr", "pl", "st",
           "tr", "sk", "sn", "fl"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ei"]


def codeword(rng: random.Random, syllables: int = 4) -> str:
    """One made-up lowercase word of ``syllables`` syllables."""
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice("lmnrst")


def codewords(rng: random.Random, n: int, syllables: int = 4) -> list[str]:
    """``n`` distinct made-up words, none a substring of another."""
    out: list[str] = []
    while len(out) < n:
        w = codeword(rng, syllables)
        if not any(w in o or o in w for o in out):
            out.append(w)
    return out
