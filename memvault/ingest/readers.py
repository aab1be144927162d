"""Read one file into text with line structure kept, whatever its encoding or format.

Text files: UTF-8 first (a BOM, UTF-8/16/32, is honoured), else ``charset-normalizer``'s
best guess, else UTF-8 with U+FFFD replacement characters: a bad byte never raises.
HTML: the standard library's ``html.parser``, keeping each text run on its source line
(so line numbers cite the .html file itself). PDF: ``pypdf``, one page after another,
with the line where each page starts.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

log = logging.getLogger(__name__)

# Extension (lower case, no dot) -> format name. Unknown extensions read as "text".
_EXT_FORMATS: dict[str, str] = {
    "md": "markdown", "markdown": "markdown", "mdx": "markdown", "mkd": "markdown",
    "rst": "rst", "rest": "rst",
    "txt": "text", "text": "text",
    "html": "html", "htm": "html", "xhtml": "html",
    "pdf": "pdf",
    "py": "python", "pyi": "python", "pyw": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "typescript",
    "go": "go", "rs": "rust", "java": "java", "kt": "kotlin", "kts": "kotlin",
    "scala": "scala", "swift": "swift", "cs": "csharp", "php": "php", "dart": "dart",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
    "hxx": "cpp", "m": "objc", "mm": "objc",
    "rb": "ruby", "rake": "ruby", "lua": "lua", "pl": "perl", "pm": "perl", "r": "r",
    "sh": "shell", "bash": "shell", "zsh": "shell", "fish": "shell", "ps1": "powershell",
    "sql": "sql", "ex": "elixir", "exs": "elixir", "erl": "erlang", "hs": "haskell",
    "ml": "ocaml", "clj": "clojure", "jl": "julia", "zig": "zig", "nim": "nim",
    "vue": "javascript", "svelte": "javascript",
}
_NAME_FORMATS: dict[str, str] = {"rakefile": "ruby", "gemfile": "ruby"}
_SHEBANGS: tuple[tuple[str, str], ...] = (
    ("python", "python"), ("node", "javascript"), ("deno", "typescript"), ("ruby", "ruby"),
    ("perl", "perl"), ("bash", "shell"), ("zsh", "shell"), ("/sh", "shell"), (" sh", "shell"),
)

#: Formats that chunking splits on definitions (the rest are prose or markup).
CODE_FORMATS: frozenset[str] = frozenset(
    set(_EXT_FORMATS.values()) - {"markdown", "rst", "text", "html", "pdf"}
)


class UnreadableDocument(ValueError):
    """The file is of a known format but cannot be turned into text (broken or encrypted PDF)."""


@dataclass(frozen=True, slots=True)
class Document:
    """A file's text, ready to chunk.

    text: the content with newlines normalised to ``\\n`` (``\\r\\n`` and lone ``\\r``
        become ``\\n``); line N (1-based) is ``text.split("\\n")[N-1]``. For plain text,
        Markdown, rST and code, these are exactly the file's lines; for HTML, line N holds
        the text found on source line N (markup removed); for PDF, the extracted text.
    pages: PDF only: ``[(page_no, start_line), ...]``, page_no 1-based, sorted, each page
        starting on its own line (an empty page still takes one line); else None.
    format: "markdown" | "rst" | "text" | "html" | "pdf" | a code language in CODE_FORMATS
        ("python", "javascript", "go", ...).
    headings: HTML only: ``[(line, level, title), ...]`` for ``<h1>``..``<h6>``; else None
        (Markdown and rST headings are parsed from the text by chunking).
    encoding: the encoding the bytes were decoded with (``"pdf"`` for PDF).
    """

    text: str
    pages: list[tuple[int, int]] | None
    format: str
    headings: list[tuple[int, int, str]] | None = None
    encoding: str = "utf-8"


def detect_format(path: Path, head: bytes = b"") -> str:
    """Format name for ``path`` from its extension, else its name, else a shebang in ``head``."""
    ext = path.suffix.lower().lstrip(".")
    if ext in _EXT_FORMATS:
        return _EXT_FORMATS[ext]
    name = path.name.lower()
    if name in _NAME_FORMATS:
        return _NAME_FORMATS[name]
    if not ext and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("latin-1")
        for needle, fmt in _SHEBANGS:
            if needle in first:
                return fmt
    return "text"


def read_document(path: Path, data: bytes | None = None) -> Document:
    """Read ``path`` into a Document (see its fields).

    ``data``: the file's bytes when the caller already read them (then the file is not
    opened again; ``path`` still decides the format). Raises OSError when the file cannot
    be opened, UnreadableDocument when a PDF cannot be parsed or decrypted. Undecodable
    bytes never raise: they become U+FFFD.
    """
    if data is None:
        data = path.read_bytes()
    fmt = detect_format(path, data[:256])
    if fmt == "pdf" or data.startswith(b"%PDF-"):
        return _read_pdf(path, data)
    text, encoding = decode_bytes(data)
    text = normalise_newlines(text)
    if fmt == "html":
        body, headings = html_to_text(text)
        return Document(text=body, pages=None, format="html", headings=headings, encoding=encoding)
    return Document(text=text, pages=None, format=fmt, encoding=encoding)


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` -> ``\\n`` (what editors count as line ends)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),  # before UTF-16: longer
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode file bytes to (text, encoding name); never raises.

    Order: BOM; strict UTF-8; UTF-8 with replacement when the bytes are clearly UTF-8 with
    a few broken sequences (a truncated or spliced file); charset-normalizer's best guess
    (GBK, Shift-JIS, cp1252, ...); UTF-8 with replacement as the last resort.
    """
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return data.decode(enc, errors="replace"), enc
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    loose = data.decode("utf-8", errors="replace")
    bad = loose.count("\ufffd")
    multibyte = sum(1 for ch in loose if ord(ch) > 0x7F and ch != "\ufffd")
    # Legacy encodings (GBK, cp1252, ...) almost never form valid UTF-8 sequences by
    # chance, so a few broken sequences among real UTF-8 characters mean a damaged UTF-8
    # file, which a detector would misread whole (mojibake in every accent).
    if multibyte and bad <= max(1, multibyte // 4):
        return loose, "utf-8"
    try:
        from charset_normalizer import from_bytes

        results = from_bytes(data)
        best = results.best()
        # On short Western text the detector ranks cp1250 (Central European) level with
        # cp1252 and picks it, turning "très" into "trčs"; cp1252 is by far the more
        # common, and it ties only when it decodes the bytes no worse.
        if best is not None and best.encoding != "cp1252":
            for match in results:
                if match.encoding == "cp1252" and match.percent_chaos <= best.percent_chaos:
                    best = match
                    break
    except Exception as exc:  # a detector failure is no reason to lose the file
        log.debug("charset detection failed: %s", exc)
        best = None
    if best is not None and best.encoding:
        return data.decode(best.encoding, errors="replace"), best.encoding
    return loose, "utf-8"


# ----------------------------------------------------------------------------- HTML

# Content never shown as text. <head> itself is not skipped (its end tag is optional):
# what it holds besides <title> is markup without text.
_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "svg", "math"})
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "td", "th",
    "tr", "ul", "title", "caption", "option",
})
_HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}


# What closes each kind of markup in the standard library's parser: every tag, declaration
# and processing instruction ends at ">", a comment at "--" [spaces] ">", a marked section
# (<![CDATA[ ...) at "]" [spaces] ">".
_COMMENT_CLOSE = re.compile(r"--\s*>")
_SECTION_CLOSE = re.compile(r"\]\s*>")


class _LinearHTMLParser(HTMLParser):
    """``HTMLParser`` that gives up at once on markup whose closer never comes.

    The standard library's parser, in releases before mid-2025, retries every ``<`` whose
    markup is unclosed by searching to the end of the input, then moves on by one
    character: quadratic on text such as ``"impl<" * 20000`` (5.6 s) or ``"<!" * n``.
    Here each parse step first checks that its closer occurs somewhere after it (the last
    position of each closer is found once per buffer); when it does not, the step answers
    "incomplete" at once and the parser treats the ``<`` as text, as it would have after
    its search. What is parsed is unchanged; the work is linear.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._closers = (-1, -1, -1)

    def _measure(self, rawdata: str) -> None:
        """Last start of ">", a comment closer and a section closer in ``rawdata``."""
        comment = section = -1
        for m in _COMMENT_CLOSE.finditer(rawdata):
            comment = m.start()
        for m in _SECTION_CLOSE.finditer(rawdata):
            section = m.start()
        self._closers = (rawdata.rfind(">"), comment, section)

    def feed(self, data: str) -> None:
        self._measure(self.rawdata + data)
        super().feed(data)

    def close(self) -> None:
        self._measure(self.rawdata)  # the buffer was cut to what feed left unparsed
        super().close()

    def parse_starttag(self, i: int) -> int:
        return -1 if i >= self._closers[0] else super().parse_starttag(i)

    def parse_endtag(self, i: int) -> int:
        return -1 if i >= self._closers[0] else super().parse_endtag(i)

    def parse_pi(self, i: int) -> int:
        return -1 if i >= self._closers[0] else super().parse_pi(i)

    def parse_comment(self, i: int, report: bool = True) -> int:
        return -1 if i >= self._closers[1] else super().parse_comment(i, report)

    def parse_html_declaration(self, i: int) -> int:
        closer = self._closers[2] if self.rawdata.startswith("<![", i) else self._closers[0]
        return -1 if i >= closer else super().parse_html_declaration(i)


class _LineKeepingText(_LinearHTMLParser):
    """Collects text runs on the source line where each starts, so line N of the output
    is the text of line N of the HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[list[str]] = [[]]
        self.skip_depth = 0
        # open heading: [line of its first text (0 = none yet), level, text parts]
        self.heading: list | None = None
        self.headings: list[tuple[int, int, str]] = []

    def _goto(self, line: int) -> None:
        while len(self.lines) < line:
            self.lines.append([])

    def _put(self, text: str) -> None:
        first, *rest = text.split("\n")
        self.lines[-1].append(first)
        for part in rest:
            self.lines.append([part])

    def _gap(self) -> None:
        self._goto(self.getpos()[0])
        if self.lines[-1] and not self.lines[-1][-1].endswith(" "):
            self.lines[-1].append(" ")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self.skip_depth += 1
        if tag in _BLOCK_TAGS:
            self._gap()
        if tag in _HEADING_TAGS and self.skip_depth == 0:
            self.heading = [0, _HEADING_TAGS[tag], []]

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self._gap()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS and self.skip_depth:
            self.skip_depth -= 1
        if tag in _BLOCK_TAGS:
            self._gap()
        if tag in _HEADING_TAGS and self.heading is not None:
            line, level, parts = self.heading
            title = " ".join("".join(parts).split())
            if title and line:
                self.headings.append((line, level, title))
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        self._goto(self.getpos()[0])
        if self.heading is not None:
            if not self.heading[0] and data.strip():
                self.heading[0] = len(self.lines) + data[: len(data) - len(data.lstrip())].count("\n")
            self.heading[2].append(data)
        self._put(data)


_HTML_SPACES = re.compile(r"[ \t\f\v\u00a0]+")


def html_to_text(html: str) -> tuple[str, list[tuple[int, int, str]]]:
    """HTML source -> (text with the source's line numbering, headings [(line, level, title)]).

    Scripts, styles, templates, noscript, inline SVG and MathML are dropped; entities
    decoded; runs of spaces collapsed; each output line stripped. The output has as many
    lines as the source (a line of pure markup becomes empty).
    """
    parser = _LineKeepingText()
    parser.feed(html)
    parser.close()
    n_source = html.count("\n") + (0 if html.endswith("\n") or not html else 1)
    parser._goto(n_source)
    out = [_HTML_SPACES.sub(" ", "".join(parts)).strip() for parts in parser.lines]
    text = "\n".join(out[:max(n_source, 1)])
    return (text + "\n" if html.endswith("\n") else text), parser.headings


# ----------------------------------------------------------------------------- PDF


def _read_pdf(path: Path, data: bytes) -> Document:
    import io

    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument(f"{path}: encrypted PDF (a password is needed)")
        page_texts: list[str] = []
        for page in reader.pages:
            try:
                page_texts.append(page.extract_text() or "")
            except Exception as exc:  # one bad page should not lose the whole document
                log.warning("%s: page %d unreadable: %s", path, len(page_texts) + 1, exc)
                page_texts.append("")
    except UnreadableDocument:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableDocument(f"{path}: not a readable PDF ({exc})") from exc
    pages: list[tuple[int, int]] = []
    parts: list[str] = []
    line = 1
    for page_no, raw in enumerate(page_texts, start=1):
        body = normalise_newlines(raw).strip("\n")
        pages.append((page_no, line))
        parts.append(body)
        line += body.count("\n") + 1
    text = "\n".join(parts) + ("\n" if parts else "")
    return Document(text=text, pages=pages or None, format="pdf", encoding="pdf")
