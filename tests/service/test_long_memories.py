"""A long memory is searchable to its end: its content is embedded in windows.

The model reads 512 tokens; a memory may hold ``max_content_chars`` (20,000) characters.
Every window is a point of the memory (the later ones with payload ``parent``); recall
returns the memory once with its best window's cosine, the start-up check counts it
once, forget deletes every point, and a rebuilt index (``memvault reindex``) has them all
again.
"""

from __future__ import annotations

import pytest

from memvault.config import Settings
from memvault.embedding.embedder import WINDOW_TOKENS
from memvault.service.indexing import reconcile, window_point_id
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.service.upkeep.index_health import disagreement, memories_expected
from memvault.storage.vectors.edge import EdgeVectorIndex
from tests.conftest import call
from tests.corpus import filler_memories

FACT = "The office parrot is called Captain Biscuit and sleeps in meeting room 4B."
# Another language and other words than FACT: the keyword channel cannot find it.
QUERY = "Wie heißt der Vogel, der im Büro lebt?"
DISTRACTORS = ["The office kitchen has a coffee machine on the third floor.",
               "Birds are not allowed in the meeting rooms.",
               "The team pet is a cat named Miso who visits on Fridays."]
SHORT = len(DISTRACTORS) + 6


def long_memory(chars: int = 12_500) -> str:
    text = "Project handbook, collected notes. "
    fillers = filler_memories(400)
    i = 0
    while len(text) < chars - len(FACT) - 1:
        text += fillers[i % len(fillers)] + " "
        i += 1
    return text + FACT


def points(data_dir, embedder, memory_id: str | None = None) -> int:
    """Memories in the memory collection of a closed server's data dir; with ``memory_id``,
    the points of that memory's windows after its first."""
    idx = EdgeVectorIndex(Settings(data_dir=data_dir).vectors_dir)
    try:
        idx.ensure_collection(MEMORY_COLLECTION, embedder.dim, embedder.model_id)
        if memory_id is None:
            return idx.count(MEMORY_COLLECTION)
        return len(idx.retrieve(MEMORY_COLLECTION, [window_point_id(memory_id, i) for i in range(1, 200)]))
    finally:
        idx.close()


def test_windows_cover_the_whole_text_within_the_model(shared_embedder):
    text = long_memory()
    windows = shared_embedder.passage_windows(text)
    assert len(windows) > 3
    assert all(shared_embedder.count_tokens(w) <= WINDOW_TOKENS for w in windows)
    assert windows[0].startswith("Project handbook") and windows[-1].endswith(FACT)
    at = 0
    for w in windows:  # in order, each overlapping or touching the previous one
        start = text.find(w, max(0, at - len(w)))
        assert 0 <= start <= at, "a window leaves a gap"
        at = start + len(w)
    assert at == len(text)
    assert shared_embedder.passage_windows("short") == ["short"]


@pytest.mark.anyio
async def test_a_fact_at_the_end_of_a_long_memory_is_recalled(tmp_path, mcp_client, memo_model):
    d = tmp_path / "d"
    text = long_memory()
    assert len(text) >= 12_000
    async with mcp_client(d) as c:
        # Closer to the query than the handbook's opening, farther than its last lines.
        for f in [*DISTRACTORS, *filler_memories(30)[::5]]:
            await call(c, "remember", content=f, importance=0.5)
        long = await call(c, "remember", content=text, kind="note", importance=0.5)
        assert long["status"] == "stored"
        got = await call(c, "recall", query=QUERY, k=5)
        ids = [m["id"] for m in got["memories"]]
        assert ids[0] == long["id"], got["memories"]
        assert len(ids) == len(set(ids))  # one result per memory, however many windows
        again = await call(c, "remember", content=text + " ", kind="note", force=True)
        assert again["status"] == "reinforced" and again["id"] == long["id"]
    assert points(d, memo_model) == SHORT + 1  # memories, however many windows
    n = points(d, memo_model, long["id"])
    assert n > 10  # the windows of the long one after its first

    # the start-up check finds the index agreeing with SQLite: one memory, many points
    rt = await Runtime.open(Settings(data_dir=d), load_embedder=lambda _s: memo_model)
    try:
        await rt.load()
        _, vectors = await rt.ready()
        exp = await memories_expected(rt, rt.clock.now())
        assert exp.count == SHORT + 1
        assert await disagreement(rt, vectors, exp) is None
    finally:
        await rt.close()

    # reindex: the collection dropped and rebuilt from SQLite has every window again
    rt = await Runtime.open(Settings(data_dir=d), load_embedder=lambda _s: memo_model)
    try:
        await rt.load(rebuild=True)
        await reconcile(rt)
    finally:
        await rt.close()
    assert points(d, memo_model, long["id"]) == n

    async with mcp_client(d) as c:
        got = await call(c, "recall", query=QUERY, k=1)
        assert got["memories"][0]["id"] == long["id"]
        gone = await call(c, "forget", ids=[long["id"]], hard=True)
        assert gone["count"] == 1
    assert points(d, memo_model) == SHORT
    assert points(d, memo_model, long["id"]) == 0  # every window went with it
