"""The HNSW index build of the embedded index: child process on a copy, swap, journal replay.

Real Qdrant Edge shards, small (a few thousand 32-dim points) so that a build takes seconds.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from memvault.storage.vectors.base import Point, SparseVector, VectorFilter
from memvault.storage.vectors.edge import EdgeVectorIndex
from memvault.storage.vectors.edge_integrity import BUILD_PREFIX

COL = "memories"
DIM = 32
N = 2000


def _points(n: int, seed: int = 0) -> tuple[list[Point], np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, DIM))
    x = centres[rng.integers(0, 60, n)] + rng.normal(scale=0.6, size=(n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pts = [Point(id=str(uuid.uuid4()), dense=x[i].tolist(), sparse=SparseVector([i % 97, 100 + i % 13], [1.0, 0.5]),
                 payload={"user_id": "u", "project": "a" if i % 10 else "b", "status": "active",
                          "tags": [f"t{i % 7}"], "kind": "fact"})
           for i in range(n)]
    return pts, x


@pytest.fixture
def filled(tmp_path: Path):
    idx = EdgeVectorIndex(tmp_path / "vectors")
    idx.ensure_collection(COL, DIM, "test/model")
    pts, x = _points(N)
    idx.upsert(COL, pts)
    yield idx, pts, x
    idx.close()


def _in_thread(fn, *args, **kw) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["result"] = fn(*args, **kw)
        except BaseException as exc:  # surfaced by the test
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _wait_for_child(idx: EdgeVectorIndex, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while idx._child is None:
        assert time.monotonic() < deadline, "the index build never started its child process"
        time.sleep(0.05)
    return idx._child


def test_build_swaps_in_an_index_and_keeps_every_write_made_during_the_build(filled, tmp_path):
    idx, pts, x = filled
    assert idx.index_state(COL).hnsw is False
    t, out = _in_thread(idx.build_index, COL)
    _wait_for_child(idx)
    # Writes while the child builds: a new point, a payload change, a delete.
    new = Point(id=str(uuid.uuid4()), dense=x[0].tolist(), sparse=SparseVector([5], [1.0]),
                payload={"user_id": "u", "project": "c", "status": "active", "tags": [], "kind": "fact"})
    idx.upsert(COL, [new])
    idx.set_payload(COL, [pts[1].id], {"project": "c"})
    idx.delete(COL, [pts[2].id])
    assert idx.index_state(COL).building is True
    t.join(timeout=600)
    assert "error" not in out, out.get("error")
    built = out["result"]
    assert built is not None and built["replayed"] == 3, built
    state = idx.index_state(COL)
    assert state.hnsw is True and state.building is False and state.points == N
    in_c = VectorFilter(user_id="u", projects=["c"], status="active")
    found = {h.id for h in idx.search_dense(COL, x[0].tolist(), in_c, 10)}
    assert {new.id, pts[1].id} <= found
    assert pts[2].id not in idx.ids(COL)
    # The swapped-in shard is the one used after a restart, and the old one is gone.
    root = idx.root
    idx.close()
    folders = sorted(p.name for p in (root / COL).iterdir() if p.is_dir())
    assert len(folders) == 1 and folders[0].startswith(BUILD_PREFIX), folders
    again = EdgeVectorIndex(root)
    try:
        again.ensure_collection(COL, DIM, "test/model")
        assert again.index_state(COL).hnsw is True
        assert again.count(COL) == N
        assert {new.id, pts[1].id} <= {h.id for h in again.search_dense(COL, x[0].tolist(), in_c, 10)}
        again.upsert(COL, [Point(id=str(uuid.uuid4()), dense=x[3].tolist(), sparse=SparseVector([], []),
                                 payload={"user_id": "u", "project": "a", "status": "active"})])
        assert again.count(COL) == N + 1
        assert again.index_state(COL).unindexed == 1  # written since the build, across the restart
    finally:
        again.close()


def test_killing_the_build_child_leaves_the_serving_shard_intact(filled):
    idx, pts, x = filled
    t, out = _in_thread(idx.build_index, COL)
    child = _wait_for_child(idx)
    extra = Point(id=str(uuid.uuid4()), dense=x[5].tolist(), sparse=SparseVector([], []),
                  payload={"user_id": "u", "project": "a", "status": "active"})
    idx.upsert(COL, [extra])
    os.kill(child.pid, signal.SIGKILL)
    t.join(timeout=120)
    assert out == {"result": None}, out
    state = idx.index_state(COL)
    assert state.hnsw is False and state.building is False
    assert idx.count(COL) == N + 1
    hits = idx.search_dense(COL, x[5].tolist(), VectorFilter(user_id="u", projects=["a"], status="active"), 5)
    assert extra.id in {h.id for h in hits}
    assert not [p for p in (idx.root / COL).iterdir() if p.name.startswith(BUILD_PREFIX)], "the copy was left"


def test_a_copy_left_by_a_crash_is_deleted_when_the_collection_opens(tmp_path):
    root = tmp_path / "vectors"
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, "test/model")
    idx.upsert(COL, _points(10)[0])
    idx.close()
    left = root / COL / f"{BUILD_PREFIX}123" / "shard"
    left.mkdir(parents=True)
    (left / "edge_config.json").write_text("{}")
    idx = EdgeVectorIndex(root)
    try:
        idx.ensure_collection(COL, DIM, "test/model")
        assert not left.parent.exists()
        assert idx.count(COL) == 10
    finally:
        idx.close()


def test_hnsw_search_with_filters_finds_what_exact_search_finds(filled):
    idx, _, x = filled
    # A small full-scan threshold, so that filtered searches go through the graph, not the payload index.
    assert idx.build_index(COL, full_scan_threshold_kb=1) is not None
    assert idx.index_state(COL).hnsw is True
    rng = np.random.default_rng(9)
    filters = [VectorFilter(user_id="u", projects=["a"], status="active"),
               VectorFilter(user_id="u", projects=["a", "b"], status="active", tags_any=["t3"])]
    for flt in filters:
        recalls = []
        for i in rng.integers(0, N, 25):
            q = (x[i] + rng.normal(scale=0.1, size=DIM)).tolist()
            idx._force_exact = True
            exact = [h.id for h in idx.search_dense(COL, q, flt, 10)]
            idx._force_exact = False
            approx = [h.id for h in idx.search_dense(COL, q, flt, 10)]
            assert len(exact) == 10
            recalls.append(len(set(exact) & set(approx)) / 10)
        assert np.mean(recalls) >= 0.95, (flt, np.mean(recalls))


def test_keyword_search_is_the_same_with_and_without_exact_scan(filled):
    idx, pts, _ = filled
    flt = VectorFilter(user_id="u", projects=["a"], status="active")
    q = SparseVector([3, 105], [1.0, 1.0])
    cur = idx._open[COL]
    # A limit above the number of matches, so that ties at the cut cannot differ.
    exact = idx._query(cur, _sparse_query(q), flt, 1000, idx._exact)
    inverted = idx.search_sparse(COL, q, flt, 1000)
    assert sorted((h.id, round(h.score, 5)) for h in inverted) == sorted((h.id, round(h.score, 5)) for h in exact)
    assert [h.score for h in inverted] == sorted((h.score for h in inverted), reverse=True)
    assert len(inverted) > 100


def _sparse_query(q: SparseVector):
    import qdrant_edge as qe

    from memvault.storage.vectors.base import KEYWORDS

    return qe.Query.Nearest(qe.SparseVector(list(q.indices), list(q.values)), using=KEYWORDS)


@pytest.mark.anyio
async def test_the_runtime_builds_the_index_once_enough_points_are_searched_exactly(tmp_path, shared_embedder,
                                                                                     model_cache, monkeypatch):
    from memvault.config import Settings
    from memvault.service.memory.models import Scope
    from memvault.service.memory.recall import RecallArgs, recall
    from memvault.service.memory.remember import RememberArgs, remember
    from memvault.service.runtime import MEMORY_COLLECTION, Runtime
    from memvault.service.upkeep import index_build
    from memvault.service.upkeep.index_build import build_if_due, due_collection

    facts = ["Alice prefers pnpm for the billing service.", "The auth gateway is owned by the platform team.",
             "Deploys of the search API need approval from Bob.", "Carmen lives in Lisbon and works from 9 am.",
             "The data pipeline stores its config in Terraform.", "Hiro fixed a memory leak in the worker."]
    scope = Scope(user_id="local", project="", projects_read=[""], source="settings")

    async def opened(hnsw_after_points: int) -> Runtime:
        monkeypatch.setattr(index_build, "HNSW_AFTER_POINTS", hnsw_after_points)
        rt = await Runtime.open(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache),
                                load_embedder=lambda _s: shared_embedder)
        await rt.load()
        return rt

    rt = await opened(hnsw_after_points=0)
    try:
        for f in facts:
            await remember(rt, scope, RememberArgs(content=f, force=True))
        assert await due_collection(rt) is None  # 0: never
    finally:
        await rt.close()
    rt = await opened(hnsw_after_points=len(facts))
    try:
        assert await due_collection(rt) == MEMORY_COLLECTION
        built = await build_if_due(rt)
        assert built is not None and built["points"] == len(facts)
        _, vectors = await rt.ready()
        state = await rt.run_sync(vectors.index_state, MEMORY_COLLECTION)
        assert state is not None and state.hnsw and state.unindexed == 0
        assert await due_collection(rt) is None
        got = await recall(rt, scope, RecallArgs(query="Who owns the auth gateway?", k=1))
        assert "platform team" in got.memories[0].content
    finally:
        await rt.close()
