"""The default model run directly on onnxruntime with the lean tokenizer (no fastembed).

Same vectors as fastembed's path over the same folder (its mean pooling over the
attention mask, accumulated in float64), at a fraction of the memory: the tokenizer is
``memvault.embedding.lean_tokenizer`` (~55 MB instead of ~280 MB), and texts run in
length-sorted runs bounded in padded token positions (``memvault.embedding.runs``), so
a run's activations stay in the tens of MB. onnxruntime's CPU arena keeps them between
runs (allocating and faulting in fresh pages for every run cost a quarter of a bulk
job's CPU in the kernel); it is shrunk and the C heap trimmed after a call that ran many
positions, and by ``release`` at the end of a bulk job made of many short calls.

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
from memvault.embedding.runs import RUN_POSITIONS, plan_runs

log = logging.getLogger(__name__)

__all__ = ["LEAN_DIR", "LeanEngine", "TRIM_AFTER_TOKENS", "give_back_heap", "prepare_tokenizer"]

#: A call that ran at least this many token positions in all (texts x padded width, summed
#: over its runs) gives its memory back at its end (the arena shrunk, ``malloc_trim``):
#: a one-off long write does not leave the process larger; a bulk job of short calls
#: keeps the memory between calls and calls ``LeanEngine.release`` once at its end.
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
        # The arena keeps a run's activations for the next run (bounded by RUN_POSITIONS);
        # shrunk after long calls and by release().
        so.enable_cpu_mem_arena = True
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
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Mean-pooled (over the attention mask) last hidden states, float32 (len(texts), dim).

        Runs of at most ``batch_size`` texts and ``RUN_POSITIONS`` padded token positions,
        in length order (``plan_runs``). A call that ran ``TRIM_AFTER_TOKENS`` positions or
        more in all gives its memory back at its end (``release``).
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        tokens = [self._truncated(self.tokenizer.ids(t)) for t in texts]
        positions = 0
        for run in plan_runs([len(t) for t in tokens], max(1, batch_size), RUN_POSITIONS):
            batch = [tokens[i] for i in run]
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
            out[run] = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            positions += ids.size
            del hidden, summed
        if positions >= TRIM_AFTER_TOKENS:
            self.release()
        return out

    def release(self) -> None:
        """Give the memory of past runs back to the OS: one tiny run that shrinks onnxruntime's
        arena to what it uses, then ``give_back_heap``. Call after a bulk job (tens of ms)."""
        ids = np.array([[self.tokenizer.pad_id]], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if self._token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        self._session.run([self._output], feed, self._shrink)
        give_back_heap()

    def _truncated(self, ids: list[int]) -> list[int]:
        if len(ids) <= self.max_tokens:
            return ids
        return ids[: self.max_tokens - 1] + [ids[-1]]  # keep </s>, as tokenizers' truncation does
