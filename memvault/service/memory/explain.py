"""Why a memory is a result: recall's ranking of a query, with each hit's parts shown.

``explain`` ranks with recall's own ``rank`` (same filter, channels, fusion and final
score), then asks the two channels again with the same filter to learn each hit's place
in each: its dense rank (by cosine) and its keyword rank (by the sparse score). Next to
them: the calibrated relevance, the hit that lifted it if it was written beside one of
the best hits in the same conversation, the stored importance, the recency of its last
access and the final score, so that a person can see which part put a memory where it
is. Nothing is counted as accessed (``recall`` does that, not this), and recall's reply
is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from memvault.policy.ranking import HALF_LIFE_DAYS, recency
from memvault.service import validation as v
from memvault.service.browse import Checked, MemoryView, memory_view, user_projects
from memvault.service.errors import InvalidArgument
from memvault.service.filters import scope_filter
from memvault.service.indexing import embed_query, keyword_vector
from memvault.service.memory.recall import rank
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.search import CANDIDATES

MAX_EXPLAINED = 100


@dataclass(frozen=True)
class Explained:
    """One hit of a query with the parts of its rank. Scores in [0, 1]; ranks from 1 (None: not
    among that channel's candidates)."""

    memory: MemoryView
    rank: int
    score: float
    relevance: float
    importance: float
    recency: float
    dense_rank: int | None
    keyword_rank: int | None
    similarity: float | None
    neighbour_of: str | None = None  # id of the hit this memory was written beside (its lift), if any


async def explain(rt: Runtime, user_id: str, query: str, checked: Checked, *, limit: int = 50) -> list[Explained]:
    """The best ``limit`` (1..100) active, unexpired memories for ``query`` within ``checked``'s
    projects (None: all of the user's), kinds, tag and time range, as recall ranks them.

    Raises InvalidArgument on a bad query or limit, NotReady while the model or index
    cannot be used.
    """
    query = v.check_query(query)
    if not 1 <= limit <= MAX_EXPLAINED:
        raise InvalidArgument(f"limit must be from 1 to {MAX_EXPLAINED}, got {limit}")
    projects = checked.projects
    if projects is None:
        projects = [p for p, _, _ in await user_projects(rt, user_id)]
    q = checked.query
    kinds = list(q.kinds) if q.kinds else None
    tags = [q.tag] if q.tag else None
    await rt.started()
    ranked = await rank(rt, user_id, projects, query, limit=limit, kinds=kinds, tags=tags,  # type: ignore[arg-type]
                        since=q.created_from, until=q.created_to)
    if q.visibility is not None:
        ranked = [r for r in ranked if r.row.visibility == q.visibility]
    dense, keyword = await _channel_ranks(rt, user_id, projects, query, kinds, tags, q.created_from, q.created_to,
                                          limit)
    now = rt.clock.now()
    hl = HALF_LIFE_DAYS
    return [Explained(memory=memory_view(r.row, now), rank=i, score=round(r.score, 4),
                      relevance=round(r.relevance, 4), importance=r.row.importance,
                      recency=round(recency(r.row.last_accessed_at, now, hl), 4), dense_rank=dense.get(r.row.id),
                      keyword_rank=keyword.get(r.row.id),
                      similarity=None if r.similarity is None else round(r.similarity, 4),
                      neighbour_of=r.neighbour_of)
            for i, r in enumerate(ranked, start=1)]


async def _channel_ranks(rt: Runtime, user_id: str, projects: list[str], query: str, kinds: list[str] | None,
                         tags: list[str] | None, since: float | None, until: float | None,
                         limit: int) -> tuple[dict[str, int], dict[str, int]]:
    """(rank by id in the dense channel, rank by id in the keyword channel), from 1, as recall's
    ``hybrid_search`` asks them (same filter, same number of candidates)."""
    _, vectors = await rt.ready()
    flt = scope_filter(user_id, projects, rt.clock.now(), kinds=kinds, tags_any=tags, created_from=since,
                       created_to=until)
    n = max(CANDIDATES, limit)
    qvec = await embed_query(rt, query)
    dense = await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, qvec.tolist(), flt, n)
    sparse = await rt.run_sync(lambda: keyword_vector(query, query=True))
    keyword = await rt.run_sync(vectors.search_sparse, MEMORY_COLLECTION, sparse, flt, n) if sparse.indices else []

    def places(hits: list) -> dict[str, int]:
        out: dict[str, int] = {}
        for h in hits:
            out.setdefault(h.id, len(out) + 1)
        return out

    return places(dense), places(keyword)
