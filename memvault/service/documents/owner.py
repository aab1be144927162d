"""Whose documents: the registry key of a document indexed for one user alone.

A document indexed over HTTP by a user of a server with a tokens file (several people,
each known by a token) belongs to that user, like a memory: its file row and its index
points hold the key ``owned_key(project, user)`` (``<project>`` + U+001F + ``<user>``)
instead of the plain project, so no other user's search finds it or learns its path.
A document indexed on the server's own machine (``memvault index``, a stdio client) is
registered under the plain project and shared by every user who reads that project: the
way to share a collection is to index it there. Every search reads a project's plain key
and the searching user's own key. U+001F cannot occur in a project name (names are
printable), so no project's key is another's.
"""

from __future__ import annotations

from collections.abc import Sequence

OWNER_MARK = "\x1f"


def owned_key(project: str, user: str) -> str:
    """The registry key of ``user``'s own documents of ``project`` ('' = global)."""
    return f"{project}{OWNER_MARK}{user}"


def read_keys(projects: Sequence[str], user: str) -> list[str]:
    """Every key a search by ``user`` over ``projects`` reads: each plain project and its owned key."""
    return [k for p in projects for k in (p, owned_key(p, user))]


def split_key(key: str) -> tuple[str, str | None]:
    """``(project, owner)`` of a registry key; owner None for a shared (plain) key."""
    project, mark, user = key.partition(OWNER_MARK)
    return project, (user if mark else None)
