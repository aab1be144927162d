"""Code other than Python: units at top-level blank-line blocks and definition-looking lines."""

from __future__ import annotations

import re

from memvault.ingest.chunking.pieces import _Piece
from memvault.ingest.chunking.symbols import _first_symbol, _match_def

_COMMENTISH = re.compile(r"^\s*(?://|#|/\*|\*|--|;|@|\[)")
_CLOSER = re.compile(r"^(?:[})\]]|end\b|fi\b|done\b|esac\b|else\b|elif\b|elsif\b|catch\b|finally\b|except\b|rescue\b)")


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
