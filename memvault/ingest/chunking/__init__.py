"""Cut a Document into citable chunks: exact line ranges, a heading path or a symbol, a token budget.

Structure first, then size. Markdown splits on ATX and setext headings (not inside fenced
code or front matter), reStructuredText on underlined (and overlined) section titles, HTML
on ``<h1>``..``<h6>``, Python on top-level ``def``/``class`` (exact ranges from ``ast``),
other code on top-level blank-line blocks and definition-looking lines, PDF on pages,
plain text on blank-line paragraphs. A piece over ``max_tokens`` is split on blank lines,
then on lines, and a single line longer than the budget is cut by tokens. Neighbouring
pieces are merged while they fit, when the merge keeps the label true (a section with its
own subsections; code statements of one definition, or unnamed ones together; paragraphs
of one page).

Every chunk's text is exactly lines ``start_line..end_line`` of ``Document.text``
(1-based, inclusive; leading and trailing blank lines trimmed), except the pieces of a
line cut by tokens, whose text is a consecutive slice of that one line.

Modules: ``pieces`` (the ``Chunk`` model, pieces, the token budget: splitting and merging),
``markdown``, ``rst`` (their headings), ``python`` (defs and classes from ``ast``), ``code``
(other languages), ``symbols`` (definition-looking lines); this module dispatches by format.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memvault.ingest.chunking.code import _code_pieces
from memvault.ingest.chunking.markdown import _markdown_headings
from memvault.ingest.chunking.pieces import (
    HEADING_SEPARATOR,
    Chunk,
    _heading_pieces,
    _merge,
    _page_pieces,
    _Piece,
    _Sizer,
)
from memvault.ingest.chunking.python import _python_pieces
from memvault.ingest.chunking.rst import _rst_headings
from memvault.ingest.readers import CODE_FORMATS, Document

__all__ = ["HEADING_SEPARATOR", "Chunk", "chunk_document"]

log = logging.getLogger(__name__)


def chunk_document(
    doc: Document,
    rel_path: str,
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int = 480,
) -> list[Chunk]:
    """Split ``doc`` into chunks of at most ``max_tokens`` tokens each, in document order.

    doc: from ``read_document``; ``doc.format`` picks the splitter.
    rel_path: the file's path, for log messages.
    count_tokens: tokens in a string as the embedding model counts them (production: the
        model's tokenizer; leave room in ``max_tokens`` for special tokens and prefixes).
    max_tokens: budget per chunk, >= 1.
    Returns chunks with non-empty text; [] for an empty or blank document.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    lines = doc.text.split("\n")
    if doc.text.endswith("\n"):
        lines.pop()
    if not any(line.strip() for line in lines):
        return []
    sizer = _Sizer(lines, count_tokens, max_tokens)
    fmt = doc.format
    if fmt == "markdown":
        pieces = _heading_pieces(_markdown_headings(lines), len(lines))
    elif fmt == "rst":
        pieces = _heading_pieces(_rst_headings(lines), len(lines))
    elif fmt == "html":
        pieces = _heading_pieces(doc.headings or [], len(lines))
    elif fmt == "python":
        pieces = _python_pieces(doc.text, lines, sizer)
    elif fmt in CODE_FORMATS:
        pieces = _code_pieces(lines)
    elif fmt == "pdf" and doc.pages:
        pieces = _page_pieces(doc.pages, len(lines))
    else:
        pieces = [_Piece(1, len(lines))]
    # prose is packed paragraph by paragraph; structured pieces are split only when too big
    prose = fmt not in CODE_FORMATS and fmt not in ("markdown", "rst", "html")
    out: list[_Piece] = []
    for piece in pieces:
        trimmed = sizer.trim(piece)
        if trimmed is None:
            continue
        if prose or not sizer.fits(trimmed.start, trimmed.end):
            out.extend(sizer.split(trimmed, code=fmt in CODE_FORMATS))
        else:
            out.append(trimmed)
    merged = _merge(out, sizer, code=fmt in CODE_FORMATS)
    chunks = [
        Chunk(
            text=p.cut if p.cut is not None else sizer.text(p.start, p.end),
            heading=HEADING_SEPARATOR.join(p.path) if p.path else None,
            start_line=p.start,
            end_line=p.end,
            page=p.page,
            symbol=p.symbol,
        )
        for p in merged
    ]
    log.debug("%s: %d lines -> %d chunks (%s)", rel_path, len(lines), len(chunks), fmt)
    return chunks
