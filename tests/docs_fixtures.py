"""A small documentation tree for the document tests: Markdown with nested headings, Python
code, a PDF made here, a Chinese note, a .gitignored folder. Line numbers are recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.unit.test_ingest_readers import make_pdf

TOPICS = {
    "Install": ("installer", "package", "wheel", "interpreter"),
    "From source": ("compiler", "checkout", "toolchain", "makefile"),
    "Configure": ("setting", "variable", "profile", "override"),
}


def _section(topic: str, n: int) -> list[str]:
    """``n`` distinct sentences about one topic (about 15 tokens each), one per line."""
    a, b, c, d = TOPICS[topic]
    return [f"Step {i} of the {topic.lower()} procedure checks the {a} and the {b} before the {c} "
            f"touches the {d} number {i}." for i in range(1, n + 1)]


@dataclass
class Tree:
    """Where the fixture lives and the facts the tests check against."""

    root: Path
    lines: dict[str, int] = field(default_factory=dict)  # label -> 1-based line
    guide_end: int = 0


def write_tree(root: Path) -> Tree:
    """Write the fixture under ``root`` and return its recorded line numbers."""
    root.mkdir(parents=True, exist_ok=True)
    tree = Tree(root)
    guide: list[str] = ["# Guide", "", "This guide explains the frobnicator tool.", ""]
    tree.lines["install"] = len(guide) + 1
    guide += ["## Install", "", *_section("Install", 12), ""]
    tree.lines["source"] = len(guide) + 1
    guide += ["### From source", "", *_section("From source", 10)]
    tree.lines["source_end"] = len(guide)
    guide += [""]
    tree.lines["configure"] = len(guide) + 1
    guide += ["## Configure", "", *_section("Configure", 12)]
    tree.guide_end = len(guide)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("\n".join(guide) + "\n", encoding="utf-8")

    code = [
        '"""Spline utilities."""',
        "",
        "import math",
        "",
        "",
        "def reticulate_splines_v2(config):",
        '    """Reticulate the splines described by config."""',
        "    return [math.sqrt(x) for x in config]",
        "",
        "",
        "def unrelated_helper(a, b):",
        "    return a + b",
    ]
    tree.lines["reticulate"] = 6
    (root / "src").mkdir()
    (root / "src" / "splines.py").write_text("\n".join(code) + "\n", encoding="utf-8")

    (root / "docs" / "deploy-zh.md").write_text(
        "# 部署说明\n\n部署服务之前，必须先在配置文件里把数据库连接池的大小设为二十。\n", encoding="utf-8"
    )
    make_pdf(root / "docs" / "paper.pdf", [
        ["Annual report of the bird society.", "Membership grew this year."],
        ["The quarterly flamingo census counted 4212 birds.", "Most were seen near the salt lake."],
    ])
    (root / ".gitignore").write_text("private/\n*.log\n", encoding="utf-8")
    (root / "private").mkdir()
    (root / "private" / "plan.md").write_text("# Plan\n\nThe zebra migration starts in March.\n", encoding="utf-8")
    (root / "debug.log").write_text("zebra migration log line\n", encoding="utf-8")
    return tree


INDEXED_FILES = 4  # guide.md, deploy-zh.md, paper.pdf, splines.py (.gitignore is hidden: not indexed)


FILLER_WORDS = ("river otter basin harbour lantern orchard granite meadow copper falcon willow canyon ember "
                "glacier thistle beacon quarry saffron tundra violet").split()


def write_filler_corpus(root: Path, *, files: int, sections: int, words: int, modulus: int, title: str) -> None:
    """``files`` Markdown files (``part-NN.md``) of ``sections`` sections each, every section
    ``words`` distinct filler words (about 2.5 tokens a word): a corpus to index in several
    batches whose content does not matter (stopping, resuming, overlapping stages)."""
    root.mkdir(parents=True)
    for f in range(files):
        parts = [f"# {title} part {f}", ""]
        for s in range(sections):
            parts += [f"## Section {f}.{s}", ""]
            parts += [" ".join(FILLER_WORDS[(f * 7 + s * 3 + i) % len(FILLER_WORDS)] + f"{i % modulus}"
                               for i in range(words)), ""]
        (root / f"part-{f:02d}.md").write_text("\n".join(parts), encoding="utf-8")

