"""Chunking: heading paths, definitions, budgets, and exact line ranges.

``count_tokens`` is a whitespace word counter here (chunking is a pure function of its
text and counter; production passes the model's tokenizer).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from memvault.ingest.chunking import Chunk, chunk_document
from memvault.ingest.readers import Document, read_document


def words(text: str) -> int:
    return len(text.split())


def chunks_of(text: str, fmt: str, max_tokens: int = 480, count=words) -> list[Chunk]:
    return chunk_document(Document(text=text, pages=None, format=fmt), f"x.{fmt}",
                          count_tokens=count, max_tokens=max_tokens)


def spans(chunks: list[Chunk]) -> list[tuple[str | None, int, int]]:
    return [(c.heading if c.symbol is None else c.symbol, c.start_line, c.end_line) for c in chunks]


def assert_exact(chunks: list[Chunk], text: str, budget: int, count=words) -> None:
    """Every chunk is exactly its lines (or a slice of one line cut by tokens), within
    budget, in order, without overlap."""
    lines = text.split("\n")
    last_end = 0
    for c in chunks:
        assert c.text.strip()
        assert count(c.text) <= budget
        assert c.end_line >= c.start_line
        exact = "\n".join(lines[c.start_line - 1 : c.end_line])
        if c.text == exact:
            assert c.start_line > last_end
        else:  # consecutive slices of one long line
            assert c.start_line == c.end_line >= last_end and c.text in exact
        last_end = c.end_line


MARKDOWN = textwrap.dedent("""\
    ---
    title: front matter
    # not a heading
    ---
    Badges and a short intro.

    # memvault

    Long-term memory for coding and chat assistants, offline.

    ## Install

    Use pip to install the package into a virtualenv.

    ### From source

    ```sh
    # clone first
    git clone repo
    ```

    ~~~
    ## still code
    ~~~

    ## Usage
    Call recall before answering any question about the project.

    Configuration
    -------------

    Settings live in the environment.

    - a list item
    ---

    # Changelog ##
    """)


def test_markdown_heading_paths_and_exact_ranges() -> None:
    # every section holds 9..16 words: none is split, no two fit together
    chunks = chunks_of(MARKDOWN, "markdown", max_tokens=16)
    assert spans(chunks) == [
        (None, 1, 5),
        ("memvault", 7, 9),
        ("memvault > Install", 11, 13),
        ("memvault > Install > From source", 15, 24),
        ("memvault > Usage", 26, 27),
        ("memvault > Configuration", 29, 35),
        ("Changelog", 37, 37),
    ]
    assert_exact(chunks, MARKDOWN, 16)
    assert "# clone first" in chunks[3].text and "## still code" in chunks[3].text
    assert chunks[0].text.startswith("---\ntitle: front matter\n# not a heading")


def test_markdown_small_sections_merge_into_their_parent_only() -> None:
    chunks = chunks_of(MARKDOWN, "markdown", max_tokens=40)
    # "memvault" absorbs Install and From source (37 words); Usage would overflow it;
    # Configuration is Usage's sibling, not its child; the preamble and the top-level
    # "Changelog" keep their own chunks (a merge would lose their labels)
    assert spans(chunks) == [
        (None, 1, 5),
        ("memvault", 7, 24),
        ("memvault > Usage", 26, 27),
        ("memvault > Configuration", 29, 35),
        ("Changelog", 37, 37),
    ]
    assert_exact(chunks, MARKDOWN, 40)


def test_markdown_oversized_section_splits_on_blank_lines_then_lines() -> None:
    para = " ".join(f"w{i}" for i in range(8))
    body = "\n\n".join([para] * 5)
    long_block = "\n".join([para] * 4)  # 32 words, no blank line
    text = f"# Big\n\n{body}\n\n{long_block}\n\n## Small\n\nshort text\n"
    chunks = chunks_of(text, "markdown", max_tokens=20)
    assert_exact(chunks, text, 20)
    assert {c.heading for c in chunks} == {"Big", "Big > Small"}
    big = [c for c in chunks if c.heading == "Big"]
    assert len(big) >= 4
    # the 32-word block (lines 13-16) was packed line by line
    assert any(c.start_line >= 13 and c.end_line <= 16 for c in big)
    assert chunks[-1].heading == "Big > Small" and chunks[-1].start_line == 18


def test_rst_section_titles() -> None:
    text = textwrap.dedent("""\
        =======
        Project
        =======

        Intro text for the project.

        Install
        -------

        Some text about installing it.

        Details
        ~~~~~~~

        A literal block::

            not a title
            -----------

        Usage
        -----
        Run it with the command line.
        """)
    # every section holds 7..10 words: none is split, no two fit together
    chunks = chunks_of(text, "rst", max_tokens=10)
    assert spans(chunks) == [
        ("Project", 1, 5),
        ("Project > Install", 7, 10),
        ("Project > Install > Details", 12, 18),
        ("Project > Usage", 20, 22),
    ]
    assert_exact(chunks, text, 10)


PYTHON = textwrap.dedent('''\
    """Module docstring."""

    import os

    LIMIT = 3


    # Explains helper.
    @decorator(
        arg=1,
    )
    def helper(x: int) -> int:
        """Helper."""
        return x + LIMIT


    async def fetch(url):
        return url


    class Store:
        """A store."""

        kind = "mem"

        def get(self, key):
            value = self.data[key]
            return value

        @property
        def size(self):
            return len(self.data)


    if __name__ == "__main__":
        helper(1)
    ''')


def test_python_split_on_definitions_with_exact_ast_ranges() -> None:
    chunks = chunks_of(PYTHON, "python", max_tokens=200)
    by_symbol = {c.symbol: c for c in chunks}
    tree = ast.parse(PYTHON)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            c = by_symbol[node.name]
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert c.start_line <= first and c.end_line >= node.end_lineno
    assert spans(chunks) == [
        (None, 1, 5),
        ("helper", 8, 14),  # the comment above and the decorator belong to it
        ("fetch", 17, 18),
        ("Store", 21, 32),
        (None, 35, 36),  # the main guard is nobody's definition
    ]
    assert_exact(chunks, PYTHON, 200)


def test_python_large_class_splits_at_methods() -> None:
    chunks = chunks_of(PYTHON, "python", max_tokens=16)  # helper is 16 words, Store 23
    assert spans(chunks) == [
        (None, 1, 5),
        ("helper", 8, 14),
        ("fetch", 17, 18),
        ("Store", 21, 24),  # class line, docstring and attributes
        ("Store.get", 26, 28),
        ("Store.size", 30, 32),  # with its decorator
        (None, 35, 36),
    ]
    assert_exact(chunks, PYTHON, 16)


def test_python_syntax_error_falls_back_to_blocks() -> None:
    text = "print 'py2'\n\ndef ok():\n    return 1\n"
    chunks = chunks_of(text, "python", max_tokens=4)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [(None, 1, 1), ("ok", 3, 4)]


def test_go_and_javascript_split_on_top_level_definitions() -> None:
    go = textwrap.dedent("""\
        package main

        import "fmt"

        // Greet says hello.
        // Twice.
        func Greet(name string) {
        \tfmt.Println("hello", name)

        \tfmt.Println("again", name)
        }
        type Point struct {
        \tX int
        }

        func (p *Point) Norm() int {
        \treturn p.X
        }
        """)
    chunks = chunks_of(go, "go", max_tokens=100)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [
        (None, 1, 3), ("Greet", 5, 11), ("Point", 12, 14), ("Norm", 16, 18),
    ]
    assert_exact(chunks, go, 100)

    js = textwrap.dedent("""\
        import x from "x";

        export async function load(path) {
          return x(path);
        }

        const add = (a, b) => a + b;

        export default class Cache {
          get(k) { return k; }
        }
        """)
    chunks = chunks_of(js, "javascript", max_tokens=100)
    assert [c.symbol for c in chunks] == [None, "load", "add", "Cache"]
    assert_exact(chunks, js, 100)


def test_java_oversized_class_pieces_name_their_methods() -> None:
    methods = "\n\n".join(
        f"    public int m{i}(int a) {{\n        return a + {i};\n    }}" for i in range(6)
    )
    java = f"package p;\n\npublic class Calc {{\n{methods}\n}}\n"
    chunks = chunks_of(java, "java", max_tokens=12)
    assert_exact(chunks, java, 12)
    symbols = [c.symbol for c in chunks]
    assert symbols[0] is None
    assert "Calc" in symbols and "Calc.m5" in symbols


def test_plain_text_paragraphs_merged_up_to_budget() -> None:
    paras = [" ".join(f"p{n}w{i}" for i in range(4)) for n in range(6)]
    text = "\n\n".join(paras) + "\n"
    chunks = chunks_of(text, "text", max_tokens=10)
    # 4 words per paragraph: two fit in 10, three do not
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 7), (9, 11)]
    assert all(c.heading is None and c.symbol is None and c.page is None for c in chunks)
    assert_exact(chunks, text, 10)


def test_single_huge_line_is_cut_by_tokens() -> None:
    line = " ".join(f"tok{i}" for i in range(50))
    text = f"intro\n\n{line}\n\nend\n"
    chunks = chunks_of(text, "text", max_tokens=8)
    cut = [c for c in chunks if c.start_line == c.end_line == 3]
    assert len(cut) == 7
    assert all(words(c.text) <= 8 for c in chunks)
    assert "".join(c.text for c in cut) == line  # consecutive slices of the line, nothing lost
    assert chunks[0].text == "intro" and chunks[-1].text == "end"


def test_cjk_without_spaces_cut_with_a_character_counter() -> None:
    line = "记忆服务器把用户的偏好保存在本地数据库中以后每次对话都可以检索" * 5
    chunks = chunks_of(line + "\n", "text", max_tokens=40, count=len)
    assert len(chunks) > 1
    assert all(len(c.text) <= 40 for c in chunks)
    assert "".join(c.text for c in chunks) == line


def test_empty_and_blank_documents_give_no_chunks() -> None:
    assert chunks_of("", "markdown") == []
    assert chunks_of("\n\n   \n", "text") == []
    # a bare "#" is no heading (no empty path element), just a line of text
    assert [(c.text, c.heading) for c in chunks_of("# \n\nword\n", "markdown")] == [("# \n\nword", None)]
    with pytest.raises(ValueError):
        chunks_of("x", "text", max_tokens=0)


@pytest.mark.parametrize("budget", [6, 25, 480])
def test_chunk_text_equals_the_files_lines(tmp_path: Path, budget: int) -> None:
    files = {
        "README.md": MARKDOWN,
        "store.py": PYTHON,
        "guide.rst": "Title\n=====\n\n" + "Some words here.\n\n" * 10,
        "notes.txt": "\n".join(f"line {i} " + "x " * (i % 7) for i in range(60)),
        "crlf.md": "# A\r\n\r\ntext one\r\n\r\n## B\r\ntext two\r\n",
        "main.go": "package main\n\nfunc A() {\n}\n\nfunc B() {\n\treturn\n}\n",
    }
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content.encode())
        doc = read_document(path)
        chunks = chunk_document(doc, name, count_tokens=words, max_tokens=budget)
        assert chunks, name
        # the file's own lines, as an editor numbers them
        file_lines = path.read_bytes().decode().replace("\r\n", "\n").split("\n")
        for c in chunks:
            if c.start_line == c.end_line and c.text != file_lines[c.start_line - 1]:
                assert c.text in file_lines[c.start_line - 1]  # a token-cut slice of a long line
                continue
            assert c.text == "\n".join(file_lines[c.start_line - 1 : c.end_line]), (name, c)
        assert_exact(chunks, doc.text, budget)
