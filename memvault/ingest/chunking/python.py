"""Python: top-level defs and classes with exact ranges from ``ast``; big classes split at methods."""

from __future__ import annotations

import ast
import logging
import warnings

from memvault.ingest.chunking.code import _code_pieces
from memvault.ingest.chunking.pieces import _Piece, _Sizer

log = logging.getLogger(__name__)

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
