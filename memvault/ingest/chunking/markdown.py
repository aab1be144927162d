"""Markdown headings: ATX (``## x``) and setext, outside fenced code and front matter."""

from __future__ import annotations

import re

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
