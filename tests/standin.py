"""A deterministic stand-in for the embedding model, for tests whose assertions cannot
depend on similarity (tool listings, refused arguments, access rules, history, transfer).

``standin_embedder()`` is a real ``memvault.embedding.embedder.Embedder`` (the query cache,
windows of long texts, run planning, normalisation are the production code) around an
engine that needs no model file: a text's vector is the sum of one fixed pseudo-random
unit vector per lower-cased word (feature hashing, 384 dims), so equal texts get equal
vectors, texts sharing no word are nearly orthogonal, and nothing is learned. Its tokens
are words and punctuation marks (each CJK character one token), counted with the two
special tokens a real model adds. Loading costs nothing; embedding a text costs
microseconds.

Never use it where a result depends on what the model finds similar (ranking, relevance
floors, near-duplicates, language): those tests keep the real model (``shared_embedder``).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

from memvault.embedding.embedder import Embedder

DIM = 384
MODEL_ID = "tests/standin-word-hash"
"""The stand-in's vector space id (recorded in collections like a model's)."""
MAX_TOKENS = 512
PREFIXES = ("query: ", "passage: ")

# a run of word characters outside CJK, one CJK character, or one other visible character
_TOKEN = re.compile(r"[^\W\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\w\s]")


@lru_cache(maxsize=65536)
def _word_vector(word: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class WordTokenizer:
    """Words and punctuation as tokens; ``count`` adds the two special tokens."""

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, token)`` per token; a token after a space or at the start is
        marked as a word start (``"\u2581"`` prefix, as sentencepiece does)."""
        return [(m.start(), m.end(), ("\u2581" if m.start() == 0 or text[m.start() - 1].isspace() else "") + m.group())
                for m in _TOKEN.finditer(text)]

    def count(self, text: str) -> int:
        return sum(1 for _ in _TOKEN.finditer(text)) + 2


class WordHashEngine:
    """``embed(texts, batch_size)`` -> float32 (n, DIM): the sum of the texts' word vectors
    (the e5 prefix left out, so a query and a passage of the same words are equal)."""

    def __init__(self) -> None:
        self.tokenizer = WordTokenizer()

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for prefix in PREFIXES:
                if text.startswith(prefix):
                    text = text[len(prefix):]
                    break
            words = [m.group().lower() for m in _TOKEN.finditer(text)][: MAX_TOKENS - 2] or [text]
            for w in words:
                out[i] += _word_vector(w)
        return out


def standin_embedder() -> Embedder:
    """A fresh stand-in embedder (each has its own query cache)."""
    return Embedder(WordHashEngine(), model_id=MODEL_ID, dim=DIM, max_tokens=MAX_TOKENS, batch_size=32,
                    query_prefix=PREFIXES[0], passage_prefix=PREFIXES[1])

