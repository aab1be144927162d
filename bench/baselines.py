"""The BM25 baseline run beside memvault on the same documents.

- ``Bm25``: Okapi BM25 (rank-bm25, k1=1.5, b=0.75) over lower-cased word tokens stemmed
  with the Snowball English stemmer; CJK runs become character bigrams (Chinese has no
  spaces), as the reference BM25 figures in ../shared/bench/README.md do.

The dense-only baseline is memvault's own dense channel queried alone
(``bench.mv.search_dense`` for memories, ``bench.beir`` for documents): the same stored
vectors, so the corpus is embedded once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memvault.policy.cjk import CJK_CHAR, CJK_CLASS

_WORD = re.compile(rf"[a-z0-9]+(?:'[a-z]+)?|[{CJK_CLASS}]+")


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text``: stemmed English words plus CJK character bigrams (single chars kept)."""
    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWord
    out: list[str] = []
    for tok in _WORD.findall(text.lower()):
        if CJK_CHAR.match(tok):
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
