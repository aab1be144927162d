"""Argument checks shared by the tool handlers.

Each check raises ``InvalidArgument`` with what was wrong and what is allowed, before
anything is written, so a bad call changes nothing and the server keeps serving.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence

from memvault.clock import parse_iso
from memvault.service.errors import InvalidArgument
from memvault.vocabulary import KINDS, Kind, is_kind

MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_KEY_CHARS = 128
MAX_PROJECT_CHARS = 200
MAX_SOURCE_CHARS = 200
MAX_QUERY_CHARS = 2_000
MAX_IDS = 500

_KEY_RE = re.compile(r"^[\w][\w.\-:/]*$", re.UNICODE)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def has_control_chars(text: str) -> bool:
    """True if ``text`` holds an ASCII control character: U+0000..U+001F (tab and newline
    included) or U+007F. Names, tags, labels and paths must not; free text may."""
    return _CONTROL_RE.search(text) is not None


def shown(value: object, limit: int = 60) -> str:
    """``repr`` of a bad value for an error message, cut so a huge input is not echoed back."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_kind(kind: str) -> Kind:
    """One of the memory kinds."""
    if not is_kind(kind):
        raise InvalidArgument(f"kind {shown(kind)} is not known; use one of: {', '.join(KINDS)}")
    return kind


def check_kinds(kinds: Sequence[str] | None) -> list[Kind] | None:
    """None or a non-empty list of memory kinds."""
    if kinds is None:
        return None
    if not kinds:
        raise InvalidArgument(f"kinds is an empty list; leave it out for all kinds or name some of: {', '.join(KINDS)}")
    return [check_kind(k) for k in kinds]


def check_key(key: str | None) -> str | None:
    """A stable slot name such as ``pref.package_manager`` (letters, digits, . _ - : /)."""
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_KEY_CHARS or not _KEY_RE.match(key):
        raise InvalidArgument(
            f"key {shown(key)} is not allowed; use 1-{MAX_KEY_CHARS} letters, digits and . _ - : / "
            "such as 'pref.package_manager'"
        )
    return key


def check_tags(tags: Sequence[str] | None) -> list[str]:
    """Up to MAX_TAGS short tags, trimmed, duplicates removed, order kept."""
    if not tags:
        return []
    out: list[str] = []
    for t in tags:
        t = t.strip()
        if not t or len(t) > MAX_TAG_CHARS or has_control_chars(t):
            raise InvalidArgument(f"tag {shown(t)} is not allowed; tags are 1-{MAX_TAG_CHARS} printable characters")
        if t not in out:
            out.append(t)
    if len(out) > MAX_TAGS:
        raise InvalidArgument(f"{len(out)} tags given; at most {MAX_TAGS} are allowed")
    return out


def check_project(project: str | None) -> str | None:
    """None (the current project), '' (the user's global scope) or a project name."""
    if project is None or project == "":
        return project
    p = project.strip()
    if not p or len(p) > MAX_PROJECT_CHARS or has_control_chars(p):
        raise InvalidArgument(
            f"project {shown(project)} is not allowed; use '' for the global scope or a name of 1-{MAX_PROJECT_CHARS} "
            "printable characters"
        )
    return p


def check_unit(name: str, value: float | None) -> float | None:
    """None or a finite number in [0, 1]."""
    if value is None:
        return None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name} is {value}; it must be between 0 and 1")
    return float(value)


def check_ttl(ttl_days: float | None) -> float | None:
    """None (the kind's default) or a positive, finite number of days."""
    if ttl_days is None:
        return None
    if not math.isfinite(ttl_days) or ttl_days <= 0:
        raise InvalidArgument(f"ttl_days is {ttl_days}; it must be a positive number of days (or left out for the default)")
    if ttl_days > 365 * 100:
        raise InvalidArgument(f"ttl_days is {ttl_days}; at most 36500 days, or leave it out for no expiry by default")
    return float(ttl_days)


def check_ids(name: str, ids: Sequence[str] | None) -> list[str]:
    """Memory ids (UUID strings), at most MAX_IDS."""
    if not ids:
        return []
    if len(ids) > MAX_IDS:
        raise InvalidArgument(f"{name} has {len(ids)} ids; at most {MAX_IDS} per call")
    out = []
    for i in ids:
        try:
            out.append(str(uuid.UUID(str(i).strip())))
        except ValueError:
            raise InvalidArgument(f"{name} contains {shown(i)}, which is not a memory id (ids are UUIDs returned by remember/recall)") from None
    return list(dict.fromkeys(out))


def check_k(k: int, max_k: int) -> int:
    """Number of results: 1..max_k."""
    if k < 1 or k > max_k:
        raise InvalidArgument(f"k is {k}; it must be between 1 and {max_k}")
    return k


def check_query(query: str) -> str:
    """A non-empty search query of at most MAX_QUERY_CHARS characters."""
    q = query.strip()
    if not q:
        raise InvalidArgument("query is empty; say what to look for, e.g. 'package manager preference'")
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query has {len(q)} characters; at most {MAX_QUERY_CHARS} are allowed")
    return q


def check_time(name: str, value: str | None) -> float | None:
    """None or an ISO 8601 date/datetime -> unix seconds."""
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError as exc:
        raise InvalidArgument(f"{name}: {exc}") from None


def check_source(source: str | None) -> str | None:
    """None or a short label of where the memory came from."""
    if source is None:
        return None
    s = source.strip()
    if len(s) > MAX_SOURCE_CHARS or has_control_chars(s):
        raise InvalidArgument(f"source is too long or has control characters; at most {MAX_SOURCE_CHARS} printable characters")
    return s or None
