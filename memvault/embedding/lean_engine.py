"""The default model run directly on onnxruntime with the lean tokenizer (no fastembed).

Same vectors as fastembed's path over the same folder (its mean pooling over the
attention mask, accumulated in float64), at a fraction of the memory: the tokenizer is
``memvault.embedding.lean_tokenizer`` (~55 MB instead of ~280 MB) and onnxruntime's CPU
arena is off, so the activations of a long batch are given back once it is embedded.

``prepare_tokenizer`` derives the lean tokenizer's files once per ``tokenizer.json``
into ``<models_dir>/lean-tokenizer/<digest>/`` (rebuilt when the source changes).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memvault.embedding.lean_tokenizer import LEAN_DIR, META_FILE, SPM_FILE, LeanTokenizer, build_files, tokenizer_dir

log = logging.getLogger(__name__)

__all__ = ["LEAN_DIR", "LeanEngine", "TRIM_AFTER_TOKENS", "give_back_heap", "prepare_tokenizer"]

#: A run over at least this many token positions (batch x padded width) is followed by
#: ``malloc_trim``: its activations (up to ~1 GB for 32 x 512 tokens) were freed into
#: glibc's heap, which otherwise keeps them resident (measured: 198-459 MiB after such a
#: batch, 162 MiB after the trim).
TRIM_AFTER_TOKENS = 4096


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim(size_t pad) -> int`` (gives freed heap pages back to the OS) from
    the symbols already loaded in this process, or None where the C library has none (musl,
    macOS) or the process cannot be searched that way (Windows)."""
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):
        return None
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
    return trim


def give_back_heap() -> None:
    """Return the C heap's free pages to the OS (glibc ``malloc_trim(0)``; the GIL is released
    meanwhile, as for every ctypes call). A no-op without glibc."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def prepare_tokenizer(tokenizer_json: Path, models_dir: Path) -> Path:
    """Folder holding the lean tokenizer's files for ``tokenizer_json``, built if missing.

    Built in a temporary sibling and renamed into place (a crash or a second process
    leaves nothing half-written); folders for older sources are removed.
    Raises LeanUnsupported (not an XLM-R tokenizer) or OSError.
    """
    out = tokenizer_dir(tokenizer_json, models_dir)
    root = out.parent
    if (out / SPM_FILE).is_file() and (out / META_FILE).is_file():
        return out
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        build_files(tokenizer_json, tmp)
        try:
            os.replace(tmp, out)
        except OSError:
            if not (out / META_FILE).is_file():  # not another process's finished copy
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for stale in root.iterdir():
        if stale.name != out.name and not stale.name.startswith(".tmp-"):
            shutil.rmtree(stale, ignore_errors=True)
    return out


class LeanEngine:
    """An e5 encoder: onnxruntime session over ``model_file`` + ``LeanTokenizer``.

    ``embed(texts, batch_size)`` -> float32 (n, dim) mean-pooled, not yet normalised.
    Thread-safe: ``InferenceSession.run`` and the tokenizer may be called concurrently.
    Raises onnxruntime / OSError exceptions on load.
    """

    def __init__(self, model_file: Path, tokenizer: LeanTokenizer) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Without the arena a batch of long passages gives its activations back afterwards
        # (with it, the peak stays resident); per-query cost is unchanged.
        so.enable_cpu_mem_arena = False
        # Threads waiting for work sleep instead of spinning: the same vectors, ~40% less CPU
        # a query, and the cores free for the event loop and other processes (CHANGELOG.md).
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model_file), so, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in self._session.get_inputs()}
        self._token_types = "token_type_ids" in inputs
        out = self._session.get_outputs()[0]
        self._output = out.name
        self.dim = int(out.shape[-1])
        self.tokenizer = tokenizer
        self.max_tokens = tokenizer.max_length

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Mean-pooled (over the attention mask) last hidden states, float32 (len(texts), dim).

        After a run over ``TRIM_AFTER_TOKENS`` positions or more (a batch of long passages)
        the freed activations are given back to the OS (``give_back_heap``).
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        positions = 0
        for start in range(0, len(texts), batch_size):
            batch = [self._truncated(self.tokenizer.ids(t)) for t in texts[start: start + batch_size]]
            width = max(len(b) for b in batch)
            ids = np.full((len(batch), width), self.tokenizer.pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, b in enumerate(batch):
                ids[row, : len(b)] = b
                mask[row, : len(b)] = 1
            feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
            if self._token_types:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run([self._output], feed)[0]
            summed = np.sum(hidden, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
            out[start: start + len(batch)] = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            positions = max(positions, ids.size)
            del hidden, summed
        if positions >= TRIM_AFTER_TOKENS:
            give_back_heap()
        return out

    def _truncated(self, ids: list[int]) -> list[int]:
        if len(ids) <= self.max_tokens:
            return ids
        return ids[: self.max_tokens - 1] + [ids[-1]]  # keep </s>, as tokenizers' truncation does
