"""The ``consolidate`` handler: find memories of one scope that restate each other; merge them; undo.

Finding (``policy.consolidation``): the newest ``SCAN_MAX`` active memories of the scope
are compared by the cosine of their stored vectors (pairs at or above
``policy.consolidation.MIN_COSINE``, at most ``NEIGHBOURS`` per memory) and the word
guard; clusters are grown by complete linkage. A proposal keeps the most specific
member's text, the highest importance and confidence, every member's tags and sources,
the earliest creation time, the latest expiry (none when a member has none), the sum of
the access counts and the latest access.

Applying (``dry_run=false``): under ``write_lock``, one SQLite transaction writes one
memory per proposal listed in the reply (its ``add`` history names the members,
``consolidated_from``) and marks the members superseded by it; nothing is deleted.
Then the index: merged memories in, members out. ``apply_chosen`` (the web page) writes
only the proposals a person chose, found again under the lock: a chosen proposal whose
members changed since it was shown is refused, never applied as it now stands.

Undo (``restore`` of a merged memory, ``undo_merge``): the members still superseded by
it come back active and the merged memory is retired (deleted, soft) when the merge
created it; a memory that absorbed the members through ``remember`` (reinforced) stays.
One transaction, then the index. ``undo_merge_of`` (the web page) undoes by id and only
undoes: a memory that is not active, or merged nothing, is refused rather than restored.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

import numpy as np

from memvault.clock import to_iso
from memvault.policy.budget import CONTENT_BUDGET_CHARS, REPLY_BUDGET_CHARS, whole_within_budget
from memvault.policy.consolidation import MIN_COSINE
from memvault.policy.text import cut, preview
from memvault.service import validation as v
from memvault.service.errors import Conflict, InvalidArgument, NotFound
from memvault.service.indexing import embed_memories, index_rows, unindex_rows
from memvault.service.memory.consolidate_models import ConsolidateResult, Proposal, ProposalMember
from memvault.service.memory.history_models import RestoreResult
from memvault.service.memory.models import Scope
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.scope.project import make_scope
from memvault.storage.facts import CONSOLIDATED_FROM, MEMORY_STATUSES, MemoryRow

log = logging.getLogger(__name__)

MAX_LIMIT = 100
"""Most proposals one call lists (and applies)."""
SCAN_MAX = 5_000
"""Active memories compared per run: the newest of the scope (the pairwise cosines are quadratic)."""
NEIGHBOURS = 16
"""Closest memories looked at per memory."""
MAX_MEMBERS = 20
"""Members of one proposal at most; a larger cluster is merged over several runs."""
PREVIEW_CHARS = 80
"""Length of each member's preview in a proposal."""
SYSTEM_ACTOR = "memvault:consolidate"
"""History actor of the periodic job."""

HINT_PROPOSED = ("Review the proposals. Apply them with consolidate(dry_run=false), or write a better merged "
                 "sentence yourself and store it with remember(content=<merged>, supersedes=[member ids]); "
                 "restore(<merged id>) undoes a merge.")
HINT_APPLIED = "Applied; restore(<merged_id>) undoes a merge (the members come back, the merged memory is retired)."
HINT_NONE = "No memories of this scope restate each other."


@dataclass
class ConsolidateArgs:
    """Arguments of ``consolidate`` as the tool received them (validated here)."""

    dry_run: bool = True
    limit: int = 20
    project_given: bool = False  # the caller named the project (it must exist)


@dataclass
class _Merge:
    members: list[MemoryRow]
    kept: MemoryRow
    row: MemoryRow
    proposal: Proposal


async def consolidate(rt: Runtime, scope: Scope, args: ConsolidateArgs, *, actor: str | None) -> ConsolidateResult:
    """Proposals of merges in ``scope.project`` for ``scope.user_id``; written when ``args.dry_run`` is False.

    ``actor``: who asked (the client's name), recorded in the history. Raises
    InvalidArgument (limit not 1..100, dry_run not a boolean), NotFound (a project named
    by the caller where this user never had a memory); nothing is written then.
    """
    if isinstance(args.limit, bool) or not isinstance(args.limit, int) or not 1 <= args.limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}, got {v.shown(args.limit)}")
    if not isinstance(args.dry_run, bool):
        raise InvalidArgument(f"dry_run must be true or false, got {v.shown(args.dry_run)}")
    user, project = scope.user_id, scope.project
    await rt.started()
    if args.project_given and not await rt.facts.has_project(user, project):
        where = repr(project) if project else "the global scope ('')"
        raise NotFound(f"this user has no memories in project {where}; omit project for the current one")
    if args.dry_run:
        merges, found, scanned = await _find(rt, user, project, rt.clock.now(), args.limit, scope.agent)
    else:
        async with rt.write_lock:
            now = rt.clock.now()
            merges, found, scanned = await _find(rt, user, project, now, args.limit, scope.agent)
            await _apply(rt, merges, now, actor)
    hint = HINT_NONE if not merges else HINT_PROPOSED if args.dry_run else HINT_APPLIED
    return ConsolidateResult(applied=not args.dry_run and bool(merges), proposals=[m.proposal for m in merges],
                             clusters_found=found, scanned=scanned, truncated=len(merges) < found, hint=hint,
                             scope=scope)


async def apply_chosen(rt: Runtime, scope: Scope, chosen: list[list[str]], *, actor: str | None
                       ) -> ConsolidateResult:
    """Apply only the proposals ``chosen`` in ``scope.project``: each one a proposal's ``member_ids``.

    Under ``write_lock`` the proposals are found again (as ``consolidate`` finds them, for
    the agent ``scope.agent`` reads; None: every memory) and each chosen set of ids must be
    exactly the members of a proposal found now; then those merges are written as
    ``consolidate(dry_run=false)`` writes them (one transaction, then the index). The
    reply lists the merges written (``merged_id`` set), in the order chosen.

    Raises InvalidArgument (no proposal chosen, more than ``MAX_LIMIT``, a set of fewer than
    two ids, a bad id, an id in two sets), NotFound (no memory of this user in the project),
    Conflict (a chosen proposal no longer stands: a member was merged, forgotten or edited
    since, or its memories now group differently; the message names it); nothing is
    written then.
    """
    if not chosen:
        raise InvalidArgument("choose at least one proposal to apply (its member ids)")
    if len(chosen) > MAX_LIMIT:
        raise InvalidArgument(f"{len(chosen)} proposals chosen; at most {MAX_LIMIT} per call")
    wanted = [v.check_ids("member_ids", ids) for ids in chosen]
    seen: set[str] = set()
    for ids in wanted:
        if len(set(ids)) < 2:
            raise InvalidArgument(f"a proposal merges at least two memories; got {v.shown(ids)}")
        if seen & set(ids):
            raise InvalidArgument(f"memory {sorted(seen & set(ids))[0]} is in two chosen proposals; "
                                  "each memory is merged once")
        seen |= set(ids)
    user, project = scope.user_id, scope.project
    await rt.started()
    if not await rt.facts.has_project(user, project):
        where = repr(project) if project else "the global scope ('')"
        raise NotFound(f"this user has no memories in project {where}")
    async with rt.write_lock:
        now = rt.clock.now()
        found, rows = await _every_merge(rt, user, project, now, scope.agent)
        by_members = {frozenset(m.proposal.member_ids): m for m in found}
        active = {r.id for r in rows}
        merges = []
        for ids in wanted:
            merge = by_members.get(frozenset(ids))
            if merge is None:
                raise Conflict(_stale(ids, active, found))
            merges.append(merge)
        _cut_contents(rt, merges)
        await _apply(rt, merges, now, actor)
    return ConsolidateResult(applied=True, proposals=[m.proposal for m in merges], clusters_found=len(found),
                             scanned=len(rows), truncated=False, hint=HINT_APPLIED, scope=scope)


def _stale(ids: list[str], active: set[str], found: list[_Merge]) -> str:
    """Why the chosen proposal ``ids`` is not one of the proposals ``found`` now (the Conflict's message)."""
    head = f"the proposal to merge {', '.join(ids)} no longer stands"
    tail = "; nothing was merged: look at the current proposals again"
    gone = [i for i in ids if i not in active]
    if gone:
        return (f"{head}: {', '.join(gone)} {'is' if len(gone) == 1 else 'are'} no longer active "
                f"(merged, forgotten or edited since){tail}")
    groups = [m.proposal.member_ids for m in found if set(m.proposal.member_ids) & set(ids)]
    if groups:
        return f"{head}: its memories now group as {'; '.join(', '.join(g) for g in groups)}{tail}"
    return f"{head}: its memories no longer restate each other{tail}"


async def consolidate_all(rt: Runtime) -> int:
    """Apply consolidation to every scope holding active memories (the periodic job); returns
    the number of merges written. One scope's failure is logged and the others go on."""
    done = 0
    for user, project in await rt.facts.active_scopes(rt.clock.now()):
        try:
            res = await consolidate(rt, make_scope(user, project, "settings", include_global=False),
                                    ConsolidateArgs(dry_run=False, limit=MAX_LIMIT), actor=SYSTEM_ACTOR)
        except Exception:
            log.exception("consolidation of project %r failed", project)
            continue
        done += len(res.proposals) if res.applied else 0
    if done:
        log.info("consolidated %d groups of restated memories", done)
    return done


async def _find(rt: Runtime, user: str, project: str, now: float, limit: int,
                reader: str | None) -> tuple[list[_Merge], int, int]:
    """(the merges the reply lists, clusters found in all, memories compared).

    Only memories agent ``reader`` reads (None: the user, every memory), and clusters only
    within one owner (the shared memories, or one agent's private ones): a merge never
    makes a private memory shared, nor joins two agents' private memories.
    """
    found, rows = await _every_merge(rt, user, project, now, reader)
    merges = found[:limit]
    _cut_contents(rt, merges)
    kept, _ = whole_within_budget(merges, _size, total=REPLY_BUDGET_CHARS)
    return kept, len(found), len(rows)


async def _every_merge(rt: Runtime, user: str, project: str, now: float,
                       reader: str | None) -> tuple[list[_Merge], list[MemoryRow]]:
    """(every merge found, in the order proposals are listed; the active memories compared)."""
    from memvault.policy.consolidation import find_clusters  # with its stemmers: imported when consolidating

    rows = await rt.facts.select(user, projects=[project], statuses=("active",), now=now, limit=SCAN_MAX,
                                 reader=reader)
    owners: dict[str | None, list[MemoryRow]] = {}
    for r in rows:
        owners.setdefault(r.private_to, []).append(r)
    floor = MIN_COSINE
    found: list[_Merge] = []
    for group in owners.values():
        if len(group) < 2:
            continue
        vecs = await _vectors(rt, group)
        pairs = await rt.run_sync(_close_pairs, vecs, floor)
        clusters = await rt.run_sync(find_clusters, [r.content for r in group], [r.kind for r in group],
                                     [r.key for r in group], pairs, floor)
        found.extend(_merge(group, c, now, rt) for c in clusters)
    return found, rows


def _cut_contents(rt: Runtime, merges: list[_Merge]) -> None:
    """Cut each proposal's text to ``CONTENT_BUDGET_CHARS`` (the merged row keeps it whole)."""
    for m in merges:
        m.proposal.content, m.proposal.content_truncated = cut(m.kept.content,
                                                               CONTENT_BUDGET_CHARS)


def _size(m: _Merge) -> int:
    return len(m.proposal.content) + sum(len(x.content_preview) for x in m.proposal.members)


async def _vectors(rt: Runtime, rows: list[MemoryRow]) -> np.ndarray:
    """Unit vectors (n, dim) of the rows' first windows: as stored in the index, embedded when missing."""
    emb, vectors = await rt.ready()
    out = np.zeros((len(rows), emb.dim), dtype=np.float32)
    missing: list[int] = []
    for start in range(0, len(rows), 256):
        part = rows[start:start + 256]
        got = await rt.run_sync(vectors.retrieve, MEMORY_COLLECTION, [r.id for r in part])
        for k, r in enumerate(part):
            p = got.get(r.id)
            if p is None or len(p.dense) != emb.dim:
                missing.append(start + k)
            else:
                out[start + k] = p.dense
    if missing:
        windows = await embed_memories(rt, [rows[i].content for i in missing])
        for i, w in zip(missing, windows, strict=True):
            out[i] = np.atleast_2d(w)[0]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def _close_pairs(vecs: np.ndarray, floor: float) -> dict[tuple[int, int], float]:
    """Blocking (worker thread): (i, j) -> cosine for each memory's ``NEIGHBOURS`` closest at or above ``floor``."""
    out: dict[tuple[int, int], float] = {}
    n = len(vecs)
    for start in range(0, n, 512):
        sims = vecs[start:start + 512] @ vecs.T
        for k, row in enumerate(sims):
            i = start + k
            row[i] = -1.0
            near = np.argpartition(-row, min(NEIGHBOURS, n - 1))[:NEIGHBOURS] if n > NEIGHBOURS else range(n)
            for j in near:
                if row[j] >= floor:
                    out[(min(i, int(j)), max(i, int(j)))] = float(row[j])
    return out


def _merge(rows: list[MemoryRow], cluster: list[int], now: float, rt: Runtime) -> _Merge:
    """The merged row and the proposal of one cluster (its oldest ``MAX_MEMBERS`` members)."""
    from memvault.policy.consolidation import fold, most_specific

    members = sorted((rows[i] for i in cluster), key=lambda r: (r.created_at, r.id))[:MAX_MEMBERS]
    kept = members[most_specific([m.content for m in members], [fold(m.content) for m in members])]
    tags = list(dict.fromkeys(t for m in members for t in m.tags))[: v.MAX_TAGS]
    sources = list(dict.fromkeys(m.source for m in members if m.source))
    joined = "; ".join(sources)
    key = next((m.key for m in members if m.key is not None), None)
    expiries = [m.expires_at for m in members]
    row = MemoryRow(
        id=str(uuid.uuid4()), user_id=kept.user_id, project=kept.project, kind=kept.kind, key=key,
        content=kept.content, tags=tags, importance=max(m.importance for m in members),
        confidence=max(m.confidence for m in members),
        source=joined if len(joined) <= v.MAX_SOURCE_CHARS else kept.source,
        created_at=min(m.created_at for m in members), updated_at=now,
        last_accessed_at=max(m.last_accessed_at for m in members),
        access_count=sum(m.access_count for m in members),
        expires_at=None if any(e is None for e in expiries) else max(e for e in expiries if e is not None),
        content_hash=kept.content_hash, embedding_model=kept.embedding_model,
        visibility=kept.visibility, agent=kept.agent,
    )
    proposal = Proposal(
        member_ids=[m.id for m in members], kept_id=kept.id, content=kept.content, kind=row.kind, key=key,
        importance=row.importance, tags=tags, sources=sources, created_at=to_iso(row.created_at),
        expires_at=to_iso(row.expires_at),
        members=[ProposalMember(id=m.id, content_preview=preview(m.content, PREVIEW_CHARS), kind=m.kind,
                                created_at=to_iso(m.created_at)) for m in members],
        merged_id=None,
    )
    return _Merge(members, kept, row, proposal)


async def _apply(rt: Runtime, merges: list[_Merge], now: float, actor: str | None) -> None:
    """Write the merges (one transaction), then the index. Call with ``write_lock`` held."""
    if not merges:
        return
    emb, _ = await rt.ready()
    for m in merges:
        m.row.embedding_model = emb.model_id
        m.proposal.merged_id = m.row.id
    reason = "consolidated: its members restate each other (restore this memory to undo)"
    await rt.facts.consolidate([(m.row, m.members) for m in merges], now=now, actor=actor, reason=reason)
    await index_rows(rt, [m.row for m in merges])
    await unindex_rows(rt, [x for m in merges for x in m.members])


async def undo_merge_of(rt: Runtime, user_id: str, memory_id: str, *, actor: str | None) -> RestoreResult:
    """Undo the latest merge recorded on the active memory ``memory_id`` of ``user_id`` (any
    agent's: the user reads every memory), as ``restore`` of it does, under ``write_lock``.

    Raises InvalidArgument (not an id), NotFound (no such memory of this user), Conflict
    (the memory is not active or its TTL ran out, it merged no memories, or no member can
    come back: see ``undo_merge``); nothing is written then.
    """
    mid = v.check_ids("id", [memory_id])[0]
    await rt.started()
    async with rt.write_lock:
        now = rt.clock.now()
        found = await rt.facts.select(user_id, ids=[mid], statuses=MEMORY_STATUSES)
        if not found:
            raise NotFound(f"no memory with id {mid} for this user (it may have been erased)")
        row = found[0]
        if row.status != "active" or (row.expires_at is not None and row.expires_at <= now):
            state = row.status if row.status != "active" else "expired"
            raise Conflict(f"memory {mid} is {state}; only an active memory that merged others has a merge to undo")
        undone = await undo_merge(rt, row, now, actor=actor)
    if undone is None:
        raise Conflict(f"memory {mid} merged no memories; there is no merge to undo")
    return undone


async def merged_members(rt: Runtime, row: MemoryRow) -> tuple[str, list[str]] | None:
    """The latest merge recorded on ``row``: (its history action, add or reinforce; the member
    ids it names), or None when ``row`` never merged memories."""
    for entry in reversed(await rt.facts.history(row.id)):
        ids = (entry.new or {}).get(CONSOLIDATED_FROM)
        if isinstance(ids, list) and ids:
            return entry.action, [i for i in ids if isinstance(i, str)]
    return None


def _comes_back(member: MemoryRow, merged: MemoryRow, action: str, now: float) -> bool:
    """Whether a member of ``merged``'s merge is restored by its undo: still superseded by it,
    unexpired, and not holding the key of a merged memory that stays (``action`` reinforce)."""
    alive = member.expires_at is None or member.expires_at > now
    clash = action != "add" and merged.key is not None and member.key == merged.key
    return member.status == "superseded" and member.superseded_by == merged.id and alive and not clash


async def undo_merge(rt: Runtime, row: MemoryRow, now: float, *, actor: str | None) -> RestoreResult | None:
    """Undo the latest merge recorded on the active memory ``row``; None when it merged nothing.
    Call with ``write_lock`` held.

    The members still superseded by ``row`` come back active (re-indexed); ``row`` is
    retired (deleted, soft, kept in history) when the merge created it, and stays when it
    absorbed them as a repeat (``remember``). Raises Conflict when no member can come back
    (each was restored, forgotten or erased since) or the scope has no room for them;
    nothing is written then.
    """
    found = await merged_members(rt, row)
    if found is None:
        return None
    action, ids = found
    rows = {r.id: r for r in await rt.facts.get(ids) if r.user_id == row.user_id}
    back = [r for r in (rows[i] for i in ids if i in rows) if _comes_back(r, row, action, now)]
    if not back:
        raise Conflict(f"memory {row.id} merged {len(ids)} memories, but none of them is still superseded by it "
                       "(restored, forgotten or erased since); nothing to undo")
    retire = [row] if action == "add" else []
    cap = rt.settings.policies.capacity_per_scope
    if await rt.facts.count_active(row.user_id, row.project, now) + len(back) - len(retire) > cap:
        raise Conflict(f"the merge of memory {row.id} cannot be undone: its project would hold more than {cap} "
                       "active memories, its capacity; forget some first")
    left = [i for i in ids if i not in {r.id for r in back}]
    parts = [f"merge undone: {len(back)} memor{'y' if len(back) == 1 else 'ies'} restored and recalled again"]
    parts.append(f"memory {row.id} retired (forgotten, kept in history)" if retire
                 else f"memory {row.id} stays (it existed before the merge)")
    if left:
        parts.append(f"not restored (restored, forgotten, erased or expired since): {', '.join(left)}")
    reason = "; ".join(parts)
    await rt.facts.restore(back, now=now, actor=actor, reason=reason, retire=retire)
    await index_rows(rt, back)
    await unindex_rows(rt, retire)
    return RestoreResult(id=row.id, status="merge_undone", previous_status="active",
                         content_preview=preview(row.content), kind=row.kind, key=row.key,
                         expires_at=to_iso(row.expires_at), restored_ids=[r.id for r in back],
                         retired_ids=[r.id for r in retire], reason=reason,
                         scope=make_scope(row.user_id, row.project, "argument", include_global=False))
