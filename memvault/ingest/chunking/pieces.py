"""The pieces chunking works on, and the token budget over them.

``Chunk`` is what ``chunk_document`` returns; ``_Piece`` a line range on its way to one.
``_Sizer`` splits a piece over the budget (blank-line blocks, then lines, then a line cut
by tokens) and ``_merge`` packs neighbours back together while the label stays true.
``_heading_pieces`` and ``_page_pieces`` cut a document along headings (Markdown, rST,
HTML) or PDF pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memvault.ingest.chunking.symbols import _first_symbol

HEADING_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class Chunk:
    """One citable piece of a document.

    text: lines start_line..end_line of the document, joined with ``\\n`` (see module doc
        for the one exception, a line cut by tokens).
    heading: heading path such as ``"Install > From source"`` (Markdown, rST, HTML), else None.
    start_line, end_line: 1-based, inclusive.
    page: PDF page number (1-based) the chunk lies on, else None.
    symbol: code only: the top-level definition (``"parse"``, ``"Store.get"``), else None.
    """

    text: str
    heading: str | None
    start_line: int
    end_line: int
    page: int | None
    symbol: str | None


@dataclass(slots=True)
class _Piece:
    start: int  # 1-based inclusive
    end: int
    path: tuple[str, ...] = ()
    symbol: str | None = None
    page: int | None = None
    whole: bool = True  # False once split for size: never merged again
    cut: str | None = None  # text of a token-cut slice of one long line


class _Sizer:
    """Line access and token budget checks over one document."""

    def __init__(self, lines: list[str], count: Callable[[str], int], budget: int):
        self.lines = lines
        self.count = count
        self.budget = budget

    def text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start - 1 : end])

    def fits(self, start: int, end: int) -> bool:
        return self.count(self.text(start, end)) <= self.budget

    def blank(self, line_no: int) -> bool:
        return not self.lines[line_no - 1].strip()

    def trim(self, p: _Piece) -> _Piece | None:
        start, end = p.start, p.end
        while start <= end and self.blank(start):
            start += 1
        while end >= start and self.blank(end):
            end -= 1
        if start > end:
            return None
        return _Piece(start, end, p.path, p.symbol, p.page, p.whole, p.cut)

    def split(self, p: _Piece, *, code: bool) -> list[_Piece]:
        """Pack ``p`` greedily up to the budget: blank-line blocks as units, the lines of a
        block too big on its own as units, and a line too big on its own cut by tokens."""
        units: list[tuple[int, int]] = []
        i = p.start
        while i <= p.end:
            if self.blank(i):
                i += 1
                continue
            j = i
            while j + 1 <= p.end and not self.blank(j + 1):
                j += 1
            if self.fits(i, j):
                units.append((i, j))
            else:
                units.extend((n, n) for n in range(i, j + 1) if not self.blank(n))
            i = j + 1
        ranges: list[tuple[int, int, str | None]] = []
        cur: tuple[int, int] | None = None
        for u in units:
            if cur is not None and self.fits(cur[0], u[1]):
                cur = (cur[0], u[1])
                continue
            if cur is not None:
                ranges.append((*cur, None))
            cur = u
            if u[0] == u[1] and not self.fits(*u):
                ranges.extend((u[0], u[0], cut) for cut in self._cut_line(u[0]))
                cur = None
        if cur is not None:
            ranges.append((*cur, None))
        whole = len(ranges) == 1 and p.whole
        out: list[_Piece] = []
        for start, end, cut in ranges:
            symbol = p.symbol
            if code and len(ranges) > 1:
                inner = _first_symbol(self.lines, start, end, top_level=False)
                if inner and inner != p.symbol:
                    symbol = f"{p.symbol}.{inner}" if p.symbol else inner
            out.append(_Piece(start, end, p.path, symbol, p.page, whole and cut is None, cut))
        return out

    def _cut_line(self, line_no: int) -> list[str]:
        """Slices of one long line, each within the budget, cut at a space where one is near."""
        rest = self.lines[line_no - 1]
        cuts: list[str] = []
        # No token of a real tokenizer spans 16 characters often enough to matter; the bound
        # keeps each count on a short string even for a megabyte of minified text.
        window = self.budget * 16
        while rest:
            if len(rest) <= window and self.count(rest) <= self.budget:
                cuts.append(rest)
                break
            lo, hi = 1, min(len(rest), window)
            while lo < hi:  # largest prefix length that fits
                mid = (lo + hi + 1) // 2
                if self.count(rest[:mid]) <= self.budget:
                    lo = mid
                else:
                    hi = mid - 1
            space = rest.rfind(" ", 0, lo)
            if space > lo // 2:
                lo = space + 1
            cuts.append(rest[:lo])
            rest = rest[lo:]
        return [c for c in cuts if c.strip()]


def _merge(pieces: list[_Piece], sizer: _Sizer, *, code: bool) -> list[_Piece]:
    """Merge each whole piece into the previous one while both fit and the label stays true."""
    out: list[_Piece] = []
    for p in pieces:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.whole
            and p.whole
            and prev.page == p.page
            and _label_holds(prev, p, code)
            and sizer.fits(prev.start, p.end)
        ):
            out[-1] = _Piece(prev.start, p.end, prev.path, prev.symbol, prev.page, True)
        else:
            out.append(p)
    return out


def _label_holds(prev: _Piece, nxt: _Piece, code: bool) -> bool:
    if code:  # statements of one definition, or unnamed statements together
        return nxt.symbol == prev.symbol
    if prev.path:  # a section absorbs its own subsections
        return nxt.path[: len(prev.path)] == prev.path
    return not nxt.path  # symbol-less prose (paragraphs, preamble) merges with its kind


def _heading_pieces(headings: list[tuple[int, int, str]], n_lines: int) -> list[_Piece]:
    """Sections between headings [(line, level, title)], each labelled with its heading path."""
    pieces: list[_Piece] = []
    first = headings[0][0] if headings else n_lines + 1
    if first > 1:
        pieces.append(_Piece(1, first - 1))
    stack: list[tuple[int, str]] = []
    for i, (line, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = headings[i + 1][0] - 1 if i + 1 < len(headings) else n_lines
        pieces.append(_Piece(line, end, tuple(t for _, t in stack)))
    return pieces


def _page_pieces(pages: list[tuple[int, int]], n_lines: int) -> list[_Piece]:
    pieces = []
    for i, (page_no, start) in enumerate(pages):
        end = pages[i + 1][1] - 1 if i + 1 < len(pages) else n_lines
        if start <= end:
            pieces.append(_Piece(start, end, page=page_no))
    return pieces
