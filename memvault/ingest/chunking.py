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
"""

from __future__ import annotations

import ast
import logging
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from memvault.ingest.readers import CODE_FORMATS, Document

log = logging.getLogger(__name__)

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


# ----------------------------------------------------------------------------- sizes


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


# ----------------------------------------------------------------------------- headings


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


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# The title and its optional closing #s are taken apart by _atx_title: in one pattern,
# (?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$ tried every split of a run of spaces and tabs
# (cubic in its length).
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t](.*))?$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BLOCK_START = re.compile(r"^ {0,3}(?:>|[-*+][ \t]|\d{1,9}[.)][ \t]|\||<)")  # quote, list, table, HTML
_INDENTED = re.compile(r"^(?: {4,}|\t)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _clean_title(raw: str) -> str:
    return " ".join(_LINK.sub(r"\1", raw).split())


def _atx_title(rest: str | None) -> str:
    """Title of an ATX heading from what follows its opening #s and one space or tab:
    without surrounding spaces/tabs and without a closing run of #s that follows a space
    or tab (``"## Install ##"`` -> ``"Install"``, ``"# C#"`` -> ``"C#"``)."""
    if rest is None:
        return ""
    title = rest.strip(" \t")
    bare = title.rstrip("#")
    if len(bare) < len(title) and bare[-1:] in (" ", "\t"):
        title = bare.rstrip(" \t")
    return title


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """ATX (``## x``) and setext (``x`` over ``===``/``---``) headings, skipping fenced
    code blocks and YAML/TOML front matter. Returns [(line, level, title)], 1-based."""
    headings: list[tuple[int, int, str]] = []
    i = 0
    if lines and lines[0].strip() in ("---", "+++"):  # front matter
        close = lines[0].strip()
        for j in range(1, len(lines)):
            if lines[j].strip() in (close, "..."):
                i = j + 1
                break
    fence: tuple[str, int] | None = None
    para_start: int | None = None  # index of the first line of the open paragraph
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
            i += 1
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            para_start = None
            i += 1
            continue
        m = _ATX.match(line)
        if m:
            headings.append((i + 1, len(m.group(1)), _clean_title(_atx_title(m.group(2)))))
            para_start = None
            i += 1
            continue
        m = _SETEXT.match(line)
        if m and para_start is not None:
            title = _clean_title(" ".join(lines[para_start:i]))
            headings.append((para_start + 1, 1 if m.group(1)[0] == "=" else 2, title))
            para_start = None
            i += 1
            continue
        if not line.strip() or _BLOCK_START.match(line):
            para_start = None
        elif para_start is None and not _INDENTED.match(line):
            para_start = i
        i += 1
    return [h for h in headings if h[2]]  # a bare "#" is no heading worth a path


_RST_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _adornment(line: str) -> str | None:
    s = line.rstrip()
    if len(s) >= 2 and s[0] in _RST_PUNCT and s == s[0] * len(s):
        return s[0]
    return None


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """reStructuredText section titles: a title line with an underline (and optionally an
    overline) of one repeated punctuation character; levels in order of first use, as
    docutils assigns them. Returns [(line, level, title)], 1-based (line of the overline
    when there is one)."""
    styles: list[tuple[str, bool]] = []
    headings: list[tuple[int, int, str]] = []
    n = len(lines)
    i = 0
    while i < n:
        prev_blank = i == 0 or not lines[i - 1].strip()
        over = _adornment(lines[i])
        if (
            over
            and prev_blank
            and i + 2 < n
            and lines[i + 1].strip()
            and _adornment(lines[i + 2]) == over
            and not _adornment(lines[i + 1])
        ):
            style, title, at, nxt = (over, True), lines[i + 1].strip(), i, i + 3
        elif (
            prev_blank
            and i + 1 < n
            and lines[i].strip()
            and not lines[i][0].isspace()
            and not over
            and (under := _adornment(lines[i + 1]))
            and (len(lines[i + 1].rstrip()) >= len(lines[i].rstrip()) or len(lines[i + 1].rstrip()) >= 4)
        ):
            style, title, at, nxt = (under, False), lines[i].strip(), i, i + 2
        else:
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        headings.append((at + 1, styles.index(style) + 1, title))
        i = nxt
    return headings


# ----------------------------------------------------------------------------- pages


def _page_pieces(pages: list[tuple[int, int]], n_lines: int) -> list[_Piece]:
    pieces = []
    for i, (page_no, start) in enumerate(pages):
        end = pages[i + 1][1] - 1 if i + 1 < len(pages) else n_lines
        if start <= end:
            pieces.append(_Piece(start, end, page=page_no))
    return pieces


# ----------------------------------------------------------------------------- Python

_PY_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_PyDef = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _node_start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _regions(
    nodes: list[ast.stmt], lines: list[str], first: int, last: int, prev_end: int, qualifier: str
) -> list[tuple[_Piece, _PyDef | None]]:
    """Partition lines first..last among ``nodes``: each def/class alone (with the comment
    lines touching it from above), each run of other statements together. Returns
    (piece, the def/class node or None)."""
    starts: list[tuple[int, _PyDef | None]] = []
    for node in nodes:
        start = _node_start(node)
        if isinstance(node, _PY_DEFS):
            while start - 1 > prev_end and lines[start - 2].lstrip().startswith("#"):
                start -= 1
            starts.append((max(start, first), node))
        elif not starts or starts[-1][1] is not None:
            starts.append((max(start, first), None))
        prev_end = node.end_lineno or node.lineno
    if not starts:
        return [(_Piece(first, last), None)]
    out: list[tuple[_Piece, _PyDef | None]] = []
    if starts[0][0] > first:
        out.append((_Piece(first, starts[0][0] - 1), None))
    for i, (start, def_node) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else last
        symbol = qualifier + def_node.name if def_node is not None else None
        out.append((_Piece(start, end, symbol=symbol), def_node))
    return out


def _python_pieces(text: str, lines: list[str], sizer: _Sizer) -> list[_Piece]:
    """Top-level defs and classes with exact ranges from ``ast``; an oversized class is
    split at its methods (``Class.method``). Falls back to generic code on a SyntaxError."""
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for "\d" in the user's code
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # MemoryError is how the parser says "too complex" (a line of 100,000 dashes)
        log.debug("python parse failed (%s); splitting as generic code", exc)
        return _code_pieces(lines)
    pieces: list[_Piece] = []
    for piece, node in _regions(tree.body, lines, 1, len(lines), 0, ""):
        methods = [n for n in getattr(node, "body", []) if isinstance(n, _PY_DEFS)]
        if not isinstance(node, ast.ClassDef) or not methods or sizer.fits(piece.start, piece.end):
            pieces.append(piece)
            continue
        for sub, _ in _regions(node.body, lines, piece.start, piece.end, node.lineno, node.name + "."):
            # the class line, docstring and attributes before the first method: the class
            if sub.symbol is None and sub.start < _node_start(methods[0]):
                sub.symbol = node.name
            pieces.append(sub)
    return pieces


# ----------------------------------------------------------------------------- other code

_DEF_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # JavaScript / TypeScript
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*(?:\*\s*)?([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?(?:(?:public|private|protected|internal|sealed|static|final|data|open)\s+)*(?:class|interface|enum|trait|object|record|struct)\s+([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)",
        r"^(?:export\s+)?(?:declare\s+)?(?:type|namespace|module)\s+([A-Za-z_$][\w$.]*)",
        # Go
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",
        r"^type\s+([A-Za-z_]\w*)",
        # Rust
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern\s+\"[^\"]*\")\s+)*fn\s+([A-Za-z_]\w*)",
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod|macro_rules!)\s*([A-Za-z_]\w*)",
        r"^impl(?:<[^>]*>)?\s+(?:[\w:<>, &']+\s+for\s+)?([A-Za-z_][\w:]*)",
        # Ruby, Elixir, Python-like
        r"^(?:def|defp|defmodule|defmacro|module|class)\s+(?:self\.)?([A-Za-z_][\w:.]*[?!=]?)",
        # Kotlin, Swift, Scala, Lua, PHP, shell
        r"^(?:(?:public|private|protected|internal|open|override|suspend|inline|static|final|abstract|local)\s+)*(?:fun|func|def|function)\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?&?([A-Za-z_][\w-]*)",
        r"^([A-Za-z_][\w-]*)\s*\(\)\s*\{",
        # Java, C#, C, C++ (a line that opens a definition: type ... name(args) without ';')
        r"^(?!(?:if|for|while|switch|return|else|do|case|catch|sizeof|typedef)\b)(?:[\w:<>,\[\]\*&~]+\s+)+\**&?([A-Za-z_][\w:~]*)\s*\([^;]*$",
        r"^(?:typedef\s+)?(?:struct|union|enum|class|namespace)\s+([A-Za-z_]\w*)",
    )
)
_COMMENTISH = re.compile(r"^\s*(?://|#|/\*|\*|--|;|@|\[)")
_CLOSER = re.compile(r"^(?:[})\]]|end\b|fi\b|done\b|esac\b|else\b|elif\b|elsif\b|catch\b|finally\b|except\b|rescue\b)")


def _match_def(line: str) -> str | None:
    line = line[:300]  # a minified megabyte line must not meet a backtracking pattern whole
    for pat in _DEF_PATTERNS:
        m = pat.match(line)
        if m:
            return m.group(1)
    return None


def _first_symbol(lines: list[str], start: int, end: int, *, top_level: bool) -> str | None:
    """Name in the first definition-looking line of lines start..end (column 0 only if top_level)."""
    for n in range(start, end + 1):
        line = lines[n - 1]
        if top_level and line[:1].isspace():
            continue
        name = _match_def(line.strip() if not top_level else line)
        if name:
            return name
    return None


def _code_pieces(lines: list[str]) -> list[_Piece]:
    """Units starting at column-0 lines after a blank line or at definition-looking lines
    (with the comments, decorators and annotations right above them)."""
    starts: set[int] = set()
    for idx, line in enumerate(lines):
        if not line.strip() or line[0].isspace() or _CLOSER.match(line):
            continue
        if idx == 0 or not lines[idx - 1].strip():
            starts.add(idx + 1)
        elif _match_def(line):
            start = idx  # 0-based; walk up over the doc comments and annotations touching it
            while start > 0 and _COMMENTISH.match(lines[start - 1]) and not lines[start - 1][0].isspace():
                start -= 1
            starts.add(start + 1)
    ordered = sorted(starts | {1})
    pieces = []
    for i, start in enumerate(ordered):
        end = ordered[i + 1] - 1 if i + 1 < len(ordered) else len(lines)
        pieces.append(_Piece(start, end, symbol=_first_symbol(lines, start, end, top_level=True)))
    return pieces
