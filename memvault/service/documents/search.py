"""Searching documents: ``search_docs`` (hybrid, citable) over the ``docs`` collection.

Dense (e5) and keyword candidates are filtered in the vector engine, fused with weighted
RRF and kept only when their chunk row exists in the registry, so a file is seen whole in
its old or its new version (see ``documents.indexing``). Each hit cites a path and a line range.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.policy.budget import REPLY_BUDGET_CHARS, cut_to_budget
from memvault.service import validation as v
from memvault.service.documents.collection import DOCS_COLLECTION, ensure_docs_collection
from memvault.service.documents.indexing import check_path_prefix
from memvault.service.documents.models import DocHit, SearchDocsResult
from memvault.service.documents.owner import read_keys, split_key
from memvault.service.memory.models import Scope
from memvault.service.runtime import Runtime
from memvault.service.search import CANDIDATES, Scored, score_texts, search_channels
from memvault.storage.docs import ChunkRow, DocStore
from memvault.storage.vectors.base import VectorFilter

RESULT_CHARS = 1_500
"""Per-result text cut in search_docs replies, characters (about 375 tokens): enough to judge a
chunk by; a cut result keeps its line range, so the rest can be opened."""


async def rank_chunks(
    rt: Runtime,
    projects: Sequence[str],
    query: str,
    *,
    limit: int,
    collection: str | None = None,
    path_prefix: str | None = None,
) -> list[tuple[ChunkRow, Scored]]:
    """Hybrid search over document chunks of ``projects``: [(chunk with file, its scores)], best first.

    Dense (e5 query vs passage, cosine) and keyword (the CJK-aware sparse channel of
    recall) candidates are filtered in the engine (projects, collection, path prefix),
    fused (``service.search.score_texts``), and kept only when their chunk row exists
    (SQLite decides).
    Raises NotReady, Conflict when the index was built with another model.
    """
    s = rt.settings
    await rt.started()  # never read an index start-up is still rebuilding
    await ensure_docs_collection(rt, rebuild_on_mismatch=False)
    flt = VectorFilter(projects=list(projects), status=None, path_prefix=path_prefix,
                       equals={"collection": collection} if collection else None)
    channels = await search_channels(rt, DOCS_COLLECTION, query, flt, max(CANDIDATES, limit))
    async with DocStore.connect(s.db_path) as store:
        rows = await store.chunks(channels.ids())
    live = {cid: row for cid, row in rows.items() if row.file is not None and row.file.project in projects}
    # a chunk without a live row is an orphan of an interrupted run, or a chunk replaced since
    scored = await score_texts(rt, DOCS_COLLECTION, channels, {cid: row.text for cid, row in live.items()})
    out: list[tuple[ChunkRow, Scored]] = []
    for cid, sc in scored.items():
        out.append((live[cid], sc))
        if len(out) >= limit:
            break
    return out


def _hit(row: ChunkRow, sc: Scored, text: str, was_cut: bool) -> DocHit:
    """A search result for ``row`` showing ``text`` (its text, cut to the budget when ``was_cut``)."""
    shown = row.end_line
    if was_cut:
        whole_lines = text.count("\n")  # the last (cut) line is not shown whole
        shown = max(row.start_line - 1, row.start_line + whole_lines - 1)
    f = row.file
    assert f is not None
    return DocHit(path=f.path, heading=row.heading, symbol=row.symbol, start_line=row.start_line,
                  end_line=row.end_line, page=row.page, text=text, text_truncated=was_cut, shown_end_line=shown,
                  score=round(sc.score, 4), relevance=round(sc.relevance, 4), collection=f.collection,
                  project=split_key(f.project)[0])


async def search_docs(
    rt: Runtime,
    scope: Scope,
    query: str,
    k: int = 5,
    collection: str | None = None,
    path_prefix: str | None = None,
    min_relevance: float = 0.0,
) -> SearchDocsResult:
    """Chunks of indexed documents matching ``query`` over ``scope.projects_read``, best first:
    the documents shared in those projects and the user's own (``documents.owner.read_keys``).

    Each result's text is cut to ``RESULT_CHARS`` and the whole reply to
    ``policy.budget.REPLY_BUDGET_CHARS``; a cut text keeps its line range (``start_line`` ..
    ``end_line``) so the rest can be opened. ``min_relevance`` (0..1, default 0 = off) leaves
    out chunks of a lower calibrated relevance. When nothing at all is indexed there, the reply
    says so (``nothing_indexed``, with a ``hint`` naming what to run) instead of an empty list
    alone. Raises InvalidArgument on bad input, NotReady.
    """
    q = v.check_query(query)
    k = v.check_k(k, v.MAX_K)
    name = v.check_collection(collection)
    prefix = check_path_prefix(path_prefix)
    floor = v.check_min_relevance(min_relevance)
    ranked = await rank_chunks(rt, read_keys(scope.projects_read, scope.user_id), q, limit=k if floor <= 0 else max(k, CANDIDATES),
                               collection=name, path_prefix=prefix)
    below = sum(1 for _, sc in ranked[:k] if sc.relevance < floor)
    ranked = [hit for hit in ranked if hit[1].relevance >= floor][:k]
    fitted, truncated = cut_to_budget(ranked, lambda hit: hit[0].text, per_item=RESULT_CHARS,
                                      total=REPLY_BUDGET_CHARS)
    results = [_hit(*f.item, f.text, f.cut) for f in fitted]  # item: (chunk row, Scored)
    hint = None
    if not ranked and not below:
        hint = await _nothing_indexed_hint(rt, scope, name)
    return SearchDocsResult(scope=scope, results=results, truncated=truncated, below_min_relevance=below,
                            nothing_indexed=hint is not None, hint=hint)


async def _nothing_indexed_hint(rt: Runtime, scope: Scope, collection: str | None) -> str | None:
    """What to run when no document is indexed in ``scope.projects_read`` (and ``collection``), else None."""
    async with DocStore.connect(rt.settings.db_path) as store:
        for project in scope.projects_read:
            files, _ = await store.count(project, collection)
            if files:
                return None
    where = f"collection {collection!r}" if collection else "any collection"
    project = f"project {scope.project}" if scope.project else "the global scope"
    return (f"No documents are indexed in {where} of {project} (nor shared by every project): search_docs searches "
            "only what was indexed. Call index_docs with the folders or files to read (e.g. paths=['docs', "
            "'README.md']" + (f", collection={collection!r}" if collection else "") + "), or run `memvault index "
            "PATH` in the project's folder; then search again.")

