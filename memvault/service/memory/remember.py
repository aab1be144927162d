"""The ``remember`` handler: validate -> policy -> embed -> SQLite (pending) -> index -> indexed.

Policies applied here: secrets refused, importance scored and
low-value writes declined unless forced, TTL resolved, exact and near duplicates
reinforced (taking the write's key, tags, explicit TTL and supersessions), same ``key``
or explicit ``supersedes`` superseded, per-scope capacity enforced by evicting the
lowest retention scores. A write naming two or more memories in ``supersedes`` merges
them: its history entry names them (``consolidated_from``, as ``consolidate`` records),
so ``restore`` of the written memory undoes the merge.

Visibility: a ``shared`` memory is read by every agent (client) of the user, a
``private`` one only by the agent that wrote it (``scope.agent``). Keys and duplicates are
judged within one slot owner: the shared memories, or one agent's private ones. So an
agent's private ``editor`` and the shared ``editor`` are two slots, both read by that
agent (each reply item says its visibility); a write replaces, reinforces or merges
only with memories of its own owner. ``supersedes`` may name any memory the agent reads.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from memvault.clock import to_iso
from memvault.policy.dedup import DEDUP_THRESHOLD, is_near_duplicate, restates_exactly
from memvault.policy.importance import ImportanceScore, score_importance
from memvault.policy.ranking import HALF_LIFE_DAYS, pick_evictions
from memvault.policy.text import content_hash, preview, validate_content
from memvault.policy.ttl import resolve_expiry
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from memvault.service.filters import scope_filter
from memvault.service.indexing import embed_memories, index_rows, memory_payload, unindex_rows
from memvault.service.memory.models import RememberResult, Scope
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.secret_scan import find_secret
from memvault.storage.facts import MemoryRow

if TYPE_CHECKING:
    from memvault.policy.secrets import SecretFinding


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
    visibility: str = "shared"
    created_at: float | None = None  # bench/import only: the memory's own time (unix s)


async def remember(rt: Runtime, scope: Scope, args: RememberArgs) -> RememberResult:
    """Store one memory in ``scope.project`` for ``scope.user_id``.

    Returns status stored | reinforced | superseded | declined with a reason. A write that
    repeats an existing memory (same content, or a near duplicate) reinforces that memory
    and applies the write's key, tags, explicit TTL and ``supersedes`` to it, so whichever
    path is taken the scope ends with one active memory for that content; a memory named
    in ``supersedes`` is replaced, never reinforced. ``args.visibility``: see the module
    docstring; the writer is ``scope.agent``.
    Raises InvalidArgument for invalid arguments, or a private memory without an agent
    (nothing is written then).
    """
    s = rt.settings
    # Secrets first, before any format check, so that a token pasted into a key, a tag or a
    # source is declined as a secret (never quoted by a format error). Sizes cut the scan.
    # A call refused for its size (content, tag count) is refused before any scan, as before.
    sized = (not isinstance(args.content, str) or len(args.content) <= s.policies.max_content_chars) \
        and (not isinstance(args.tags, list) or len(args.tags) <= v.MAX_TAGS)
    early = [t for t in (args.key, args.source, *(args.tags or ())) if isinstance(t, str) and len(t) <= _EARLY_SCAN_CHARS]
    if early and sized:
        early_secret = await rt.run_sync(_first_found, early)
        if early_secret is not None:
            return RememberResult(id=None, status="declined", scope=scope, importance=None,
                                  reason=f"{early_secret.reason} memvault never stores secrets, not even with force "
                                         "(e.g. remember 'the API key is in 1Password under billing').")
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
    visibility = v.check_visibility(args.visibility)
    agent = scope.agent or None
    if visibility == "private" and agent is None:
        raise InvalidArgument("visibility 'private' needs an agent to belong to, and this call has none (the client "
                              "sent no name and MEMVAULT_AGENT_ID is not set); use visibility 'shared', or set "
                              "MEMVAULT_AGENT_ID for this client")
    owner = agent if visibility == "private" else None  # the slot owner (None: the shared memories)

    def declined(reason: str, importance: float | None = None) -> RememberResult:
        return RememberResult(id=None, status="declined", reason=reason, importance=importance, scope=scope)

    # Every text that would reach the disk is checked, not only the content, and each
    # argument as given too: checking may fold case or drop characters that a token's
    # shape needs (hf_…, SG.…, AKIA…). Both scans cost tens of milliseconds on a long
    # content: worker thread.
    # The project only when a person named it (an argument or MEMVAULT_PROJECT): one memvault
    # derived from a folder (``local:<name>-<hash>``) or a remote is no one's secret.
    typed_project = scope.project if scope.source in ("argument", "settings") else ""
    texts = [content, key or "", source or "", typed_project, *tags]
    texts += [t for t in (args.key, args.source, *args.tags) if isinstance(t, str) and t not in texts]
    secret, scored = await rt.run_sync(_screen, texts, content, kind, key, importance_arg is None)
    if secret is not None:
        return declined(f"{secret.reason} memvault never stores secrets, not even with force "
                        "(e.g. remember 'the API key is in 1Password under billing').")

    if importance_arg is not None:
        importance = importance_arg
    else:
        # _screen scores whenever no importance was given and no secret was found (returned above).
        assert scored is not None
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

        # 1. what this write supersedes: explicit ids of this user, plus the same key in this scope
        named: list[MemoryRow] = []
        if supersedes:
            named = await rt.facts.select(user, ids=supersedes, statuses=("active",), now=now, reader=scope.agent)
            missing = set(supersedes) - {r.id for r in named}
            if missing:
                raise InvalidArgument(
                    f"supersedes names ids that are not active memories of this user: {', '.join(sorted(missing))}"
                )
        keyed = await rt.facts.active_by_key(user, project, key, now, private_to=owner) if key is not None else []
        old_rows = list({r.id: r for r in [*keyed, *named]}.values())
        explicit_expiry = expires_at if ttl_days is not None else None
        # Two or more memories named in supersedes are merged into this write: its history names them.
        merges = list(supersedes) if len(named) >= 2 else []  # in the order given
        write = _Write(importance=importance, key=key, tags=tags, expires_at=explicit_expiry, source=source,
                       replaces=old_rows, merges=merges)

        # 2. exact duplicate (same scope and kind, a compatible key, not named in supersedes)
        # The hash folds case and spacing only; the same content words decide ("100 Mb" is not "100 MB").
        same = await rt.facts.active_by_hash(user, project, kind, chash, now, private_to=owner)
        if same:
            same = await rt.run_sync(_restating, content, same)
        dup = _pick(same, key, set(supersedes))
        if dup is not None:
            return await _absorb(rt, scope, dup, write, now,
                                 why="the same memory already exists in this scope", hint="")
        elsewhere = sorted({r.key for r in same if r.key is not None and r.key != key})

        windows = (await embed_memories(rt, [content]))[0]  # one row unless the content is long

        # 3. near duplicate (same scope and kind): calibrated cosine AND same content words
        flt = scope_filter(user, [project], now, kinds=[kind], private_to=owner, shared_only=owner is None)
        hits = await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, windows[0].tolist(), flt, 3)
        close = {h.id: h.score for h in hits if h.score >= DEDUP_THRESHOLD and h.id not in supersedes}
        rows = sorted((r for r in await rt.facts.get(close)
                       if r.status == "active" and r.private_to == owner and _compatible(r.key, key)),
                      key=lambda r: -close[r.id])
        near = None
        if rows:
            near = await rt.run_sync(_first_near_duplicate, content, [(r, close[r.id]) for r in rows],
                                     DEDUP_THRESHOLD)
        if near is not None:
            return await _absorb(rt, scope, near, write, now,
                                 why=f"this restates an existing memory (cosine {close[near.id]:.3f})",
                                 hint="; pass supersedes=[id] to replace it instead")

        row = MemoryRow(
            id=str(uuid.uuid4()), user_id=user, project=project, kind=kind, key=key, content=content,
            tags=tags, importance=importance, source=source,
            created_at=args.created_at or now, updated_at=now, last_accessed_at=args.created_at or now,
            expires_at=expires_at, content_hash=chash, embedding_model=emb.model_id,
            visibility=visibility, agent=agent,
        )
        # A full index disk refuses the write here, before SQLite keeps a row the index cannot take.
        await rt.run_sync(vectors.check_room, MEMORY_COLLECTION, len(windows))
        await rt.facts.add(row, supersede=old_rows, actor=source, consolidated_from=merges)
        await index_rows(rt, [row], dense=[windows])
        await unindex_rows(rt, old_rows)

        # 4. capacity: evict the lowest retention scores in this scope
        evicted = await _enforce_capacity(rt, user, project, keep=row.id, now=now)

    superseded_ids = [r.id for r in old_rows]
    status: Literal["stored", "superseded"]
    if superseded_ids:
        status = "superseded"
        reason = f"stored; it {_replaces(key, named, keyed)} (kept in history, no longer recalled)"
    else:
        status, reason = "stored", "stored"
    if elsewhere:
        reason += (f"; the same text is also stored under key {', '.join(map(repr, elsewhere))}, "
                   f"which stays as it is (key {key!r} is a slot of its own)")
    if evicted:
        reason += f"; the scope was over its capacity of {s.policies.capacity_per_scope}, so {len(evicted)} " \
                  "least-retained memories were removed"
    # Another agent's private memories count, but are not named (their ids would lead nowhere).
    return RememberResult(id=row.id, status=status, reason=reason, importance=importance,
                          expires_at=to_iso(expires_at), superseded_ids=superseded_ids,
                          evicted_ids=[r.id for r in evicted if r.readable_by(scope.agent)], scope=scope)


_EARLY_SCAN_CHARS = 1_000
"""Longest key, source or tag scanned for a secret before the format checks (longer ones
are refused for their size, which quotes nothing)."""


def _first_found(texts: list[str]) -> SecretFinding | None:
    """Blocking (worker thread): the first secret in ``texts``."""
    return next((f for f in map(find_secret, texts) if f), None)


def _screen(texts: list[str], content: str, kind: str, key: str | None, score: bool
            ) -> tuple[SecretFinding | None, ImportanceScore | None]:
    """Blocking (worker thread): the first secret found in ``texts``, and the importance score
    of ``content`` when ``score`` (skipped when a secret was found)."""
    secret = next((f for f in map(find_secret, texts) if f), None)
    scored = score_importance(content, kind, key) if score and secret is None else None
    return secret, scored


def _compatible(existing: str | None, key: str | None) -> bool:
    """Whether a memory holding ``existing`` may stand for a write with ``key``: same slot or no slot."""
    return key is None or existing is None or existing == key


def _pick(rows: list[MemoryRow], key: str | None, named: set[str]) -> MemoryRow | None:
    """The duplicate a write with ``key`` reinforces: one holding that key, else an unkeyed one
    (a write without a key takes any); rows named in supersedes are being replaced, not reinforced."""
    rows = [r for r in rows if r.id not in named and _compatible(r.key, key)]
    return next((r for r in rows if r.key == key), None) or next(iter(rows), None)


def _restating(content: str, rows: list[MemoryRow]) -> list[MemoryRow]:
    """Blocking (worker thread): the rows whose content has the content words and the meaning
    marks of ``content`` (``dedup.restates_exactly``)."""
    return [r for r in rows if restates_exactly(content, r.content)]


def _first_near_duplicate(content: str, rows: list[tuple[MemoryRow, float]], threshold: float
                          ) -> MemoryRow | None:
    """Blocking (worker thread): the first of ``rows`` (with their cosines) that ``content`` restates."""
    return next((r for r, cos in rows if is_near_duplicate(content, r.content, cos, threshold)), None)


@dataclass
class _Write:
    """What a write asks of the memory that stands for it (see ``_absorb``)."""

    importance: float
    key: str | None
    tags: list[str]
    expires_at: float | None  # from an explicit ttl_days only
    source: str | None
    replaces: list[MemoryRow]  # named in supersedes, or holding the key
    merges: list[str] = field(default_factory=list)  # ids named in supersedes when two or more: a merge


def _replaces(key: str | None, named: list[MemoryRow], keyed: list[MemoryRow]) -> str:
    parts = []
    if keyed:
        parts.append(f"replaces the memory with key {key!r}")
    if named:
        parts.append("replaces the memories named in supersedes")
    return " and ".join(parts) or "replaces nothing"


async def _absorb(rt: Runtime, scope: Scope, row: MemoryRow, w: _Write, now: float, *, why: str,
                  hint: str) -> RememberResult:
    """Reinforce ``row`` for a write that repeats it, applying the write's key, tags, explicit TTL
    and supersessions to it; its index payload follows. Returns the reply (reinforced | superseded)."""
    old = [r for r in w.replaces if r.id != row.id]
    took_key = w.key is not None and row.key != w.key
    merged = list(dict.fromkeys([*row.tags, *w.tags]))
    dropped = len(merged) - v.MAX_TAGS
    merged = merged[: v.MAX_TAGS]
    added_tags = [t for t in merged if t not in row.tags]
    done = [why, f"it was reinforced and keeps its wording ({preview(row.content)!r})"]
    if took_key:
        done.append(f"it now holds key {w.key!r}")
    if added_tags:
        done.append(f"tags merged (added {', '.join(map(repr, added_tags))})")
    if dropped > 0:
        done.append(f"{dropped} tag(s) not added: a memory holds at most {v.MAX_TAGS}")
    if w.expires_at is not None:
        done.append(f"it now expires at {to_iso(w.expires_at)} (the ttl_days given)")
    if old:
        how = [f"the one holding key {w.key!r}" if w.key is not None and r.key == w.key else "named in supersedes"
               for r in old]
        done.append(f"it replaces {len(old)} older memor{'y' if len(old) == 1 else 'ies'} "
                    f"({', '.join(dict.fromkeys(how))}; kept in history, no longer recalled)")
    reason = "; ".join(done) + (hint if not old else "")
    row = await rt.facts.reinforce(row, importance=w.importance, now=now, actor=w.source, reason=reason,
                                   key=w.key, tags=merged, expires_at=w.expires_at, supersede=old,
                                   consolidated_from=w.merges)
    if row.index_state == "pending":  # key, tags or expiry changed: the engine filters on them
        _, vectors = await rt.ready()
        await rt.run_sync(vectors.set_payload, MEMORY_COLLECTION, [row.id], memory_payload(row))
        await rt.facts.mark_indexed([row.id])
    await unindex_rows(rt, old)
    return RememberResult(id=row.id, status="superseded" if old else "reinforced", importance=row.importance,
                          reason=reason, expires_at=to_iso(row.expires_at), superseded_ids=[r.id for r in old],
                          scope=scope)


# Candidates fetched beyond the excess, so that rounding in the SQL ordering (log space)
# cannot change which memories ``pick_evictions`` chooses among near ties.
EVICTION_MARGIN = 8


async def _enforce_capacity(rt: Runtime, user: str, project: str, *, keep: str, now: float) -> list[MemoryRow]:
    """Soft-delete the lowest-retention memories over the scope's cap (every agent's); returns them.

    Reads a bound of the count (``FactStore.count_active_bound``: no visit of the scope's rows
    while the scope is clearly under its cap), the exact count when the bound reaches the
    cap, and when over the cap only the few lowest-retention rows (ordered in SQL).
    """
    cap = rt.settings.policies.capacity_per_scope
    if await rt.facts.count_active_bound(user, project, now) <= cap:
        return []
    count = await rt.facts.count_active(user, project, now)
    if count <= cap:
        return []
    hl = HALF_LIFE_DAYS
    rows = await rt.facts.lowest_retention(user, project, now, limit=count - cap + EVICTION_MARGIN,
                                           half_life_days=hl, exclude=keep)
    ids = set(pick_evictions([(r.id, r.importance, r.last_accessed_at) for r in rows], count - cap, now, hl))
    victims = [r for r in rows if r.id in ids]
    await rt.facts.set_status(victims, "deleted", action="evict", now=now, actor="memvault:capacity",
                              reason=f"scope over capacity {cap}")
    await unindex_rows(rt, victims)
    return victims
