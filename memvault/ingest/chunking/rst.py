"""reStructuredText section titles: underlined (and overlined) title lines."""

from __future__ import annotations

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
