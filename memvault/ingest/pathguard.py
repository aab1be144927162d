"""Refuse paths outside the allowed roots (no ``..`` traversal, no symlink escape).

Used by ``index_docs`` before anything is read: the caller's path is resolved the way
the operating system would open it (following every symlink, collapsing ``..``), and the
result must lie inside one of the allowed roots, themselves resolved the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


class PathNotAllowed(ValueError):
    """A path resolves outside every allowed root; the message names the path and the roots."""


def check_allowed(path: Path, allowed_roots: Sequence[Path]) -> Path:
    """Resolve ``path`` and return it if it lies inside one of ``allowed_roots``.

    path: absolute, or relative to the current working directory; ``~`` is expanded.
    allowed_roots: folders (or files) the caller may read; each is resolved too, so a
        root given through a symlink still works.
    Returns the resolved absolute path (symlinks followed, ``..`` collapsed). It need not
    exist: a missing path resolves lexically and is checked the same way; a symlink loop
    is checked (and returned) as the link's own absolute path.
    Raises PathNotAllowed when no root contains the resolved path, or when no root is
    given at all (nothing is allowed by default).
    """
    try:
        resolved = Path(os.path.expanduser(path)).resolve(strict=False)
    except RuntimeError:  # a symlink loop (Python < 3.13 raises): judged where the link itself is
        resolved = Path(os.path.abspath(os.path.expanduser(path)))
    roots = [Path(os.path.expanduser(r)).resolve(strict=False) for r in allowed_roots]
    for root in roots:
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    if not roots:
        raise PathNotAllowed(f"{path} is not inside an allowed directory: no directories are allowed")
    shown = ", ".join(str(r) for r in roots)
    if resolved != Path(os.path.abspath(os.path.expanduser(path))):
        raise PathNotAllowed(
            f"{path} resolves to {resolved}, which is outside the allowed directories ({shown})"
        )
    raise PathNotAllowed(f"{path} is outside the allowed directories ({shown})")
