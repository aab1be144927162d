"""The ``restore`` handler: bring back a forgotten (soft), evicted or superseded memory.

Rules:

- Only the caller's own memories, in any of the user's projects (as ``forget`` by ids),
  and of those only the ones the calling agent reads: another agent's private memory
  is not found.
- An active memory that merged others (``consolidate``, or ``remember`` superseding two or
  more ids) undoes that merge: the members come back, the merged memory is retired
  (``service.memory.consolidate.undo_merge``).
- An erased memory (``forget(hard=true)``, or expired and swept) cannot come back: its
  text is gone; the error says so.
- An active memory is refused (nothing to restore), and so is one whose TTL has passed:
  the sweep erases it, and giving it a fresh TTL would keep what the user let expire.
  Storing its text again with ``remember`` is the way to keep it.
- The same text already active in the memory's project (same content words, a
  compatible key, the same slot owner, as ``remember`` judges duplicates): refused,
  naming that memory.
- The memory held a ``key`` that another active memory of its slot owner (the shared
  memories, or the same agent's private ones) holds now: the restored one
  takes the slot back and the holder becomes superseded by it (one active memory per
  key per scope); the reply lists it in ``superseded_ids``. A memory that replaced it
  through ``supersedes`` (no key) stays active; the reply says so.
- The scope must have room (``policies.capacity_per_scope``): nothing is evicted to
  make room for a restore.

Like every write: one SQLite transaction (row pending, ``restore`` history entry with
the client as actor, displaced rows superseded), then the index, under ``write_lock``.
The restored memory counts as accessed now (recency).
"""

from __future__ import annotations

from memvault.clock import to_iso
from memvault.policy.dedup import content_words
from memvault.policy.text import preview
from memvault.service import validation as v
from memvault.service.errors import Conflict, NotFound
from memvault.service.indexing import index_rows, unindex_rows
from memvault.service.memory.consolidate import undo_merge
from memvault.service.memory.history_models import RestoreResult
from memvault.service.memory.models import Scope
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.storage.facts import MEMORY_STATUSES, MemoryRow
from memvault.storage.history import HistoryStore

ERASING_ACTIONS = {"purge": "erased by forget(hard=true)", "expire": "erased when its TTL ran out"}


async def restore(rt: Runtime, user_id: str, memory_id: str, *, actor: str | None,
                  reader: str | None = None) -> RestoreResult:
    """Make memory ``memory_id`` of ``user_id`` active again (re-indexed); see the module rules.

    ``actor``: who asked (the client's name), recorded in the history. ``reader``: the
    agent asking (it restores shared memories and its own private ones); None: the user,
    who may restore any. Raises
    InvalidArgument (not an id), NotFound (no such memory of this user), Conflict (erased,
    active, expired, its text active elsewhere, the scope full); nothing is written then.
    """
    mid = v.check_ids("id", [memory_id])[0]
    await rt.started()
    async with rt.write_lock:
        now = rt.clock.now()
        found = await rt.facts.select(user_id, ids=[mid], statuses=MEMORY_STATUSES, reader=reader)
        if not found:
            raise await _missing(rt, user_id, mid, reader)
        row = found[0]
        if row.expires_at is not None and row.expires_at <= now:
            raise Conflict(f"memory {mid} cannot be restored: its TTL ran out at {to_iso(row.expires_at)}, so it "
                           "is erased at the next sweep; store its text again with remember to keep it")
        if row.status == "active":
            undone = await undo_merge(rt, row, now, actor=actor)
            if undone is not None:
                return undone
            raise Conflict(f"memory {mid} is already active; nothing to restore")
        await _refuse_duplicate(rt, row, now)
        holders = [r for r in await rt.facts.active_by_key(user_id, row.project, row.key, now,
                                                            private_to=row.private_to) if r.id != row.id] \
            if row.key is not None else []
        cap = rt.settings.policies.capacity_per_scope
        if await rt.facts.count_active(user_id, row.project, now) - len(holders) + 1 > cap:
            raise Conflict(f"memory {mid} cannot be restored: its project holds {cap} active memories, its "
                           "capacity; forget some first")
        previous, replaced_by = row.status, row.superseded_by
        reason = _reason(row, holders, replaced_by)
        await rt.facts.restore([row], now=now, actor=actor, reason=reason, displace=[(h, row.id) for h in holders])
        await index_rows(rt, [row])
        await unindex_rows(rt, holders)
    scope: Scope = make_scope(user_id, row.project, "argument", include_global=False, agent=reader)
    return RestoreResult(id=row.id, previous_status=previous, content_preview=preview(row.content),  # type: ignore[arg-type]
                         kind=row.kind, key=row.key, expires_at=to_iso(row.expires_at),
                         superseded_ids=[h.id for h in holders], reason=reason, scope=scope)


async def _missing(rt: Runtime, user_id: str, mid: str, reader: str | None) -> Exception:
    """The error for an id with no row the reader reads: erased (its history says how) or unknown to this user."""
    last = await HistoryStore.on(rt.facts).last(user_id, mid, reader=reader)
    if last is not None and last.action in ERASING_ACTIONS:
        return Conflict(f"memory {mid} was {ERASING_ACTIONS[last.action]} on {to_iso(last.at)}; its text is gone "
                        "and it cannot be restored")
    return NotFound(f"no memory with id {mid} for this user (ids are the ones remember, recall and history return)")


async def _refuse_duplicate(rt: Runtime, row: MemoryRow, now: float) -> None:
    """Raise Conflict when another active memory of the row's project says the same (same
    content words, a compatible key): restoring would make it twice."""
    same = await rt.facts.select(row.user_id, projects=[row.project], content_hash=row.content_hash, now=now)
    words = await rt.run_sync(content_words, row.content)
    for other in same:
        if other.id == row.id or other.private_to != row.private_to \
                or not (other.key is None or row.key is None or other.key == row.key):
            continue
        if await rt.run_sync(content_words, other.content) == words:
            raise Conflict(f"memory {row.id} was not restored: the same text is active as memory {other.id}; "
                           "use that one (remember with a key gives it the key)")


def _reason(row: MemoryRow, holders: list[MemoryRow], replaced_by: str | None) -> str:
    """The reply's (and the history's) sentence for a restore of ``row``."""
    was = "forgotten or evicted" if row.status == "deleted" else "superseded"
    parts = [f"restored (it was {was}); it is recalled again"]
    if holders:
        ids = ", ".join(h.id for h in holders)
        parts.append(f"it takes key {row.key!r} back: {ids} held it and is now superseded by it (kept in history)")
    elif replaced_by is not None:
        parts.append(f"memory {replaced_by}, which had replaced it, stays as it is")
    return "; ".join(parts)
