"""JSON Merge Patch (RFC 7396), as a pure function.

Why not a library: the one on PyPI (``json-merge-patch`` 0.3.0) mutates its target in
place and carries a CLI; the RFC's own algorithm (section 2) is ten lines, checked
here against every example of its appendix A (tests/unit/test_policy_merge_patch.py).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["merge_patch"]


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply ``patch`` to ``target`` following RFC 7396 section 2; returns a new value.

    Shapes: JSON values as Python (dict, list, str, int, float, bool, None). An object
    patch merges member by member: ``null`` removes the member, an object recurses,
    anything else (arrays included) replaces. A non-object patch replaces the whole
    target. Neither argument is modified; the result shares no mutable part with
    ``patch`` and may share untouched members with ``target``.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result
