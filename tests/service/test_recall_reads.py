"""What recall reads of SQLite: the ranking columns of every candidate, whole rows only of what it returns.

Real runtime (SQLite, Qdrant Edge, the model); the fact store's two reads are wrapped to
record the ids each was asked for.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from memvault.service.memory.recall import RecallArgs, rank, recall
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope

pytestmark = pytest.mark.anyio
USER = "local"
SCOPE = make_scope(USER, "", "argument")
FACTS = [f"The build agent number {i} runs on host rack-{i} in the basement next to the {colour} router"
         for i, colour in enumerate(["red", "blue", "green", "grey", "white", "black", "amber", "teal", "pink",
                                     "olive", "navy", "gold"])]


@pytest.fixture
async def rt(tmp_path: Path, model_cache: Path, shared_embedder: Any) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache, user_id=USER),
                                 load_embedder=lambda _s: shared_embedder)
    await runtime.load()
    for text in FACTS:
        done = await remember(runtime, SCOPE, RememberArgs(content=text, force=True))
        assert done.id is not None, done.reason
    yield runtime
    await runtime.close()


def _record(rt: Runtime, asked: dict[str, list[list[str]]]) -> None:
    """Wrap ``rt.facts.get`` and ``rt.facts.heads``: each call's ids are appended to ``asked[name]``."""
    for name in ("get", "heads"):
        inner = getattr(rt.facts, name)

        async def read(ids: Any, _inner: Any = inner, _name: str = name) -> Any:
            ids = list(ids)
            asked.setdefault(_name, []).append(ids)
            return await _inner(ids)

        setattr(rt.facts, name, read)


async def test_recall_reads_whole_rows_only_of_the_memories_it_returns(rt: Runtime) -> None:
    query = "which host runs the build agent next to the green router"
    best = [r.row.id for r in await rank(rt, USER, [""], query, limit=3)]  # before recall counts them as read
    asked: dict[str, list[list[str]]] = {}
    _record(rt, asked)
    got = await recall(rt, SCOPE, RecallArgs(query=query, k=3))
    assert [m.id for m in got.memories] == best and got.memories[0].content == FACTS[2]
    ranked = {i for ids in asked["heads"] for i in ids}
    assert len(ranked) == len(FACTS)  # every memory is a candidate, ranked on its head
    assert asked["get"] == [best]  # one read of whole rows: the three returned


async def test_a_row_unreadable_outside_the_ranking_columns_is_replaced_by_the_next(rt: Runtime) -> None:
    query = "which host runs the build agent next to the green router"
    before = await rank(rt, USER, [""], query, limit=4)
    target = before[0].row.id
    with sqlite3.connect(rt.settings.db_path) as db:  # tags is not a ranking column
        db.execute("UPDATE memories SET tags='{not json' WHERE id=?", [target])
    asked: dict[str, list[list[str]]] = {}
    _record(rt, asked)
    got = await recall(rt, SCOPE, RecallArgs(query=query, k=3))
    assert [m.id for m in got.memories] == [r.row.id for r in before[1:]]
    assert asked["get"] == [[r.row.id for r in before[:3]], [before[3].row.id]]
