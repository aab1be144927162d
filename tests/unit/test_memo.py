"""``tests.memo``: the session's model behind a memo gives the model's vectors, and runs a text once."""

from __future__ import annotations

import numpy as np

from tests.memo import MemoEngine, memo_embedder
from tests.standin import WordHashEngine, standin_embedder


class Recording(WordHashEngine):
    """The stand-in's engine, noting every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.asked += texts
        return super().embed(texts, batch_size)


def test_a_repeated_text_gets_the_vector_the_engine_gave_it_without_a_second_run() -> None:
    inner = Recording()
    memo = MemoEngine(inner)
    first = memo.embed(["passage: a b", "passage: c"], 32)
    again = memo.embed(["passage: c", "passage: new", "passage: a b", "passage: new"], 32)
    assert inner.asked == ["passage: a b", "passage: c", "passage: new"]  # each distinct text once
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    np.testing.assert_array_equal(again[1], again[3])
    np.testing.assert_array_equal(again, WordHashEngine().embed(["c", "new", "a b", "new"], 32))
    assert (memo.runs, memo.reused) == (3, 3)


def test_the_memo_embedder_is_the_same_model_with_the_same_answers() -> None:
    plain = standin_embedder()
    memo = memo_embedder(plain)
    assert (memo.model_id, memo.dim, memo.max_tokens, memo.query_prefix, memo.passage_prefix) == (
        plain.model_id, plain.dim, plain.max_tokens, plain.query_prefix, plain.passage_prefix)
    texts = ["The billing service runs on Postgres 16", "用户喜欢深色主题", "The billing service runs on Postgres 16"]
    np.testing.assert_allclose(memo.embed_passages(texts), plain.embed_passages(texts), atol=1e-6)
    np.testing.assert_allclose(memo.embed_queries(texts[:2]), plain.embed_queries(texts[:2]), atol=1e-6)
    assert memo.count_tokens(texts[1]) == plain.count_tokens(texts[1])
