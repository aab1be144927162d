"""The ``forget`` handler: soft delete (history kept) or hard purge (right to be forgotten).

Selectors combine with AND: ids, key, query, kinds, tags, older_than_days; at least
one is required. Ids may name any memory of the user; the other selectors act on the
scope recall reads (current project + global unless narrowed). A ``query`` selector
only takes matches whose dense cosine reaches a high bar, and lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memvault.service.errors import InvalidArgument

from memvault.policy.dedup import content_words
from memvault.policy.text import preview
from memvault.policy.units import SECONDS_PER_DAY
from memvault.storage.facts import MemoryRow
from memvault.service import validation as v
from memvault.service.indexing import unindex_rows
from memvault.service.models import ForgetResult, ForgottenItem, Scope
from memvault.service.recall import rank
from memvault.service.runtime import MEMORY_COLLECTION, Runtime

MAX_FORGET = 1000
MAX_LISTED = 50  # the reply lists at most this many; count says how many were forgotten


@dataclass
class ForgetArgs:
    """Arguments of ``forget`` as the tool received them (validated here)."""

    ids: list[str] = field(default_factory=list)
    key: str | None = None
    query: str | None = None
    kinds: list[str] | None = None
    tags: list[str] | None = None
    older_than_days: float | None = None
    hard: bool = False
    dry_run: bool = False


async def forget(rt: Runtime, scope: Scope, args: ForgetArgs) -> ForgetResult:
    """Forget the memories the selectors pick; ``dry_run`` only lists them. Raises InvalidArgument on bad input."""
    ids = v.check_ids("ids", args.ids)
    key = v.check_key(args.key)
    kinds = v.check_kinds(args.kinds)
    tags = v.check_tags(args.tags)
    query = v.check_query(args.query) if args.query is not None else None
    if args.older_than_days is not None and not (args.older_than_days >= 0):
        raise InvalidArgument(f"older_than_days is {args.older_than_days}; it must be 0 or more days")
    if not (ids or key or query or kinds or tags or args.older_than_days is not None):
        raise InvalidArgument("forget needs at least one selector: ids, key, query, kinds, tags or older_than_days")

    await rt.started()
    now = rt.clock.now()
    statuses = ("active", "superseded", "deleted") if args.hard else ("active",)
    created_before = now - args.older_than_days * SECONDS_PER_DAY if args.older_than_days is not None else None
    similarity: dict[str, float] = {}

    async with rt.write_lock:
        rows = await rt.facts.select(
            scope.user_id, projects=None if ids else scope.projects_read, kinds=kinds, tags_any=tags, key=key,
            ids=ids or None, created_before=created_before, statuses=statuses, limit=MAX_FORGET + 1,
        )
        if query is not None:
            bar = rt.settings.ranking.forget_query_min_relevance
            ranked = await rank(rt, scope.user_id, scope.projects_read, query, limit=rt.settings.replies.max_k,
                                kinds=kinds, tags=tags)
            similarity = {r.row.id: r.similarity for r in ranked if r.similarity is not None and r.similarity >= bar}
            # Cosine cannot tell "prefers pnpm over npm" from "prefers npm over pnpm" (0.999):
            # when some memory says exactly what the query says, only those are taken.
            exact = {r.row.id for r in ranked if r.row.id in similarity
                     and content_words(r.row.content) == content_words(query)}
            if exact:
                similarity = {i: similarity[i] for i in exact}
            rows = [r for r in rows if r.id in similarity]
        if len(rows) > MAX_FORGET:
            raise InvalidArgument(f"these selectors match more than {MAX_FORGET} memories; narrow them "
                            "(add kinds, tags, key or older_than_days) or forget in parts")
        items = [ForgottenItem(id=r.id, content_preview=preview(r.content), kind=r.kind, project=r.project,
                               similarity=similarity.get(r.id)) for r in rows[:MAX_LISTED]]
        if not args.dry_run and rows:
            await _apply(rt, rows, hard=args.hard, now=now)
    return ForgetResult(forgotten=items, count=len(rows), dry_run=args.dry_run, hard=args.hard,
                        listed_truncated=len(rows) > len(items), scope=scope)


async def _apply(rt: Runtime, rows: list[MemoryRow], *, hard: bool, now: float) -> None:
    if hard:
        await rt.facts.purge(rows, action="purge", now=now, actor="forget", reason="forget(hard=true)")
        _, vectors = await rt.ready()
        await rt.run_sync(vectors.delete, MEMORY_COLLECTION, [r.id for r in rows])
    else:
        await rt.facts.set_status(rows, "deleted", action="delete", now=now, actor="forget", reason="forget")
        await unindex_rows(rt, rows)
