"""Searching documents: ``search_docs`` (hybrid, citable) over the ``docs`` collection.

Dense (e5) and keyword candidates are filtered in the vector engine, fused with weighted
RRF and kept only when their chunk row exists in the registry, so a file is seen whole in
its old or its new version (see ``docs_index``). Each hit cites a path and a line range.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.policy.budget import cut_to_budget
from memvault.policy.ranking import normalise_rrf
from memvault.service import validation as v
from memvault.service.docs_index import DOCS_COLLECTION, check_path_prefix, ensure_docs_collection
from memvault.service.docs_models import DocHit, SearchDocsResult
from memvault.service.indexing import hybrid_search
from memvault.service.models import Scope
from memvault.service.runtime import Runtime
from memvault.storage.docs import ChunkRow, DocStore
from memvault.storage.vectors.base import VectorFilter


async def rank_chunks(
    rt: Runtime,
    projects: Sequence[str],
    query: str,
    *,
    limit: int,
    collection: str | None = None,
    path_prefix: str | None = None,
) -> list[tuple[ChunkRow, float]]:
    """Hybrid search over document chunks of ``projects``: [(chunk with file, score 0..1)], best first.

    Dense (e5 query vs passage, cosine) and keyword (the CJK-aware sparse channel of
    recall) candidates are filtered in the engine (projects, collection, path prefix),
    fused with weighted RRF, and kept only when their chunk row exists (SQLite decides).
    Raises NotReady, Conflict when the index was built with another model.
    """
    s = rt.settings
    await rt.started()  # never read an index start-up is still rebuilding
    await ensure_docs_collection(rt, rebuild_on_mismatch=False)
    flt = VectorFilter(projects=list(projects), status=None, path_prefix=path_prefix,
                       equals={"collection": collection} if collection else None)
    fused, _ = await hybrid_search(rt, DOCS_COLLECTION, query, flt, max(s.ranking.candidates, limit))
    weights = [s.ranking.weight_dense, s.ranking.weight_keyword]
    async with DocStore.connect(s.db_path) as store:
        rows = await store.chunks(list(fused)[: max(limit * 2, limit + 20)])
    out: list[tuple[ChunkRow, float]] = []
    for cid, raw in fused.items():
        row = rows.get(cid)
        if row is None or row.file is None or row.file.project not in projects:
            continue  # an orphan of an interrupted run, or a chunk replaced since
        out.append((row, normalise_rrf(raw, weights, s.ranking.rrf_k)))
        if len(out) >= limit:
            break
    return out


def _hit(row: ChunkRow, score: float, text: str, was_cut: bool) -> DocHit:
    """A search result for ``row`` showing ``text`` (its text, cut to the budget when ``was_cut``)."""
    shown = row.end_line
    if was_cut:
        whole_lines = text.count("\n")  # the last (cut) line is not shown whole
        shown = max(row.start_line - 1, row.start_line + whole_lines - 1)
    f = row.file
    assert f is not None
    return DocHit(path=f.path, heading=row.heading, symbol=row.symbol, start_line=row.start_line,
                  end_line=row.end_line, page=row.page, text=text, text_truncated=was_cut, shown_end_line=shown,
                  score=round(score, 4), collection=f.collection, project=f.project)


async def search_docs(
    rt: Runtime,
    scope: Scope,
    query: str,
    k: int = 5,
    collection: str | None = None,
    path_prefix: str | None = None,
) -> SearchDocsResult:
    """Chunks of indexed documents matching ``query`` over ``scope.projects_read``, best first.

    Each result's text is cut to ``settings.documents.docs_result_chars`` and the whole reply to
    ``settings.replies.reply_budget_chars``; a cut text keeps its line range (``start_line`` ..
    ``end_line``) so the rest can be opened. Raises InvalidArgument on bad input, NotReady.
    """
    s = rt.settings
    q = v.check_query(query)
    k = v.check_k(k, s.replies.max_k)
    name = v.check_collection(collection)
    prefix = check_path_prefix(path_prefix)
    ranked = await rank_chunks(rt, scope.projects_read, q, limit=k, collection=name, path_prefix=prefix)
    fitted, truncated = cut_to_budget(ranked, lambda hit: hit[0].text, per_item=s.documents.docs_result_chars,
                                      total=s.replies.reply_budget_chars)
    results = [_hit(*f.item, f.text, f.cut) for f in fitted]  # item: (chunk row, score)
    return SearchDocsResult(scope=scope, results=results, truncated=truncated)

