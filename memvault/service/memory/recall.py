"""The ``recall`` handler: hybrid retrieval, ranking, bounded reply.

Dense (e5 query embedding, cosine) and keyword (CJK-aware sparse vector, IDF) channels
each return candidates filtered inside the engine (user, projects, kinds, tags, time
range, status, expiry, and visibility: another agent's private memories are never
candidates). They are fused (``service.search``); a memory written just before or after
one of the best hits, in the same conversation, is lifted to near that hit
(``policy.neighbours``); memories stored in a span of time the query names ("in June",
"上周") are raised (``policy.time_expressions``); then all are ordered by a weighted
mean of relevance, importance and recency (exponential decay on last access). The reply
is capped in count (k) and size (per-memory cut and a total budget), and every returned
memory counts as accessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memvault.clock import to_iso
from memvault.policy.budget import CONTENT_BUDGET_CHARS, REPLY_BUDGET_CHARS, cut_to_budget
from memvault.policy.neighbours import (
    NEIGHBOUR_LIFT,
    NEIGHBOUR_REACH,
    NEIGHBOUR_SOURCES,
    conversation_neighbours,
    final_scores_with_neighbours,
)
from memvault.policy.ranking import (
    HALF_LIFE_DAYS,
    WEIGHT_IMPORTANCE,
    WEIGHT_RECENCY,
    WEIGHT_RELEVANCE,
    final_scorer,
    recency,
)
from memvault.policy.time_expressions import time_boosted, time_spans
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from memvault.service.filters import scope_filter
from memvault.service.memory.deixis_query import deictic_query
from memvault.service.memory.models import MemoryOut, RecallResult, Scope
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.search import CANDIDATES, score_texts, search_channels
from memvault.storage.facts import MemoryRow
from memvault.storage.memories import MemoryHead
from memvault.vocabulary import Kind


@dataclass
class RecallArgs:
    """Arguments of ``recall`` as the tool received them (validated here)."""

    query: str
    k: int = 5
    kinds: list[str] | None = None
    tags: list[str] | None = None
    since: str | None = None
    until: str | None = None
    min_relevance: float | None = None  # None: settings.ranking.min_relevance


@dataclass
class Ranked:
    """One ranked candidate (internal)."""

    row: MemoryRow
    score: float
    relevance: float
    similarity: float | None
    neighbour_of: str | None = None  # the hit whose conversation neighbour lifted it, if one did


@dataclass
class Candidate:
    """One ranked candidate as ranking sees it: ``head``, the columns ranking reads of its row
    (``storage.memories.MemoryHead``); the rest as ``Ranked``."""

    head: MemoryHead
    score: float
    relevance: float
    similarity: float | None
    neighbour_of: str | None = None


LIKELY_ANSWER = 0.3
"""Calibrated relevance below which a memory probably does not answer the query: the reply
says so (``nothing_relevant``, ``relevance_note``) without leaving memories out, unless
``min_relevance`` asks for that. On the bilingual probe 0.79 of the questions the store
cannot answer have no memory above it, and every same-language answer is above it; on
LongMemEval's long conversational stores half the answerable questions have none either,
which is why it is a flag and not a default filter (docs/benchmarks.md)."""


async def written_around(rt: Runtime, ids: list[str], now: float, *, reader: str | None = None,
                         reach: int = NEIGHBOUR_REACH) -> dict[str, tuple[str | None, str | None]]:
    """``FactStore.written_beside`` (what ``reader`` may read at ``now``) of ``ids`` and of the
    memories out to ``reach`` places on each side of them (what
    ``policy.neighbours.conversation_neighbours`` walks): one query answers two places,
    ``reach - 1`` queries at most."""
    beside = await rt.facts.written_beside(ids, now, reader=reader, levels=min(reach, 2))
    for _ in range(reach - 2):
        frontier = [n for pair in beside.values() for n in pair if n is not None and n not in beside]
        if not frontier:
            break
        beside |= await rt.facts.written_beside(frontier, now, reader=reader)
    return beside


async def neighbours_of_best(rt: Runtime, scores: dict[str, float], rows: Mapping[str, MemoryRow | MemoryHead],
                             now: float,
                             reader: str | None) -> dict[str, list[tuple[str, int]]]:
    """For the best ``NEIGHBOUR_SOURCES`` candidates by fused score: the candidates written
    near each in the same conversation, with their distance (``policy.neighbours``)."""
    top = sorted(scores, key=lambda i: -scores[i])[:NEIGHBOUR_SOURCES]
    return conversation_neighbours(await written_around(rt, top, now, reader=reader),
                                   {i: row.created_at for i, row in rows.items()},
                                   {i: len(row.content) for i, row in rows.items()})


async def rank(rt: Runtime, user_id: str, projects: list[str], query: str, *, limit: int,
               kinds: list[Kind] | None = None, tags: list[str] | None = None,
               since: float | None = None, until: float | None = None, reader: str | None = None) -> list[Ranked]:
    """Hybrid search + ranking over active, unexpired memories; best first, at most ``limit``,
    with their whole rows (``ranked_candidates``, then ``with_rows``).

    ``reader``: the agent reading (shared memories and its own private ones); None: every
    memory (the user). Does not touch access statistics (``recall`` does). Used by recall's
    explanation, benches and tests.
    """
    ranked = await ranked_candidates(rt, user_id, projects, query, limit=limit, kinds=kinds, tags=tags,
                                     since=since, until=until, reader=reader)
    return await with_rows(rt, ranked, limit)


async def with_rows(rt: Runtime, ranked: list[Candidate], n: int) -> list[Ranked]:
    """The first ``n`` of ``ranked`` (best first) with their whole rows read from SQLite, in
    order: one read of ``n`` rows, another for as many more when a row cannot be read in
    whole (a value memvault never writes: left out, logged) or went away meanwhile."""
    out: list[Ranked] = []
    at = 0
    while len(out) < n and at < len(ranked):
        part = ranked[at : at + n - len(out)]
        at += len(part)
        rows = {r.id: r for r in await rt.facts.get([c.head.id for c in part])}
        out += [Ranked(row=rows[c.head.id], score=c.score, relevance=c.relevance, similarity=c.similarity,
                       neighbour_of=c.neighbour_of) for c in part if c.head.id in rows]
    return out


async def ranked_candidates(rt: Runtime, user_id: str, projects: list[str], query: str, *, limit: int,
                            kinds: list[Kind] | None = None, tags: list[str] | None = None,
                            since: float | None = None, until: float | None = None,
                            reader: str | None = None) -> list[Candidate]:
    """Every candidate of ``rank``'s search, ranked, best first, with only the columns ranking
    reads (``FactStore.heads``): ``limit`` sets how many each channel gives (at least
    ``CANDIDATES``). ``rank`` and ``recall`` read the whole rows of the few they return."""
    now = rt.clock.now()
    flt = scope_filter(user_id, projects, now, kinds=kinds, tags_any=tags or None,
                       created_from=since, created_to=until, reader=reader)
    channels = await search_channels(rt, MEMORY_COLLECTION, query, flt, max(CANDIDATES, limit))
    rows = {m.id: m for m in await rt.facts.heads(channels.ids())}
    # The index may briefly lag SQLite, and widens time bounds by a float step
    # (``engine_bounds``); SQLite decides what is alive and in [since, until].
    alive = {mid: row for mid, row in rows.items()
             if row.status == "active" and (row.expires_at is None or row.expires_at > now)
             and row.readable_by(reader) and (since is None or row.created_at >= since)
             and (until is None or row.created_at <= until)}
    scored = await score_texts(rt, MEMORY_COLLECTION, channels, {mid: row.content for mid, row in alive.items()})
    fused = {mid: sc.score for mid, sc in scored.items()}
    near = await neighbours_of_best(rt, fused, alive, now, reader) if NEIGHBOUR_LIFT > 0 else {}
    spans = time_spans(query, now)  # "in June", "上周": memories stored then rank up
    weighed = final_scorer(WEIGHT_RELEVANCE, WEIGHT_IMPORTANCE, WEIGHT_RECENCY)
    # a candidate's recency, once (a lifted candidate is scored twice)
    recent = {mid: recency(row.last_accessed_at, now, HALF_LIFE_DAYS) for mid, row in alive.items()}

    def final(mid: str, fused_score: float) -> float:
        row = alive[mid]
        boosted = time_boosted(fused_score, row.created_at, spans) if spans else fused_score
        return weighed(boosted, row.importance, recent[mid])

    scores = final_scores_with_neighbours(fused, near, NEIGHBOUR_LIFT, final,
                                          {mid: sc.relevance for mid, sc in scored.items()}, LIKELY_ANSWER)
    ranked = [Candidate(head=alive[mid], score=scores[mid][0], relevance=sc.relevance, similarity=sc.similarity,
                        neighbour_of=scores[mid][1]) for mid, sc in scored.items()]
    ranked.sort(key=lambda c: c.score, reverse=True)
    return ranked


def bounded(ranked: list[Ranked], content_budget: int, reply_budget: int) -> tuple[list[MemoryOut], bool]:
    """Turn ranked rows into reply items within the per-memory and total size budgets."""
    fitted, truncated = cut_to_budget(ranked, lambda r: r.row.content, per_item=content_budget, total=reply_budget)
    out: list[MemoryOut] = []
    for f in fitted:
        r, row = f.item, f.item.row
        out.append(MemoryOut(
            id=row.id, content=f.text, content_truncated=f.cut, kind=row.kind, key=row.key, tags=row.tags,
            project=row.project, score=round(r.score, 4), relevance=round(r.relevance, 4),
            similarity=None if r.similarity is None else round(r.similarity, 4),
            importance=row.importance, created_at=to_iso(row.created_at),
            last_accessed_at=to_iso(row.last_accessed_at), source=row.source, expires_at=to_iso(row.expires_at),
            visibility="private" if row.visibility == "private" else "shared", neighbour_of=r.neighbour_of,
        ))
    return out, truncated


async def recall(rt: Runtime, scope: Scope, args: RecallArgs) -> RecallResult:
    """Ranked memories for ``args.query`` over ``scope.projects_read``; raises InvalidArgument on bad input."""
    s = rt.settings
    query = v.check_query(args.query)
    k = v.check_k(args.k, v.MAX_K)
    kinds = v.check_kinds(args.kinds)
    tags = v.check_tag_filter(args.tags)
    since, until = v.check_time("since", args.since), v.check_time("until", args.until, end=True)
    if since is not None and until is not None and since > until:
        raise InvalidArgument("since is after until; give a time range that runs forwards")
    floor = s.ranking.min_relevance if args.min_relevance is None else v.check_min_relevance(args.min_relevance)
    query, query_note = await deictic_query(rt, scope, query)  # "continue" -> the current task
    await rt.started()
    # Every candidate is ranked (same cost: the channels fetch this many anyway), so that a
    # relevant memory ranked below k irrelevant ones still comes back once those are left out.
    ranked = (await ranked_candidates(rt, scope.user_id, scope.projects_read, query, limit=max(k, CANDIDATES),
                                      kinds=kinds, tags=tags, since=since, until=until,
                                      reader=scope.agent))[:max(k, CANDIDATES)]
    below = sum(1 for r in ranked[:k] if r.relevance < floor)
    # only the memories returned are read in whole
    kept = await with_rows(rt, [r for r in ranked if r.relevance >= floor], k)
    best = max((r.relevance for r in ranked), default=0.0)
    note = None
    if ranked and not kept:
        note = (f"no memory reached min_relevance {floor:g} (best relevance {best:.2f}); "
                "nothing stored seems to answer this query; lower min_relevance to see weaker matches")
    elif kept and best < LIKELY_ANSWER:
        note = (f"no memory reached relevance {LIKELY_ANSWER:g} (best {best:.2f}): these are the closest matches, "
                "and nothing stored may answer this query")
    memories, truncated = bounded(kept, CONTENT_BUDGET_CHARS, REPLY_BUDGET_CHARS)
    await rt.facts.touch([m.id for m in memories], rt.clock.now())
    repairing = rt.repairing.get(MEMORY_COLLECTION)
    return RecallResult(scope=scope, memories=memories, truncated=truncated, query_note=query_note,
                        min_relevance=floor, below_min_relevance=below, relevance_note=note,
                        nothing_relevant=best < max(LIKELY_ANSWER, floor),
                        index_note=None if repairing is None else repairing.describe(MEMORY_COLLECTION)
                        + "; results may leave out memories not yet re-indexed")
