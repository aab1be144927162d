"""Readers: encodings, bad bytes, HTML and PDF (made here, by hand) with page numbers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memvault.ingest.chunking import chunk_document
from memvault.ingest.readers import (
    CODE_FORMATS,
    Document,
    UnreadableDocument,
    decode_bytes,
    detect_format,
    read_document,
)


def words(text: str) -> int:
    """Whitespace token counter (the pure-function stand-in for the model's tokenizer)."""
    return len(text.split())


def make_pdf(path: Path, pages: list[list[str]]) -> Path:
    """Write a minimal valid PDF: one Helvetica text line per string, one page per list."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for lines in pages:
        ops = [b"BT", b"/F1 12 Tf", b"14 TL", b"72 720 Td"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(b"(" + esc.encode("latin-1") + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (pages_id, content, font)
        ))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for num, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % num + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, xref)
    path.write_bytes(bytes(out))
    return path


# ----------------------------------------------------------------------------- text


def test_utf8_with_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"\xef\xbb\xbf# Titel\r\n\r\nGr\xc3\xbc\xc3\x9fe\rEnde\n")
    doc = read_document(p)
    assert doc.text == "# Titel\n\nGrüße\nEnde\n"
    assert doc.format == "markdown" and doc.pages is None and doc.encoding == "utf-8-sig"


def test_utf16_bom(tmp_path: Path) -> None:
    p = tmp_path / "w.txt"
    p.write_bytes("第一行\nsecond\n".encode("utf-16"))
    assert read_document(p).text == "第一行\nsecond\n"


def test_gbk_detected(tmp_path: Path) -> None:
    text = "记忆服务器把用户的偏好保存在本地数据库中。\n以后每次对话都可以检索这些记忆，不需要网络连接。\n" * 3
    p = tmp_path / "zh.txt"
    p.write_bytes(text.encode("gbk"))
    doc = read_document(p)
    assert doc.text == text
    assert doc.encoding.lower().replace("_", "") in {"gbk", "gb18030", "gb2312", "cp936"}


def test_mostly_utf8_with_a_broken_byte_keeps_the_rest(tmp_path: Path) -> None:
    good = "中文文档，记忆与检索。" * 20
    p = tmp_path / "cut.txt"
    p.write_bytes(good.encode() + b"\n\xe4\xb8" + "尾巴\n".encode())  # a truncated character
    doc = read_document(p)
    assert doc.text.startswith(good)
    assert "\ufffd" in doc.text and doc.text.endswith("尾巴\n")


def test_stray_byte_in_short_utf8_text_does_not_become_mojibake(tmp_path: Path) -> None:
    p = tmp_path / "stray.txt"
    p.write_bytes(b"Plain English with one stray byte \xff here, caf\xc3\xa9 na\xc3\xafve.\n")
    doc = read_document(p)
    assert doc.text == "Plain English with one stray byte \ufffd here, café naïve.\n"
    assert doc.encoding == "utf-8"


@pytest.mark.parametrize(("text", "encoding"), [
    ("Le café est très apprécié à Genève; la crème brûlée aussi.\n" * 4, "cp1252"),
    ("Hola señor, ¿cómo está? Año nuevo, corazón.\n" * 3, "cp1252"),
    ("Příliš žluťoučký kůň úpěl ďábelské ódy.\n" * 3, "cp1250"),
    ("Съешь же ещё этих мягких французских булок, да выпей чаю.\n" * 3, "cp1251"),
])
def test_legacy_single_byte_encodings_detected(tmp_path: Path, text: str, encoding: str) -> None:
    p = tmp_path / "legacy.txt"
    p.write_bytes(text.encode(encoding))
    assert read_document(p).text == text


def test_bad_bytes_never_crash(tmp_path: Path) -> None:
    rng = random.Random(7)
    for i in range(20):
        data = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 3000)))
        text, enc = decode_bytes(data)
        assert isinstance(text, str) and enc
        p = tmp_path / f"junk{i}.txt"
        p.write_bytes(data)
        doc = read_document(p)
        chunks = chunk_document(doc, p.name, count_tokens=words, max_tokens=20)
        lines = doc.text.split("\n")
        for c in chunks:
            assert words(c.text) <= 20
            assert c.text in "\n".join(lines[c.start_line - 1 : c.end_line])


def test_formats_by_extension_name_and_shebang(tmp_path: Path) -> None:
    assert detect_format(Path("a.MD")) == "markdown"
    assert detect_format(Path("x.rst")) == "rst"
    assert detect_format(Path("x.py")) == "python"
    assert detect_format(Path("x.tsx")) == "typescript"
    assert detect_format(Path("x.htm")) == "html"
    assert detect_format(Path("notes")) == "text"
    assert detect_format(Path("config.yaml")) == "text"
    assert detect_format(Path("Rakefile")) == "ruby"
    assert detect_format(Path("tool"), b"#!/usr/bin/env python3\nprint(1)\n") == "python"
    assert detect_format(Path("run"), b"#!/bin/sh\necho\n") == "shell"
    assert {"python", "go", "rust", "java", "c", "cpp", "ruby", "shell", "javascript"} <= CODE_FORMATS
    assert not {"markdown", "rst", "text", "html", "pdf"} & CODE_FORMATS
    script = tmp_path / "deploy"
    script.write_text("#!/bin/bash\nset -e\n")
    assert read_document(script).format == "shell"


# ----------------------------------------------------------------------------- HTML


def test_html_text_keeps_source_lines_and_headings(tmp_path: Path) -> None:
    html = (
        "<!doctype html>\n"                                   # 1
        "<html><head><title>Guide</title>\n"                  # 2
        "<style>h1 { color: red }</style></head><body>\n"     # 3
        "<h1>Install</h1>\n"                                  # 4
        "<p>Run <code>pip install memvault</code> &amp;\n"    # 5
        "then <b>serve</b>.</p>\n"                            # 6
        "<script>var x = '<h2>not a heading</h2>';\n"        # 7
        "</script>\n"                                         # 8
        "<h2 id='src'\n"                                      # 9
        "    class='x'>From source</h2>\n"                    # 10
        "<ul><li>clone</li><li>make</li></ul>\n"              # 11
        "</body></html>\n"                                    # 12
    )
    p = tmp_path / "guide.html"
    p.write_text(html)
    doc = read_document(p)
    lines = doc.text.split("\n")
    assert doc.format == "html"
    assert len(lines) - 1 == html.count("\n")  # same numbering as the source
    assert lines[1] == "Guide"
    assert lines[3] == "Install"
    assert lines[4] == "Run pip install memvault &"
    assert lines[5] == "then serve."
    assert "not a heading" not in doc.text and "color" not in doc.text
    assert lines[9] == "From source"
    assert lines[10] == "clone make"
    assert doc.headings == [(4, 1, "Install"), (10, 2, "From source")]
    chunks = chunk_document(doc, "guide.html", count_tokens=words, max_tokens=9)
    by_heading = {c.heading: c for c in chunks}
    assert len(by_heading) == len(chunks) == 3
    assert by_heading[None].text == "Guide"
    assert (by_heading["Install"].start_line, by_heading["Install"].end_line) == (4, 6)
    assert "pip install memvault" in by_heading["Install"].text
    src = by_heading["Install > From source"]
    assert (src.start_line, src.end_line) == (10, 11)


# ----------------------------------------------------------------------------- PDF


def test_pdf_pages_recorded_and_chunks_cite_them(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "paper.pdf", [
        ["Embedded vector search", "runs inside the process."],
        [],  # an empty page still counts
        ["Qdrant Edge keeps a write-ahead log (WAL)", "so acknowledged writes survive."],
    ])
    doc = read_document(pdf)
    assert doc.format == "pdf"
    assert doc.pages == [(1, 1), (2, 3), (3, 4)]
    lines = doc.text.split("\n")
    assert lines[0] == "Embedded vector search" and lines[1] == "runs inside the process."
    assert lines[2] == ""
    assert lines[3] == "Qdrant Edge keeps a write-ahead log (WAL)"
    chunks = chunk_document(doc, "paper.pdf", count_tokens=words, max_tokens=100)
    assert [(c.page, c.start_line, c.end_line) for c in chunks] == [(1, 1, 2), (3, 4, 5)]
    assert "write-ahead log" in chunks[1].text and chunks[1].page == 3
    # small budget: still never a chunk spanning two pages
    small = chunk_document(doc, "paper.pdf", count_tokens=words, max_tokens=4)
    assert len(small) > 2
    starts = [s for _, s in doc.pages]
    for c in small:
        assert words(c.text) <= 4
        assert c.page == max(p for p, s in doc.pages if s <= c.start_line)
        assert not any(c.start_line < s <= c.end_line for s in starts)


def test_broken_pdf_raises_unreadable(tmp_path: Path) -> None:
    p = tmp_path / "broken.pdf"
    p.write_bytes(b"%PDF-1.4\nthis is not a pdf body at all\n")
    with pytest.raises(UnreadableDocument):
        read_document(p)


def test_document_is_a_value() -> None:
    d = Document(text="a\n", pages=None, format="text")
    assert d.headings is None and d.encoding == "utf-8"
    with pytest.raises(AttributeError):
        d.text = "b"  # type: ignore[misc]
