"""The ``forget`` handler: soft delete (history kept) or hard purge (right to be forgotten).

Selectors combine with AND: ids, key, query, kinds, tags, older_than_days; at least
one is required. An agent's forget reaches only the memories it reads (shared ones and
its own private ones): another agent's private memory is not there for it, not even by
id. Ids may name any such memory of the user; the other selectors act on the
scope recall reads (current project + global unless narrowed). Every selector reaches the
whole scope, however many memories it holds. A ``query`` selector only takes matches
whose dense cosine reaches a high bar (or whose text is the query's), and lists them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memvault.policy.dedup import content_words
from memvault.policy.text import content_hash, preview
from memvault.policy.units import SECONDS_PER_DAY
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from memvault.service.filters import scope_filter
from memvault.service.indexing import best_window_cosine, embed_memories, embed_query, unindex_rows
from memvault.service.memory.models import ForgetResult, ForgottenItem, Scope
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.storage.facts import MemoryRow
from memvault.vocabulary import Kind

MAX_FORGET = 1000
QUERY_MIN_COSINE = 0.9
"""Dense cosine a ``forget(query=...)`` match must reach: restatements of one memory score above
it on multilingual-e5-small (``policy.dedup``'s measurements), related but other memories below."""
MAX_LISTED = 50  # the reply lists at most this many; count says how many were forgotten


@dataclass
class ForgetArgs:
    """Arguments of ``forget`` as the tool received them (validated here)."""

    ids: list[str] | None = None
    key: str | None = None
    query: str | None = None
    kinds: list[str] | None = None
    tags: list[str] | None = None
    older_than_days: float | None = None
    hard: bool = False
    dry_run: bool = False


async def forget(rt: Runtime, scope: Scope, args: ForgetArgs) -> ForgetResult:
    """Forget the memories the selectors pick; ``dry_run`` only lists them. Raises InvalidArgument on bad input."""
    ids = v.check_ids("ids", args.ids, filter_=True)
    key = v.check_key(args.key)
    kinds = v.check_kinds(args.kinds)
    tags = v.check_tag_filter(args.tags) or []
    query = v.check_query(args.query) if args.query is not None else None
    older_than_days = v.check_age("older_than_days", args.older_than_days)
    if not (ids or key or query or kinds or tags or older_than_days is not None):
        raise InvalidArgument("forget needs at least one selector: ids, key, query, kinds, tags or older_than_days")

    await rt.started()
    now = rt.clock.now()
    statuses = ("active", "superseded", "deleted") if args.hard else ("active",)
    created_before = now - older_than_days * SECONDS_PER_DAY if older_than_days is not None else None
    similarity: dict[str, float] = {}

    async with rt.write_lock:
        if query is None:
            # SQL reaches the whole scope; the limit only detects "too many".
            rows = await rt.facts.select(
                scope.user_id, projects=None if ids else scope.projects_read, kinds=kinds, tags_any=tags,
                key=key, ids=ids or None, created_before=created_before, statuses=statuses, limit=MAX_FORGET + 1,
                reader=scope.agent,
            )
        else:
            rows, similarity = await _query_matches(rt, scope, query, ids=ids, key=key, kinds=kinds, tags=tags,
                                                    created_before=created_before, statuses=statuses, now=now)
        if len(rows) > MAX_FORGET:
            raise InvalidArgument(f"these selectors match more than {MAX_FORGET} memories; narrow them "
                            "(add kinds, tags, key or older_than_days) or forget in parts")
        items = [ForgottenItem(id=r.id, content_preview=preview(r.content), kind=r.kind, project=r.project,
                               similarity=similarity.get(r.id)) for r in rows[:MAX_LISTED]]
        if not args.dry_run and rows:
            await _apply(rt, rows, hard=args.hard, now=now)
    return ForgetResult(forgotten=items, count=len(rows), dry_run=args.dry_run, hard=args.hard,
                        listed_truncated=len(rows) > len(items), scope=scope)


async def _query_matches(rt: Runtime, scope: Scope, query: str, *, ids: list[str], key: str | None,
                         kinds: list[Kind] | None, tags: list[str], created_before: float | None,
                         statuses: tuple[str, ...], now: float) -> tuple[list[MemoryRow], dict[str, float]]:
    """The memories a ``query`` selector takes, with the other selectors applied: (rows, cosine by id).

    Candidates: memories whose dense cosine to the query reaches the bar, searched in the
    engine over the whole scope with every selector as a filter (at most MAX_FORGET + 1,
    enough to tell "too many"); with ``ids``, those memories scored directly. Plus the
    memories whose text is the query's (content hash; with ``hard``, their superseded and
    deleted versions too). When some candidate says exactly what the query says (same
    content words), only those are taken: cosine cannot tell "prefers pnpm over npm" from
    "prefers npm over pnpm" (0.999). SQLite then applies every selector to the candidates.
    """
    bar = QUERY_MIN_COSINE
    user = scope.user_id
    qvec = await embed_query(rt, query)
    if ids:
        # Ids may name any memory of the user: score those (at most MAX_IDS) directly.
        named = await rt.facts.select(user, ids=ids, statuses=("active",), now=now, reader=scope.agent)
        windows = await embed_memories(rt, [r.content for r in named]) if named else []
        scores = {r.id: best_window_cosine(w, qvec) for r, w in zip(named, windows, strict=True)}
    else:
        _, vectors = await rt.ready()
        flt = scope_filter(user, scope.projects_read, now, kinds=kinds, tags_any=tags or None,
                           created_to=None if created_before is None else math.nextafter(created_before, -math.inf),
                           key=key, reader=scope.agent)
        hits = await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, qvec.tolist(), flt, MAX_FORGET + 1)
        scores = {h.id: h.score for h in hits}
    similarity = {i: sc for i, sc in scores.items() if sc >= bar}
    same_text = await rt.facts.select(
        user, projects=None if ids else scope.projects_read, ids=ids or None, content_hash=content_hash(query),
        statuses=statuses, limit=MAX_FORGET + 1, reader=scope.agent,
    )
    wanted = sorted(set(similarity) | {r.id for r in same_text})
    rows: list[MemoryRow] = []
    for i in range(0, len(wanted), 500):  # bounded statements, whatever SQLite's variable limit
        rows += await rt.facts.select(
            user, projects=None if ids else scope.projects_read, kinds=kinds, tags_any=tags, key=key,
            ids=wanted[i : i + 500], created_before=created_before, statuses=statuses, reader=scope.agent,
        )
    exact = await rt.run_sync(_saying_exactly, query, [(r.id, r.content) for r in rows])
    if exact:
        rows = [r for r in rows if r.id in exact]
    rows.sort(key=lambda r: -similarity.get(r.id, 1.0))
    return rows, {r.id: similarity[r.id] for r in rows if r.id in similarity}


def _saying_exactly(query: str, texts: list[tuple[str, str]]) -> set[str]:
    """Blocking (worker thread): ids of the texts with the query's content words, in order."""
    words = content_words(query)
    return {i for i, text in texts if content_words(text) == words}


async def _apply(rt: Runtime, rows: list[MemoryRow], *, hard: bool, now: float) -> None:
    if hard:
        await rt.facts.purge(rows, action="purge", now=now, actor="forget", reason="forget(hard=true)")
        _, vectors = await rt.ready()
        await rt.run_sync(vectors.delete, MEMORY_COLLECTION, [r.id for r in rows])
    else:
        await rt.facts.set_status(rows, "deleted", action="delete", now=now, actor="forget", reason="forget")
        await unindex_rows(rt, rows)
