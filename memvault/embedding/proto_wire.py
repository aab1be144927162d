"""Protocol Buffers wire format, enough to write a message by hand.

memvault writes two protobuf files itself: the SentencePiece model of the lean tokenizer
(``lean_tokenizer``) and the ONNX graph of the converted model (``onnx_graph``). Writing
the bytes directly needs no generated message classes: importing ``onnx`` alone costs
1-6 s on a busy machine (its ``ml_dtypes`` extension), which a first start would pay
before its first answer.

A message is the concatenation of its fields; ``field`` encodes one. Repeated fields
are the same field number written once per value.
"""

from __future__ import annotations

import struct

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def varint(n: int) -> bytes:
    """``n`` (0 <= n < 2**64; a negative int64 is passed as ``n + 2**64``) as a base-128 varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num: int, wire: int, payload: bytes) -> bytes:
    """Field ``num``: its key, then ``payload`` (length-prefixed when ``wire`` is LEN)."""
    key = varint(num << 3 | wire)
    return key + varint(len(payload)) + payload if wire == LEN else key + payload


def int_field(num: int, value: int) -> bytes:
    """An int32 / int64 / enum field (negative values as 10-byte two's complement, as protobuf does)."""
    return field(num, VARINT, varint(value if value >= 0 else value + (1 << 64)))


def str_field(num: int, value: str | bytes) -> bytes:
    """A string (UTF-8) or bytes field."""
    return field(num, LEN, value.encode() if isinstance(value, str) else value)


def float_field(num: int, value: float) -> bytes:
    """A float (32-bit) field."""
    return field(num, FIXED32, struct.pack("<f", value))
