"""The session's model with a memory: each distinct text is run through the model once.

``memo_embedder(embedder)`` is a real ``memvault.embedding.embedder.Embedder`` (query cache,
windows, run planning, normalisation: the production code) around ``embedder``'s own
loaded engine, wrapped so that a text the model has already embedded in this session
(the exact string the engine receives, prefix included) gets the vector it got then,
instead of a second model run. The model and its vectors are the real ones; only a
repeated run is skipped. A text embedded alone or inside a batch gets the same vector up
to float rounding (the batch is padded, the padding masked), so a floor measured either
way holds either way.

For tests that embed texts another test (or another step of the same test) embedded
already: the in-process servers of many tests store and ask the same texts, and a
benchmark floor stores a set, then ranks it with positions computed from the same texts
embedded again. Never for tests of the embedder itself (batching, threads, engines), which
must see every model run, nor where an assertion depends on how long a model run takes.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from memvault.embedding.embedder import Embedder

MAX_TEXTS = 50_000
"""Vectors kept (384 float32 each: ~77 MB at most); past it, the oldest half is dropped."""


class MemoEngine:
    """``embed(texts, batch_size)`` of ``inner`` (an engine: ``embed``, ``tokenizer``), each
    distinct text run once; thread-safe (two threads missing the same text may both run it,
    and the first vector stays). ``runs``: texts sent to the model; ``reused``: texts
    answered from memory."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self._rows: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.runs = 0
        self.reused = 0

    def __getattr__(self, name: str) -> Any:  # dim, max_tokens, release, ... of the engine
        return getattr(self.inner, name)

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        with self._lock:
            known = {t: self._rows[t] for t in texts if t in self._rows}
        todo = list(dict.fromkeys(t for t in texts if t not in known))
        if todo:
            fresh = np.asarray(self.inner.embed(todo, batch_size), dtype=np.float32).reshape(len(todo), -1)
            with self._lock:
                if len(self._rows) + len(todo) > MAX_TEXTS:
                    for old in list(self._rows)[: len(self._rows) // 2]:
                        del self._rows[old]
                for t, row in zip(todo, fresh, strict=True):
                    known[t] = self._rows.setdefault(t, row)
        with self._lock:
            self.runs += len(todo)
            self.reused += len(texts) - len(todo)
        if not texts:  # as the engine answers it (Embedder never asks)
            return np.asarray(self.inner.embed([], batch_size), dtype=np.float32)
        return np.stack([known[t] for t in texts])


def memo_embedder(embedder: Embedder) -> Embedder:
    """An Embedder of the same model as ``embedder`` (same id, prefixes, limits, folder) whose
    engine is ``embedder``'s wrapped in a ``MemoEngine``."""
    return Embedder(MemoEngine(embedder._engine), model_id=embedder.model_id, dim=embedder.dim,
                    max_tokens=embedder.max_tokens, batch_size=embedder.batch_size,
                    query_prefix=embedder.query_prefix, passage_prefix=embedder.passage_prefix,
                    model_dir=embedder.model_dir)
