"""The ``docs`` vector collection: how a document chunk becomes a point.

One collection ``docs`` (beside ``memories``) holds every document collection of every
project; each point's payload is ``{project, collection, path, kind: "doc"}``
(``doc_payload``). A chunk is embedded with its heading or symbol before its text
(``embed_text``) and weighed for keywords with its file's path (``chunk_sparse``). Shared
by indexing (``documents.indexing``), the points' upkeep (``documents.points``) and search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memvault.policy.keywords import AVG_CHUNK_TERMS
from memvault.service.errors import Conflict
from memvault.service.indexing import keyword_vector
from memvault.service.runtime import Runtime
from memvault.storage.docs import ChunkRow, DocFile
from memvault.storage.vectors.base import CollectionMismatch, SparseVector

log = logging.getLogger(__name__)

DOCS_COLLECTION = "docs"
"""The vector collection holding every document chunk."""
MAX_HEADING_CHARS = 80
"""Characters of a heading or symbol put before a chunk's text when it is embedded."""


async def ensure_docs_collection(rt: Runtime, *, rebuild_on_mismatch: bool) -> None:
    """Open the ``docs`` vector collection for the loaded model.

    Built with another model: dropped and recreated when ``rebuild_on_mismatch`` (the
    registry records each file's model, so every file is then re-embedded when its
    path is indexed again), else Conflict saying to re-index. Raises NotReady.
    """
    emb, vectors = await rt.ready()
    try:
        await rt.open_collection(DOCS_COLLECTION)  # a damaged one is set aside (see Runtime.open_collection)
    except CollectionMismatch as exc:
        if not rebuild_on_mismatch:
            raise Conflict(f"documents were indexed with another embedding model; run index_docs "
                            f"(or `memvault index`) on them again. ({exc})") from None
        log.warning("%s; rebuilding the document index", exc)
        await rt.run_sync(vectors.drop_collection, DOCS_COLLECTION)
        await rt.run_sync(vectors.ensure_collection, DOCS_COLLECTION, emb.dim, emb.model_id)


def embed_text(c: ChunkRow) -> str:
    label = c.heading or c.symbol
    if label:
        return label[:MAX_HEADING_CHARS] + "\n" + c.text
    return c.text


def keyword_text(path: str, c: ChunkRow) -> str:
    return " ".join(x for x in (path, c.heading, c.symbol, c.text) if x)


def chunk_sparse(path: str, c: ChunkRow) -> SparseVector:
    """The keyword vector of chunk ``c`` of the file cited as ``path`` (weighting
    ``DOC_KEYWORD_SCHEME``): what indexing writes and what re-weighing restores."""
    return keyword_vector(keyword_text(path, c), query=False, avgdl=AVG_CHUNK_TERMS)


def sparse_by_id(path: str, chunks: Sequence[ChunkRow]) -> dict[str, SparseVector]:
    """Blocking (worker thread): ``chunk_sparse`` of every chunk of the file cited as ``path``, by id."""
    return {c.id: chunk_sparse(path, c) for c in chunks}


def doc_payload(doc: DocFile) -> dict:
    """The payload of every point of ``doc``'s chunks: what search filters on."""
    return {"project": doc.project, "collection": doc.collection, "path": doc.path, "kind": "doc"}
