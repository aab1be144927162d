"""Multi-line secrets found on a whole text: private key blocks, and where they start and end.

A private key spans many lines; a document is indexed chunk by chunk, and a chunk that
holds only the middle of a key shows nothing a per-chunk check can recognise. So
``find_secret_blocks`` runs on the whole file first and returns each block's character
span; ``index_docs`` leaves out every chunk that overlaps one.

Blocks (kind ``private_key``):

* PEM and alike: a ``-----BEGIN … PRIVATE KEY-----`` line (RSA, EC, DSA, OPENSSH,
  ENCRYPTED, PKCS#8 without a type, ``PGP PRIVATE KEY BLOCK``, ssh.com's
  ``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``) to the next matching END line, and
  OpenVPN's ``-----BEGIN OpenVPN Static key V1-----``. Markers are found wherever they
  sit on a line: indented in a code fence, after a Markdown list marker or ``>``, inside
  a string literal (one line per literal, or one line with ``\\n`` escapes as in a
  service-account JSON file).
* PuTTY key files: the ``PuTTY-User-Key-File-N:`` line to the ``Private-MAC:`` line.
* A whole key base64-encoded on one line (``client-key-data: LS0tLS1CRUdJTi…`` in a
  kubeconfig or Helm values): that line.

A block must hold key material besides its markers (a line of base64 that is not a
word: ``_is_material``): prose that names the marker lines is not a key. A BEGIN without its END (a
truncated paste) reaches over the key material that follows it: lines of base64 once their quotes, indentation, list markers, ``\\n`` escapes and
trailing commas or ``+`` are set aside, header lines (``Proc-Type: …``), and single blank
lines. An END without a BEGIN (the tail of a key) reaches back over the same. A span
always covers whole lines.

Linear time: the markers are found in one pass each and paired in order; the lines are
walked once.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from memvault.policy.secrets.finding import SecretFinding, finding

__all__ = ["SecretBlock", "find_secret_blocks", "private_key"]


@dataclass(frozen=True)
class SecretBlock:
    """A multi-line secret: ``text[start:end]`` (whole lines, ``end`` exclusive, the final
    newline excluded) and its ``kind`` (``"private_key"``)."""

    start: int
    end: int
    kind: str


_BEGIN = re.compile(
    r"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"|-----BEGIN OpenVPN Static key V1-----"
    r"|PuTTY-User-Key-File-\d{1,3}:"
)
_END = re.compile(
    r"-{4,5} ?END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"|-----END OpenVPN Static key V1-----"
    r"|Private-(?:MAC|Hash):[^\n]*"
)
# A line of key material once its wrapping is set aside: base64 (or hex, for OpenVPN)
# of 16 characters or more, or a PEM / PuTTY header line.
_WRAPPING = " \t\r\"'`>*-+,;()[]{}"
_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z0-9-]{1,30}: ?[^\n]{0,200}")
_ESCAPED_NEWLINE = re.compile(r"\\[rn]")
# A whole PEM key base64-encoded on one line (kubeconfig client-key-data, Helm values):
# "LS0tLS1CRUdJTi" is base64 for "-----BEGIN ".
_B64_PEM = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{16,}")


def _is_body(line: str) -> bool:
    s = _ESCAPED_NEWLINE.sub("", line).strip(_WRAPPING)
    return bool(_BODY.fullmatch(s)) or _is_material(s)


def _encoded_key(b64: str) -> bool:
    """Whether base64 text starting "-----BEGIN " decodes to a private key's BEGIN line."""
    head = b64[:120]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head[: len(head) // 4 * 4])
    except ValueError:
        return False


_MATERIAL = re.compile(r"[A-Za-z0-9+/=]{6,}")
_PIECE_BREAK = re.compile(r"\n|\\[rn]")


def _is_material(piece: str) -> bool:
    """A piece of base64 alone on its line that is not a word: 16 characters or more, or 6
    or more with a digit, ``+ / =``, or mixed case past its first letter ("MIIFHzBJ", not
    "README")."""
    return bool(_MATERIAL.fullmatch(piece)) and (
        len(piece) >= 16
        or any(c.isdigit() or c in "+/=" for c in piece)
        or (any(c.islower() for c in piece) and any(c.isupper() for c in piece[1:]))
    )


def _has_material(block: str) -> bool:
    """Whether a block holds key material besides its markers (prose that names the
    markers, "include the -----BEGIN PRIVATE KEY----- and -----END … lines", holds none)."""
    if _B64_PEM.search(block):
        return True
    bare = _END.sub("\n", _BEGIN.sub("\n", block))
    return any(_is_material(p.strip(_WRAPPING)) for p in _PIECE_BREAK.split(bare))


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end == -1 else end


def _reach(text: str, at: int, step: int) -> int:
    """From the line boundary ``at``, walk whole lines of key material forward (``step`` 1)
    or backward (-1); return the boundary reached. One blank line may sit between them."""
    blank = False
    while True:
        if step > 0:
            if at >= len(text):
                return at
            nxt = _line_end(text, at + 1)
            line = text[at + 1 : nxt]
        else:
            if at <= 0:
                return at
            prev = _line_start(text, at - 1)
            line = text[prev : at - 1] if at - 1 >= prev else ""
            nxt = prev
        if not line.strip():
            if blank:
                return at
            blank = True
        elif _is_body(line):
            blank = False
        else:
            return at
        at = nxt


def find_secret_blocks(text: str) -> list[SecretBlock]:
    """The private key blocks in ``text``, in order, not overlapping (module doc).

    ``text``: any string, ``\\n``, ``\\r\\n`` or ``\\r\\n``-escaped line ends. Returns
    ``SecretBlock(start, end, "private_key")`` spans of whole lines; ``[]`` when there is none.
    """
    if "----" not in text and "PuTTY-" not in text and "Private-" not in text and "LS0tLS1CRUdJT" not in text:
        return []  # every marker holds one of these
    begins = list(_BEGIN.finditer(text))
    ends = list(_END.finditer(text))
    spans: list[tuple[int, int]] = [
        (_line_start(text, m.start()), _line_end(text, m.end())) for m in _B64_PEM.finditer(text) if _encoded_key(m.group(0))
    ]
    if not begins and not ends and not spans:
        return []
    j = 0  # ends[j]: the first END not used yet
    unpaired: list[re.Match[str]] = []
    for k, b in enumerate(begins):
        while j < len(ends) and ends[j].start() < b.end():
            unpaired.append(ends[j])
            j += 1
        if spans and b.start() < spans[-1][1]:
            continue  # inside the previous block
        next_begin = begins[k + 1].start() if k + 1 < len(begins) else len(text) + 1
        start = _line_start(text, b.start())
        if j < len(ends) and ends[j].start() < next_begin:
            spans.append((start, _line_end(text, ends[j].end())))
            j += 1
        else:  # truncated: the key material after the BEGIN line
            spans.append((start, _reach(text, _line_end(text, b.end()), 1)))
    unpaired += ends[j:]
    for e in unpaired:  # an END whose BEGIN is missing (or an END met inside a block: merged away)
        spans.append((_reach(text, _line_start(text, e.start()), -1), _line_end(text, e.end())))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, t in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], t))
        else:
            merged.append((s, t))
    return [SecretBlock(s, t, "private_key") for s, t in merged if _has_material(text[s:t])]


def private_key(text: str) -> SecretFinding | None:
    if find_secret_blocks(text):
        return finding("private_key", "a private key block")
    return None
