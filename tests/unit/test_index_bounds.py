"""Time bounds on an HNSW-indexed (optimized) Qdrant Edge segment include their bound.

The payload index of an optimized segment may hold a float one step off the payload's
value, so a range bound placed exactly on a stored ``created_at`` left that point out for
about one value in ten (on the plain appendable segment every count was exact). Real
shards of a few thousand 32-dim points, built without the model: only the engine and the
filter translation are under test.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from memvault.storage.vectors.base import Point, SparseVector, VectorFilter
from memvault.storage.vectors.edge import EdgeVectorIndex

COL = "memories"
DIM = 32
N = 2000
BASE = 1_764_600_000.0


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):
    """A shard whose points sit in an HNSW-indexed segment; ``created_at`` values with
    microsecond digits (as the clock gives them), every seventh shared with its neighbour;
    ``expires_at`` on every third point."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    created = BASE + rng.random(N) * 3e6
    created[7::7] = created[6:-1:7]
    expires = [float(created[i] + 1000.0 + rng.random() * 1e5) if i % 3 == 0 else None for i in range(N)]
    idx = EdgeVectorIndex(tmp_path_factory.mktemp("bounds") / "vectors")
    idx.ensure_collection(COL, DIM, "test/model")
    idx.upsert(COL, [Point(str(uuid.uuid4()), x[i].tolist(), SparseVector([i % 50], [1.0]),
                           {"user_id": "u", "project": "p", "status": "active", "created_at": float(created[i]),
                            "expires_at": expires[i]}) for i in range(N)])
    assert idx.build_index(COL) is not None
    assert idx.index_state(COL).hnsw and idx.index_state(COL).unindexed == 0
    yield idx, x, created, expires
    idx.close()


def test_inclusive_created_bounds_include_points_at_the_bound(indexed):
    idx, _, created, _ = indexed
    off = {"until": 0, "since": 0, "both": 0}
    for v in (float(c) for c in created[:400]):
        off["until"] += idx.count(COL, VectorFilter(status=None, created_to=v)) != int((created <= v).sum())
        off["since"] += idx.count(COL, VectorFilter(status=None, created_from=v)) != int((created >= v).sum())
        both = VectorFilter(status=None, created_from=v, created_to=v)
        off["both"] += idx.count(COL, both) != int((created == v).sum())
    assert off == {"until": 0, "since": 0, "both": 0}


def test_a_search_bounded_at_a_points_own_time_finds_it(indexed):
    idx, x, created, _ = indexed
    missed = []
    for i in range(0, 300, 3):
        flt = VectorFilter(user_id="u", projects=["p"], created_from=float(created[i]), created_to=float(created[i]))
        hits = {h.id for h in idx.search_dense(COL, x[i].tolist(), flt, 10)}
        if len(hits) != int((created == created[i]).sum()):
            missed.append(i)
    assert missed == []


def test_expiry_is_exclusive_at_the_bound(indexed):
    idx, _, _, expires = indexed
    values = np.array([e for e in expires if e is not None])
    off = 0
    for v in values[:300]:
        want = sum(1 for e in expires if e is None or e > v)
        off += idx.count(COL, VectorFilter(status=None, alive_at=float(v))) != want
    assert off == 0
