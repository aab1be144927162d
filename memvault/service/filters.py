"""The engine filters every read and write of memories builds: one user's active, unexpired
memories over a set of projects, narrowed by tags, key and visibility.

Keys, tags and the agent a private memory belongs to reach the index only as digests
(``label_digest``): the engine filters on them, but deleting a point only marks it deleted
in the engine's files, so a label that names something personal would outlive a hard
forget there. SQLite holds the text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from memvault.storage.vectors.base import VectorFilter


def label_digest(label: str) -> str:
    """What the index holds for a key or a tag: 32 hex characters, BLAKE2b-128 of the label
    as stored (already normalised and casefolded by validation). One-way: the index files
    never hold the label's text."""
    return hashlib.blake2b(label.encode("utf-8"), digest_size=16, person=b"memvault.label").hexdigest()


def scope_filter(user_id: str, projects: Sequence[str], now: float, *, tags_any: Sequence[str] | None = None,
                 key: str | None = None, reader: str | None = None, private_to: str | None = None,
                 shared_only: bool = False, **kw) -> VectorFilter:
    """Engine filter for active, unexpired memories of one user over ``projects``; ``tags_any``
    and ``key`` are given as stored (text) and matched through their ``label_digest``; other
    keywords are ``VectorFilter`` fields.

    Visibility: ``reader`` (an agent) keeps the memories it reads, shared or private to it
    (None: every memory, as the user reads them); ``private_to`` keeps only that agent's
    private memories and ``shared_only`` only the shared ones (one slot owner, for duplicates).
    """
    equals = {} if key is None else {"key": label_digest(key)}
    if private_to is not None:
        equals["private_to"] = label_digest(private_to)
    return VectorFilter(user_id=user_id, projects=list(projects), status="active", alive_at=now,
                        tags_any=None if tags_any is None else [label_digest(t) for t in tags_any],
                        equals=equals or None, absent=["private_to"] if shared_only else None,
                        absent_or_equals=None if reader is None else {"private_to": label_digest(reader)}, **kw)
