"""The embedded index on a small disk: restarts, deaths while loading, a full disk.

Real Qdrant Edge shards, small (32-dim points) where only the engine is under test. The
full-disk cases run on a real tmpfs of a few MB (``mount -t tmpfs``, which needs root:
skipped with the reason elsewhere), where Qdrant Edge's memory-mapped files are really
allocated, unlike the sparse files of ext4.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np

from memvault.storage.vectors.base import Point, SparseVector
from memvault.storage.vectors.edge import EdgeVectorIndex

COL = "memories"
DIM = 32


def points(n: int, seed: int = 0) -> list[Point]:
    x = np.random.default_rng(seed).normal(size=(n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return [Point(str(uuid.uuid4()), x[i].tolist(), SparseVector([i % 40], [1.0]),
                  {"user_id": "u", "project": "p", "status": "active", "tags": ["t"], "created_at": 1.0e9 + i})
            for i in range(n)]


def closed_store(root: Path, n: int = 20) -> None:
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, "test/model")
    idx.upsert(COL, points(n))
    idx.close()


def test_a_process_dying_while_it_loads_a_cleanly_closed_store_leaves_it_not_damaged(tmp_path):
    # Loading a shard rewrites some of its files (Qdrant Edge applies and deletes its
    # journals). A process killed while loading (SIGBUS on a full tmpfs) must not leave
    # the previous clean close's record behind, or the next start calls the collection
    # damaged ("files changed after memvault closed it: ...tracker_journal.dat (deleted)")
    # and sets it aside.
    root = tmp_path / "vectors"
    closed_store(root)
    assert "closed" in json.loads((root / COL / "collection.json").read_text())
    child = textwrap.dedent(f"""
        import os, signal
        from memvault.storage.vectors.edge import EdgeVectorIndex
        real = EdgeVectorIndex._open_shard
        def dies_after_loading(*args):
            real(*args)
            os.kill(os.getpid(), signal.SIGKILL)
        EdgeVectorIndex._open_shard = staticmethod(dies_after_loading)
        EdgeVectorIndex({str(root)!r}).ensure_collection({COL!r}, {DIM}, "test/model")
    """)
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert res.returncode == -9, res.stderr
    idx = EdgeVectorIndex(root)
    try:
        idx.ensure_collection(COL, DIM, "test/model")  # raised DamagedCollection before
        assert idx.count(COL) == 20
    finally:
        idx.close()
