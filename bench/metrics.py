"""Retrieval metrics as the benchmarks' own evaluation code computes them (pure functions).

- LoCoMo (``task_eval/evaluation.py``): recall@k = |evidence ∩ top-k| / |evidence|.
- LongMemEval (``src/retrieval/eval_utils.py``): recall_any@k, recall_all@k, and nDCG@k
  with binary relevance, DCG = rel_1 + sum_{i>=2} rel_i / log2(i), ideal DCG from the
  gold count.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Fraction of ``gold`` found in the first ``k`` of ``ranked``; 0.0 for empty gold."""
    if not gold:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def recall_any(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if any gold id is in the first ``k`` of ``ranked``."""
    top = set(ranked[:k])
    return float(any(g in top for g in gold))


def recall_all(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if every gold id is in the first ``k`` of ``ranked``."""
    top = set(ranked[:k])
    return float(all(g in top for g in gold))


def _dcg(rels: Sequence[float]) -> float:
    if not rels:
        return 0.0
    return rels[0] + sum(r / math.log2(i) for i, r in enumerate(rels[1:], start=2))


def ndcg_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """LongMemEval's nDCG@k (binary relevance, its DCG variant); 0.0 for empty gold."""
    if not gold:
        return 0.0
    ideal = _dcg([1.0] * min(len(gold), k))
    return _dcg([1.0 if d in gold else 0.0 for d in ranked[:k]]) / ideal


def dedupe(ids: Sequence[str]) -> list[str]:
    """``ids`` with repeats removed, first occurrence kept (order preserved)."""
    seen: set[str] = set()
    return [i for i in ids if not (i in seen or seen.add(i))]
