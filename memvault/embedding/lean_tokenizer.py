"""The XLM-R tokenizer of e5 models in ~55 MB instead of ~280 MB.

The ``tokenizers`` library holds a Unigram vocabulary of 250,002 pieces as a trie with
one hash map per node: about 250 MB resident and 1-3 s to build. This tokenizer keeps
``tokenizers`` for everything around the model (the added special tokens, the
``Precompiled`` + collapse-spaces normaliser, the Metaspace pre-tokeniser, offsets back
into the original text) and runs the Unigram Viterbi search itself in SentencePiece,
whose double-array trie is compact. SentencePiece's Unigram search is the algorithm
``tokenizers`` ported, so the ids are the same; the one known difference is the order of
two equal-scoring pieces in a rare tie (e.g. U+2034 TRIPLE PRIME, normalised to three
primes), which moves nothing measurable in a vector.

Only a ``tokenizer.json`` of exactly that shape is accepted (``LeanUnsupported``
otherwise): the caller then keeps the ``tokenizers`` one.

The SentencePiece model and the normaliser's rules are derived once from
``tokenizer.json`` (parsing its 17 MB costs ~1 s) into a small folder (``build_files``)
and loaded from there afterwards (``LeanTokenizer.load``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault.embedding import proto_wire as pw

SPM_FILE = "tokenizer.spm"
META_FILE = "tokenizer-meta.json"
META_VERSION = 1
LEAN_DIR = "lean-tokenizer"
"""In the models folder: one folder of derived files per source ``tokenizer.json`` (``tokenizer_dir``)."""

_METASPACE = "\u2581"


def split_on_tokens(text: str, tokens: list[str]) -> list[str]:
    """``text`` cut around every occurrence of one of ``tokens`` (tried in the given order at
    each position: pass them longest first), the tokens kept as parts of their own, in order;
    ``"".join`` of the result is ``text``. Linear in ``len(text)`` times the number of tokens."""
    starts = {t[0] for t in tokens if t}
    out: list[str] = []
    last = i = 0
    while i < len(text):
        if text[i] in starts:
            hit = next((t for t in tokens if t and text.startswith(t, i)), None)
            if hit is not None:
                if i > last:
                    out.append(text[last:i])
                out.append(hit)
                i = last = i + len(hit)
                continue
        i += 1
    if last < len(text):
        out.append(text[last:])
    return out


def tokenizer_dir(tokenizer_json: Path, models_dir: Path) -> Path:
    """Where the lean tokenizer's files for ``tokenizer_json`` live: ``<models_dir>/lean-tokenizer/<key>``,
    the key a digest of the source's resolved path, size and mtime (no read of its 17 MB) and
    of ``META_VERSION``, so a changed source or format gets a folder of its own.
    Raises OSError (``tokenizer_json`` missing)."""
    st = tokenizer_json.stat()
    key = f"{tokenizer_json.resolve()}|{st.st_size}|{st.st_mtime_ns}|{META_VERSION}"
    return models_dir / LEAN_DIR / hashlib.sha256(key.encode()).hexdigest()[:24]


class LeanUnsupported(ValueError):
    """``tokenizer.json`` is not the XLM-R Unigram pipeline this tokenizer reproduces."""


# ------------------------------------------------------------------ building the files


def spm_model(pieces: list[str], scores: Sequence[float], unk_id: int, specials: set[int]) -> bytes:
    """A serialised SentencePiece ``ModelProto``: Unigram over ``pieces`` and their ``scores``
    (float32 log probabilities), identity normaliser.

    Types: 1 normal, 2 unknown, 4 user-defined (the special tokens: ``tokenizers`` keeps
    them in the Unigram vocabulary with score 0, so a normalised text spelling ``<s>``
    becomes that piece there too). Written field by field (``proto_wire``): one short
    message per piece, 250,002 of them, so the common case is inlined.
    """
    packed = struct.pack(f"<{len(scores)}f", *scores)
    kinds = {i: b"\x18\x04" for i in specials}  # field 3 (type), varint
    kinds[unk_id] = b"\x18\x02"
    normal = b"\x18\x01"
    one_byte = [bytes((n,)) for n in range(128)]  # varints below 128: nearly every length here
    out: list[bytes] = []
    for i, piece in enumerate(pieces):
        raw = piece.encode()
        n = len(raw)
        # field 1 (piece, bytes), field 2 (score, fixed32), field 3 (type)
        body = b"".join((b"\x0a", one_byte[n] if n < 128 else pw.varint(n), raw, b"\x15", packed[4 * i: 4 * i + 4],
                         kinds.get(i, normal)))
        n = len(body)
        out.append(b"\x0a" + (one_byte[n] if n < 128 else pw.varint(n)) + body)  # ModelProto.pieces (field 1)
    trainer = pw.int_field(3, 1) + pw.int_field(40, unk_id)  # UNIGRAM, unk_id
    for num in (41, 42, 43):  # bos / eos / pad: -1 = none (ours are ordinary pieces above)
        trainer += pw.int_field(num, -1)
    out.append(pw.str_field(2, trainer))
    # identity normaliser, no dummy prefix, no whitespace handling: tokenizers did all that
    out.append(pw.str_field(3, pw.str_field(1, "identity") + b"\x18\x00\x20\x00\x28\x00"))
    return b"".join(out)


def meta_json(precompiled_charsmap: bytes, added: dict[str, int], bos: str, eos: str, max_length: int) -> bytes:
    """The contents of ``META_FILE``: the normaliser's rules, the added tokens, ``<s>`` / ``</s>``."""
    meta = {
        "version": META_VERSION,
        "precompiled_charsmap": base64.b64encode(precompiled_charsmap).decode("ascii"),
        "added_tokens": added,
        "bos": [bos, added[bos]],
        "eos": [eos, added[eos]],
        "max_length": max_length,
    }
    return json.dumps(meta, ensure_ascii=False).encode("utf-8")


def holds_files(folder: Path) -> bool:
    """Whether ``folder`` holds the lean tokenizer's files (``SPM_FILE``, ``META_FILE``)."""
    return (folder / SPM_FILE).is_file() and (folder / META_FILE).is_file()


def files_dir(model_dir: Path, models_dir: Path) -> Path:
    """Where the lean tokenizer of the model in ``model_dir`` is: ``model_dir`` itself when it
    holds the files (memvault's own conversion writes them there), else the folder derived
    from its ``tokenizer.json`` (``tokenizer_dir``; maybe not built yet). Raises OSError
    (neither the files nor ``tokenizer.json``)."""
    if holds_files(model_dir):
        return model_dir
    return tokenizer_dir(model_dir / "tokenizer.json", models_dir)


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise LeanUnsupported(what)


def build_files(tokenizer_json: Path, out_dir: Path) -> None:
    """Derive the lean tokenizer's files from ``tokenizer_json`` into ``out_dir`` (exists).

    Raises LeanUnsupported when the pipeline is not XLM-R's (Precompiled + collapse
    spaces, Metaspace always-prepend with split, Unigram without byte fallback,
    ``<s> $A </s>``), OSError when writing fails.
    """
    spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    model = spec.get("model") or {}
    _expect(model.get("type") == "Unigram" and not model.get("byte_fallback"), "model is not a Unigram")
    norm = spec.get("normalizer") or {}
    parts = norm.get("normalizers") or []
    _expect(norm.get("type") == "Sequence" and len(parts) == 2, "normaliser is not Precompiled + Replace")
    _expect(parts[0].get("type") == "Precompiled", "normaliser is not Precompiled + Replace")
    _expect(parts[1] == {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            "normaliser is not Precompiled + Replace")
    pre = spec.get("pre_tokenizer") or {}
    _expect(pre.get("type") == "Metaspace" and pre.get("replacement") == _METASPACE
            and pre.get("prepend_scheme") == "always" and pre.get("split") is True, "pre-tokeniser is not Metaspace")
    post = spec.get("post_processor") or {}
    _expect(post.get("type") == "TemplateProcessing", "post-processor is not a template")
    single = [next(iter(x.values())) for x in post.get("single", [])]
    _expect(len(single) == 3 and single[1].get("id") == "A", "template is not <s> $A </s>")
    bos, eos = single[0]["id"], single[2]["id"]
    index = {str(p): i for i, (p, _) in enumerate(model["vocab"])}
    added = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
    _expect(all(t.get("special") and not t.get("normalized") for t in spec.get("added_tokens", [])),
            "added tokens are not all special and unnormalised")
    _expect(all(index.get(c) == i for c, i in added.items()), "added tokens are not in the vocabulary")
    _expect(bos in added and eos in added, "template tokens are not added tokens")
    unk_id = int(model["unk_id"])
    pieces = [str(p) for p, _ in model["vocab"]]
    scores = [float(sc) for _, sc in model["vocab"]]
    (out_dir / SPM_FILE).write_bytes(spm_model(pieces, scores, unk_id, set(added.values()) - {unk_id}))
    max_length = int(((spec.get("truncation") or {}).get("max_length")) or 512)
    charsmap = base64.b64decode(parts[0]["precompiled_charsmap"])
    (out_dir / META_FILE).write_bytes(meta_json(charsmap, added, bos, eos, max_length))


# ------------------------------------------------------------------ the tokenizer


class LeanTokenizer:
    """Token ids and offsets of XLM-R's tokenizer. Thread-safe (all state read-only).

    Build with ``LeanTokenizer.load(folder)`` on files written by ``build_files``.
    """

    def __init__(self, spm_model: Any, meta: dict[str, Any]) -> None:
        from tokenizers import Regex, normalizers, pre_tokenizers

        self._spm = spm_model
        self._normalizer = normalizers.Sequence([
            normalizers.Precompiled(base64.b64decode(meta["precompiled_charsmap"])),
            normalizers.Replace(Regex(" {2,}"), " "),
        ])
        self._pre = pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always", split=True)
        self._added: dict[str, int] = meta["added_tokens"]
        # longest first, so that a token that begins another is not read in its place
        self._added_longest_first = sorted(self._added, key=len, reverse=True)
        self.bos_id: int = meta["bos"][1]
        self.eos_id: int = meta["eos"][1]
        self.pad_id: int = self._added.get("<pad>", 1)
        self.max_length: int = meta["max_length"]

    @classmethod
    def load(cls, folder: Path) -> LeanTokenizer:
        """Load from ``folder`` (``build_files``' output). Raises OSError / ValueError."""
        return cls.from_bytes((folder / SPM_FILE).read_bytes(), (folder / META_FILE).read_bytes(), str(folder))

    @classmethod
    def from_bytes(cls, spm: bytes, meta_json: bytes, where: str = "tokenizer") -> LeanTokenizer:
        """From the contents of ``SPM_FILE`` and ``META_FILE`` (``where``: named in errors).
        Raises ValueError (not this format)."""
        import sentencepiece

        meta = json.loads(meta_json.decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
            version = meta.get("version") if isinstance(meta, dict) else None
            raise ValueError(f"{where}: {META_FILE} version {version}, expected {META_VERSION}")
        sp = sentencepiece.SentencePieceProcessor()
        sp.LoadFromSerializedProto(spm)
        return cls(sp, meta)

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` with ``<s>``/``</s>``, not truncated."""
        out = [self.bos_id]
        for part in split_on_tokens(text, self._added_longest_first):
            if not part:
                continue
            special = self._added.get(part)
            if special is not None:
                out.append(special)
                continue
            words = [w for w, _ in self._pre.pre_tokenize_str(self._normalizer.normalize_str(part))]
            for piece_ids in self._spm.encode(words):
                out.extend(piece_ids)
        out.append(self.eos_id)
        return out

    def count(self, text: str) -> int:
        """``len(ids(text))``."""
        return len(self.ids(text))

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, piece)`` of every token of ``text`` (no ``<s>``/``</s>``),
        offsets in characters of ``text`` as ``tokenizers`` reports them."""
        from tokenizers import PreTokenizedString, Token

        def tokenize(word: str) -> list[Token]:
            # byte offsets in ``word`` (an unknown piece spans its surface text, not "<unk>")
            pieces = self._spm.encode(word, return_type="proto").pieces
            return [Token(p.id, p.surface, (p.begin, p.end)) for p in pieces]

        out: list[tuple[int, int, str]] = []
        base = 0
        for part in split_on_tokens(text, self._added_longest_first):
            if part in self._added:
                out.append((base, base + len(part), part))
            elif part:
                pts = PreTokenizedString(part)
                pts.normalize(self._normalizer.normalize)
                self._pre.pre_tokenize(pts)
                pts.tokenize(tokenize)
                enc = pts.to_encoding()
                out.extend((base + s, base + e, t) for (s, e), t in zip(enc.offsets, enc.tokens, strict=True))
            base += len(part)
        return out

