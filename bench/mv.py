"""Driving memvault in-process, through the same layer the MCP tools use.

``open_runtime`` builds the server's ``Runtime`` on a data dir; ``remember_turn`` calls the
``remember`` handler exactly as the MCP wrapper does (plus ``force`` and ``created_at``),
``remember_turns`` once per turn of a conversation, in order;
``search`` calls ``recall.rank`` (the ranked list recall returns, without touching access
statistics); ``search_dense`` ranks by the dense channel of the same index alone (the
quality benches' dense-only baseline). ``bulk_load`` is for the speed bench only: it
skips the write policies and writes rows and points through the stores in batches
(embedding in batches).
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from memvault.config import Settings
from memvault.embedding.embedder import Embedder
from memvault.policy.text import content_hash
from memvault.service.filters import scope_filter
from memvault.service.indexing import embed_passages, embed_query, index_rows
from memvault.service.memory.models import RememberResult, Scope
from memvault.service.memory.recall import rank
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.runtime import MEMORY_COLLECTION, Runtime, default_embedder
from memvault.storage.memories import MemoryRow

log = logging.getLogger(__name__)

USER = "bench"
PROJECT = ""
SCOPE = Scope(user_id=USER, project=PROJECT, projects_read=[PROJECT], source="settings")


async def open_runtime(data_dir: Path, model_cache: Path, **settings) -> Runtime:
    """A loaded Runtime on ``data_dir`` (fresh or existing) with the model from ``model_cache``.

    Raises memvault's NotReady if the model or index cannot load.
    """
    s = Settings(data_dir=data_dir, model_cache_dir=model_cache, user_id=USER, **settings)
    rt = await Runtime.open(s, load_embedder=shared_embedder)
    try:
        await rt.load()
        await rt.ready()
    except BaseException:
        await rt.close()
        raise
    return rt


async def remember_turn(rt: Runtime, text: str, created_at: float | None) -> RememberResult:
    """One ``remember`` call through the real handler (force=True: chit-chat is stored too).

    Returns the handler's result: ``stored`` with a new id, or ``reinforced`` with the id
    of an existing (exact or near) duplicate.
    """
    return await remember(rt, SCOPE, RememberArgs(content=text, force=True, created_at=created_at,
                                                  source="bench"))


async def remember_turns(rt: Runtime, turns: Iterable[tuple[str, str, float | None]],
                         status: dict[str, int] | None = None) -> dict[str, list[str]]:
    """``remember_turn`` for each (turn id, text, created_at) in order, the text cut to the
    server's ``max_content_chars``; returns memory id -> the turn ids it stands for (a turn
    that reinforced an earlier memory joins that memory's list). Counts each reply's status
    (stored, reinforced, ...) into ``status`` when given."""
    mem_turns: dict[str, list[str]] = defaultdict(list)
    cut = rt.settings.policies.max_content_chars
    for tid, text, when in turns:
        r = await remember_turn(rt, text[:cut], when)
        if status is not None:
            status[r.status] = status.get(r.status, 0) + 1
        if r.id is not None:
            mem_turns[r.id].append(tid)
    return mem_turns


async def search(rt: Runtime, query: str, k: int) -> list[str]:
    """Memory ids ranked by memvault's recall ranking (hybrid + RRF + importance/recency), best first."""
    return [r.row.id for r in await rank(rt, USER, [PROJECT], query, limit=k)]


async def search_dense(rt: Runtime, query: str, k: int) -> list[str]:
    """Memory ids ranked by memvault's dense channel alone, best first (``k`` at most).

    The stored passage vectors and the engine filter recall uses (active, unexpired, the
    bench user's scope), queried with the query embedding: no keyword channel, no RRF, no
    importance or recency. So the dense baseline costs one query embedding, not a second
    embedding of the whole corpus.
    """
    _, vectors = await rt.ready()
    qvec = await embed_query(rt, query)
    flt = scope_filter(USER, [PROJECT], rt.clock.now())
    return [h.id for h in await rt.run_sync(vectors.search_dense, MEMORY_COLLECTION, qvec.tolist(), flt, k)]


async def bulk_load(rt: Runtime, texts: Sequence[str], *, batch: int = 256, progress: bool = True) -> None:
    """Store ``texts`` as active ``fact`` memories of the bench user, bypassing the write policies.

    Each batch: embed (the server's embedder), insert rows through ``FactStore.add``,
    upsert points through ``index_rows`` (the same point layout remember writes).
    """
    from tqdm import tqdm

    emb, _ = await rt.ready()
    bar = tqdm(total=len(texts), desc="bulk load", unit="mem", disable=not progress)
    for i in range(0, len(texts), batch):
        part = list(texts[i : i + batch])
        dense = await embed_passages(rt, part)
        now = rt.clock.now()
        rows = [MemoryRow(id=str(uuid.uuid4()), user_id=USER, project=PROJECT, kind="fact", key=None, content=t,
                          tags=[], importance=0.5, source="bench:bulk", created_at=now, updated_at=now,
                          last_accessed_at=now, expires_at=None, content_hash=content_hash(t),
                          embedding_model=emb.model_id) for t in part]
        for r in rows:
            await rt.facts.add(r, actor="bench:bulk")
        await index_rows(rt, rows, dense=dense)
        bar.update(len(part))
    bar.close()


_EMBEDDERS: dict[tuple, Embedder] = {}


def shared_embedder(settings: Settings) -> Embedder:
    """One loaded model per model setting for the whole process (an ``EmbedderLoader``).

    The quality benches open one Runtime per conversation / question (one data dir each);
    loading the model each time would cost ~1.5 s and ~400 MB apiece. The Embedder object
    is memvault's own and thread-safe, so the runtimes share it.
    """
    key = (settings.embedding.embedding_model, str(settings.embedding.model_path), str(settings.models_dir))
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = default_embedder(settings)
    return _EMBEDDERS[key]
