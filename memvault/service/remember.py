"""The ``remember`` handler: validate -> policy -> embed -> SQLite (pending) -> index -> indexed.

Policies applied here (DESIGN "Policies"): secrets refused, importance scored and
low-value writes declined unless forced, TTL resolved, exact and near duplicates
reinforced, same ``key`` or explicit ``supersedes`` superseded, per-scope capacity
enforced by evicting the lowest retention scores.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from memvault.service.errors import InvalidArgument

from memvault.clock import to_iso
from memvault.policy.dedup import is_near_duplicate
from memvault.policy.importance import score_importance
from memvault.policy.ranking import pick_evictions
from memvault.policy.secrets import find_secret
from memvault.policy.text import content_hash, validate_content
from memvault.policy.ttl import resolve_expiry
from memvault.storage.facts import MemoryRow
from memvault.service import validation as v
from memvault.service.indexing import embed_passages, index_rows, scope_filter, unindex_rows
from memvault.service.models import RememberResult, Scope
from memvault.service.runtime import MEMORY_COLLECTION, Runtime


@dataclass
class RememberArgs:
    """Arguments of ``remember`` as the tool received them (validated here)."""

    content: str
    kind: str = "fact"
    key: str | None = None
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    ttl_days: float | None = None
    supersedes: list[str] = field(default_factory=list)
    source: str | None = None
    force: bool = False
    created_at: float | None = None  # bench/import only: the memory's own time (unix s)


async def remember(rt: Runtime, scope: Scope, args: RememberArgs) -> RememberResult:
    """Store one memory in ``scope.project`` for ``scope.user_id``.

    Returns status stored | reinforced | superseded | declined with a reason.
    Raises InvalidArgument for invalid arguments (nothing is written then).
    """
    s = rt.settings
    try:
        content = validate_content(args.content, s.policies.max_content_chars)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    kind = v.check_kind(args.kind)
    key = v.check_key(args.key)
    tags = v.check_tags(args.tags)
    importance_arg = v.check_unit("importance", args.importance)
    ttl_days = v.check_ttl(args.ttl_days)
    supersedes = v.check_ids("supersedes", args.supersedes)
    source = v.check_source(args.source)

    def declined(reason: str, importance: float | None = None) -> RememberResult:
        return RememberResult(id=None, status="declined", reason=reason, importance=importance, scope=scope)

    # Every text that would reach the disk is checked, not only the content.
    secret = next((f for f in map(find_secret, [content, key or "", source or "", scope.project, *tags]) if f),
                  None)
    if secret is not None:
        return declined(f"{secret.reason} memvault never stores secrets; store where to find it instead "
                        "(e.g. 'the API key is in 1Password under billing').")

    if importance_arg is not None:
        importance = importance_arg
    else:
        scored = score_importance(content, kind, key)
        importance = round(scored.value, 3)
        if importance < s.policies.importance_threshold and not args.force:
            why = "; ".join(scored.reasons) or "little lasting information"
            return declined(
                f"importance {importance:.2f} is below the threshold {s.policies.importance_threshold:.2f} ({why}); "
                "call again with force=true to store it anyway",
                importance,
            )

    emb, vectors = await rt.started()
    user, project = scope.user_id, scope.project
    chash = content_hash(content)

    async with rt.write_lock:
        now = rt.clock.now()
        expires_at = resolve_expiry(now, ttl_days, s.policies.default_ttl_days(kind))

        # 1. exact duplicate in the same scope and kind -> reinforce
        dup = await rt.facts.find_by_hash(user, project, kind, chash, now)
        if dup is not None and not supersedes:
            await rt.facts.reinforce(dup, importance=importance, now=now, actor=source,
                                     reason="same content written again")
            return RememberResult(id=dup.id, status="reinforced", importance=dup.importance,
                                  reason="the same memory already exists in this scope; it was reinforced",
                                  expires_at=to_iso(dup.expires_at), scope=scope)

        dense = (await embed_passages(rt, [content]))[0]

        # 2. what this write supersedes: same key in this scope, plus explicit ids of this user
        old_rows: list[MemoryRow] = []
        if key is not None:
            old_rows += await rt.facts.active_by_key(user, project, key, now)
        if supersedes:
            found = await rt.facts.select(user, ids=supersedes, statuses=("active",), now=now)
            missing = set(supersedes) - {r.id for r in found}
            if missing:
                raise InvalidArgument(
                    f"supersedes names ids that are not active memories of this user: {', '.join(sorted(missing))}"
                )
            old_rows += [r for r in found if r.id not in {o.id for o in old_rows}]

        # 3. near duplicate (same scope and kind): calibrated cosine AND same content words
        if not old_rows:
            flt = scope_filter(user, [project], now, kinds=[kind])
            hits = await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, dense.tolist(), flt, 3)
            close = {h.id: h.score for h in hits if h.score >= s.policies.dedup_threshold}
            for near in await rt.facts.get(close):
                cos = close[near.id]
                if near.status == "active" and near.key in (None, key) and \
                        is_near_duplicate(content, near.content, cos, s.policies.dedup_threshold):
                    row = await rt.facts.reinforce(near, importance=importance, now=now, actor=source,
                                                   reason=f"near duplicate (cosine {cos:.3f})")
                    return RememberResult(
                        id=row.id, status="reinforced", importance=row.importance,
                        reason=f"this restates an existing memory (cosine {cos:.3f}); it was reinforced. "
                        "Pass supersedes=[id] to replace it instead",
                        expires_at=to_iso(row.expires_at), scope=scope)

        row = MemoryRow(
            id=str(uuid.uuid4()), user_id=user, project=project, kind=kind, key=key, content=content,
            tags=tags, importance=importance, source=source,
            created_at=args.created_at or now, updated_at=now, last_accessed_at=args.created_at or now,
            expires_at=expires_at, content_hash=chash, embedding_model=emb.model_id,
        )
        await rt.facts.add(row, supersede=old_rows, actor=source)
        await index_rows(rt, [row], dense=dense[None, :])
        await unindex_rows(rt, old_rows)

        # 4. capacity: evict the lowest retention scores in this scope
        evicted = await _enforce_capacity(rt, user, project, keep=row.id, now=now)

    superseded_ids = [r.id for r in old_rows]
    if superseded_ids:
        why = f"replaces the memory with key {key!r}" if key else "replaces the memories named in supersedes"
        status, reason = "superseded", f"stored; it {why} (kept in history, no longer recalled)"
    else:
        status, reason = "stored", "stored"
    if evicted:
        reason += f"; the scope was over its capacity of {s.policies.capacity_per_scope}, so {len(evicted)} " \
                  "least-retained memories were removed"
    return RememberResult(id=row.id, status=status, reason=reason, importance=importance,
                          expires_at=to_iso(expires_at), superseded_ids=superseded_ids,
                          evicted_ids=evicted, scope=scope)


async def _enforce_capacity(rt: Runtime, user: str, project: str, *, keep: str, now: float) -> list[str]:
    """Soft-delete the lowest-retention memories over the scope's cap; returns their ids."""
    cap = rt.settings.policies.capacity_per_scope
    count = await rt.facts.count_active(user, project, now)
    if count <= cap:
        return []
    rows = await rt.facts.select(user, projects=[project], now=now)
    candidates = [(r.id, r.importance, r.last_accessed_at) for r in rows if r.id != keep]
    ids = set(pick_evictions(candidates, count - cap, now, rt.settings.ranking.half_life_days))
    victims = [r for r in rows if r.id in ids]
    await rt.facts.set_status(victims, "deleted", action="evict", now=now, actor="memvault:capacity",
                              reason=f"scope over capacity {cap}")
    await unindex_rows(rt, victims)
    return [r.id for r in victims]
