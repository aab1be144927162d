"""The ``history`` handler: the recorded changes of one memory, or of a key's memories.

Newest first: ``limit`` keeps the latest changes, which are the ones asked about most;
``total`` says how many there are. Each entry says what happened (the stored action in
words: ``add`` -> added, ``delete`` -> forgotten, ...), when, by which client, why, and
the memory's text at that version, cut to ``policy.budget.CONTENT_BUDGET_CHARS``. A memory's
text never changes between its versions, so it is given once per memory, on its newest
entry listed (the others say ``content_repeated``). The contents of one reply add up to
at most ``policy.budget.REPLY_BUDGET_CHARS``; entries past it are left out (``truncated``).
An erased memory keeps only the record that it was erased: no content, actor or reason.

By key: the memories holding the key in the scope read (current project and global by
default, or the ``project`` given), across all of their versions.

Only the memories the calling agent reads (``scope.agent``): another agent's private
memory has no history for it, by id or by key.
"""

from __future__ import annotations

from dataclasses import dataclass

from memvault.clock import to_iso
from memvault.policy.budget import CONTENT_BUDGET_CHARS, REPLY_BUDGET_CHARS
from memvault.policy.text import cut as cut_text
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument, NotFound
from memvault.service.memory.history_models import HistoryItem, HistoryResult
from memvault.service.memory.models import Scope
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.storage.facts import CONSOLIDATED_FROM, HistoryEntry
from memvault.storage.history import HistoryStore

MAX_LIMIT = 100

ACTION_WORDS = {"add": "added", "reinforce": "reinforced", "supersede": "superseded", "delete": "forgotten",
                "evict": "evicted", "expire": "expired", "purge": "purged", "restore": "restored"}
"""Stored ``memory_history.action`` -> the word the reply uses; other actions are shown as stored."""


@dataclass
class HistoryArgs:
    """Arguments of ``history`` as the tool received them (validated here)."""

    id: str | None = None
    key: str | None = None
    limit: int = 20
    project: str | None = None  # as given; the scope already holds the project it names


async def history(rt: Runtime, scope: Scope, args: HistoryArgs) -> HistoryResult:
    """History of memory ``args.id`` (any project of the user) or of key ``args.key`` (in
    ``scope.projects_read``), newest first, at most ``args.limit`` (1..100) entries.

    Raises InvalidArgument (neither or both of id and key, a bad id, key or limit) or
    NotFound (no history of that id or key for this user).
    """
    if (args.id is None) == (args.key is None):
        raise InvalidArgument("history needs exactly one of id (one memory) or key (every memory that held it); "
                              f"got {'both' if args.id is not None else 'neither'}")
    if args.id is not None and args.project is not None:
        raise InvalidArgument("project applies to key only: history(id=...) reads the memory in whichever "
                              "project it is")
    if isinstance(args.limit, bool) or not isinstance(args.limit, int) or not 1 <= args.limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}, got {v.shown(args.limit)}")
    store = HistoryStore.on(rt.facts)
    user = scope.user_id
    if args.id is not None:
        mid = v.check_ids("id", [args.id])[0]
        found, total = await store.entries(user, memory_id=mid, limit=args.limit, reader=scope.agent)
        if not found:
            raise NotFound(f"no memory with id {mid} for this user (ids are the ones remember and recall return)")
        scope = make_scope(user, found[0][1], "argument", include_global=False, agent=scope.agent)
    else:
        key = v.check_key(args.key)
        assert key is not None
        found, total = await store.entries(user, key=key, projects=scope.projects_read, limit=args.limit,
                                           reader=scope.agent)
        if not found:
            where = ", ".join(repr(p) if p else "global" for p in scope.projects_read)
            raise NotFound(f"no memory of this user has held key {key!r} in {where}; pass project to look elsewhere")
    items, cut = _items(found, CONTENT_BUDGET_CHARS, REPLY_BUDGET_CHARS)
    return HistoryResult(entries=items, total=total, truncated=cut or len(items) < total, scope=scope)


def _items(entries: list[tuple[HistoryEntry, str]], per_item: int, budget: int) -> tuple[list[HistoryItem], bool]:
    """Reply items of ``entries`` (newest first) within the content budgets; (items, whether a
    content was cut). Entries whose content would pass ``budget`` are left out, with the rest."""
    items: list[HistoryItem] = []
    shown: set[str] = set()
    used, cut = 0, False
    for e, project in entries:
        snap = e.new or e.old or {}
        text = snap.get("content") if isinstance(snap.get("content"), str) else None
        repeated = text is not None and e.memory_id in shown
        content = None
        if text is not None and not repeated:
            content, was_cut = cut_text(text, per_item)
            if used + len(content) > budget:
                return items, True
            used += len(content)
            cut |= was_cut
            shown.add(e.memory_id)
        items.append(HistoryItem(
            memory_id=e.memory_id, action=ACTION_WORDS.get(e.action, e.action), at=to_iso(e.at), actor=e.actor,
            reason=e.reason, project=project, status=_text(snap.get("status")),
            key=_text(snap.get("key")), superseded_by=_text(snap.get("superseded_by")), content=content,
            content_truncated=content is not None and content != text, content_repeated=repeated,
            consolidated_from=_ids(snap.get(CONSOLIDATED_FROM)),
            visibility=None if not snap else "private" if snap.get("visibility") == "private" else "shared",
        ))
    return items, cut


def _ids(value: object) -> list[str] | None:
    return [i for i in value if isinstance(i, str)] if isinstance(value, list) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
