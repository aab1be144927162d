"""Baselines run beside memvault on the same documents: BM25 and dense-only.

- ``Bm25``: Okapi BM25 (rank-bm25, k1=1.5, b=0.75) over lower-cased word tokens stemmed
  with the Snowball English stemmer; CJK runs become character bigrams (Chinese has no
  spaces), as the reference BM25 figures in ../shared/bench/README.md do.
- ``Dense``: cosine over the same embedder memvault loads (``load_embedder``: e5 passage /
  query prefixes, L2-normalised), exact search with numpy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text``: stemmed English words plus CJK character bigrams (single chars kept)."""
    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWord
    out: list[str] = []
    for tok in _WORD.findall(text.lower()):
        if _CJK.match(tok):
            out += [tok] if len(tok) == 1 else [tok[i : i + 2] for i in range(len(tok) - 1)]
        else:
            out.append(stem(tok))
    return out


class Bm25:
    """BM25 over ``docs`` (list of str). ``search(query, k)`` returns doc indices, best first."""

    def __init__(self, docs: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        toks = [tokenize(d) or ["\u2205"] for d in docs]
        self._bm25 = BM25Okapi(toks)
        self._n = len(docs)

    def search(self, query: str, k: int) -> list[int]:
        scores = self._bm25.get_scores(tokenize(query))
        k = min(k, self._n)
        idx = np.argpartition(-scores, k - 1)[:k] if k < self._n else np.arange(self._n)
        return [int(i) for i in idx[np.argsort(-scores[idx], kind="stable")]]


class Dense:
    """Dense-only retrieval: ``vectors`` float32 (n, dim) L2-normalised passage embeddings."""

    def __init__(self, vectors: np.ndarray) -> None:
        self._v = vectors

    def search_vec(self, qvec: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` passages with the highest cosine to ``qvec`` (dim,), best first."""
        scores = self._v @ qvec
        k = min(k, len(scores))
        idx = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        return [int(i) for i in idx[np.argsort(-scores[idx], kind="stable")]]


def embed_passages_sorted(emb, texts: Sequence[str]) -> np.ndarray:
    """``emb.embed_passages(texts)`` computed in length order (less padding per batch), rows in input order.

    Returns float32 (len(texts), dim), L2-normalised (memvault's Embedder contract).
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vecs = emb.embed_passages([texts[i] for i in order])
    out = np.empty_like(vecs)
    out[order] = vecs
    return out
