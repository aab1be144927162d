"""The embedded index on a small disk: restarts, deaths while loading, a full disk.

Real Qdrant Edge shards, small (32-dim points) where only the engine is under test. The
full-disk cases run on a real tmpfs of a few MB (``mount -t tmpfs``, which needs root:
skipped with the reason elsewhere), where Qdrant Edge's memory-mapped files are really
allocated, unlike the sparse files of ext4.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memvault.storage.vectors import edge_disk
from memvault.storage.vectors.base import Point, SparseVector
from memvault.storage.vectors.edge import EdgeVectorIndex

pytestmark = pytest.mark.anyio

COL = "memories"
DIM = 32


def points(n: int, seed: int = 0) -> list[Point]:
    x = np.random.default_rng(seed).normal(size=(n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return [Point(str(uuid.uuid4()), x[i].tolist(), SparseVector([i % 40], [1.0]),
                  {"user_id": "u", "project": "p", "status": "active", "tags": ["t"], "created_at": 1.0e9 + i})
            for i in range(n)]


def closed_store(root: Path, n: int = 20, *, payload_index_after: int | None = None) -> None:
    idx = EdgeVectorIndex(root, payload_index_after=payload_index_after)
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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mounts a real tmpfs of the size asked (``"40m"``) and returns its folder; unmounted after.
    Skipped, with the reason, where mounting is not permitted (it needs root; CI has it)."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here (needs root): {res.stderr.strip() or res.returncode}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Write a file on ``disk`` until only ``leave`` bytes are free (0: until it is full)."""
    filler = disk / f"filler-{uuid.uuid4().hex[:6]}"
    with open(filler, "wb") as fh:
        while True:
            room = edge_disk.free_bytes(disk) - leave
            if room <= 0:
                break
            try:
                fh.write(b"\0" * min(room, 1 << 20))
                fh.flush()
            except OSError:
                break
    return filler


def in_child(body: str) -> dict:
    """Run ``CHILD_HEAD`` and ``body`` (which prints one JSON line last) in a fresh interpreter; a
    signal (SIGBUS on a full tmpfs) fails the test instead of killing it."""
    res = subprocess.run([sys.executable, "-c", CHILD_HEAD + textwrap.dedent(body)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"the child died ({res.returncode}): {res.stderr[-1500:]}"
    return json.loads(res.stdout.strip().splitlines()[-1])


CHILD_HEAD = f"""
import json, sys
from pathlib import Path
from memvault.storage.vectors.base import VectorFilter
from memvault.storage.vectors.edge import EdgeVectorIndex
from tests.service.test_index_disk import points, fill
COL, DIM = {COL!r}, {DIM}
"""


def test_a_write_on_a_full_disk_is_refused_with_the_disk_named_and_works_once_space_is_freed(small_disk):
    # Writing into a mapped hole of a full tmpfs killed the process with SIGBUS: now the
    # write is refused first, the message names the disk and what to free, reads go on,
    # and the same index takes writes again once space is freed.
    disk = small_disk("40m")
    out = in_child(f"""
    disk = Path({str(disk)!r})
    idx = EdgeVectorIndex(disk / "vectors")
    idx.ensure_collection(COL, DIM, "test/model")
    idx.upsert(COL, points(20))
    filler = fill(disk)
    errors = []
    for seed in (1, 2):
        try:
            idx.upsert(COL, points(50, seed))
        except OSError as exc:
            errors.append([exc.errno, str(exc)])
    found = len(idx.search_dense(COL, points(1)[0].dense, VectorFilter(user_id="u", projects=["p"]), 5))
    filler.unlink()
    idx.upsert(COL, points(50, 3))
    count = idx.count(COL)
    idx.close()
    print(json.dumps({{"errors": errors, "found": found, "count": count}}))
    """)
    assert len(out["errors"]) == 2 and all(e[0] == 28 for e in out["errors"]), out
    message = out["errors"][0][1]
    assert f"the disk holding {disk / 'vectors'}" in message and "free space on that disk" in message, message
    assert out["found"] == 5 and out["count"] == 70, out


def test_a_store_too_big_to_load_on_its_disk_is_refused_then_opens_once_space_is_freed(small_disk):
    # Loading reads the engine's mapped files in, allocating their holes on tmpfs: on a disk
    # too small the process died half-way (and the start-up check then called the store
    # damaged). Now the open is refused with the disk named, and nothing is changed.
    disk = small_disk("100m")
    root = disk / "vectors"
    closed_store(root, payload_index_after=0)  # payload indexes made: ~7 MB each to load on tmpfs
    filler = fill(disk, leave=20 << 20)
    out = in_child(f"""
    idx = EdgeVectorIndex({str(root)!r})
    try:
        idx.ensure_collection(COL, DIM, "test/model")
        print(json.dumps({{"opened": True}}))
    except OSError as exc:
        print(json.dumps({{"opened": False, "errno": exc.errno, "message": str(exc)}}))
    """)
    assert out["opened"] is False and out["errno"] == 28, out
    assert "opening it needs about" in out["message"] and str(root) in out["message"], out
    filler.unlink()
    idx = EdgeVectorIndex(root)
    try:
        idx.ensure_collection(COL, DIM, "test/model")  # not damaged: the closing record still holds
        assert idx.count(COL) == 20
    finally:
        idx.close()


def test_set_aside_copies_never_take_the_last_free_space(small_disk):
    # A damaged collection is kept aside only while its disk keeps room to rebuild it:
    # older copies go first, and when even that is not enough its files are deleted.
    disk = small_disk("100m")
    root = disk / "vectors"
    closed_store(root)
    for stamp in ("20300101T000001Z", "20300101T000002Z"):  # two older copies, 6 MB each
        old = disk / f"vectors.broken-{stamp}" / COL
        old.mkdir(parents=True)
        (old / "data").write_bytes(b"\1" * (6 << 20))
    size = edge_disk.allocated(root / COL)
    filler = fill(disk, leave=size + edge_disk.WRITE_RESERVE - (4 << 20))  # short by 4 MB; one copy frees 6
    idx = EdgeVectorIndex(root)
    moved = idx.set_aside(COL)
    assert moved and Path(moved).exists(), moved
    kept = sorted(p.name for p in disk.glob("vectors.broken-*"))
    assert len(kept) == 2 and "vectors.broken-20300101T000001Z" not in kept, kept  # the oldest went
    shutil.rmtree(Path(moved).parent)
    filler.unlink()
    closed_store(root)
    filler = fill(disk, leave=edge_disk.allocated(root / COL) // 2)  # not enough even with every copy gone
    assert idx.set_aside(COL) == ""
    assert not (root / COL).exists() and not list(disk.glob("vectors.broken-*"))
    idx.close()
    filler.unlink()


async def test_recall_works_again_once_space_is_freed_without_a_restart(small_disk, monkeypatch):
    # The index cannot be opened on the full disk: every call says which disk and what to
    # free; once space is freed the next call opens it and is served (no restart, no command).
    from memvault.config import Settings
    from memvault.service.errors import NotReady
    from memvault.service.failures import explain
    from memvault.service.memory.models import Scope
    from memvault.service.memory.recall import RecallArgs, recall
    from memvault.service.memory.remember import RememberArgs, remember
    from memvault.service.runtime import Runtime
    from memvault.service.upkeep import index_build
    from memvault.service.upkeep.health import health
    from memvault.service.upkeep.housekeeping import after_ready
    from tests.conftest import db_rows
    from tests.service.test_index_repair import TopicEmbedder

    disk = small_disk("120m")
    emb = TopicEmbedder()
    scope = Scope(user_id="local", project="", projects_read=[""], source="settings")

    async def opened() -> Runtime:
        monkeypatch.setattr(index_build, "HNSW_AFTER_POINTS", 0)  # exact search only
        rt = await Runtime.open(Settings(data_dir=disk / "d"),
                                load_embedder=lambda _s: emb)  # type: ignore[arg-type,return-value]
        await rt.load(after_ready)
        return rt

    rt = await opened()
    try:
        for i in range(5):
            await remember(rt, scope, RememberArgs(content=f"topic{i} the runner {i} lives on host r{i}", force=True))
        lines = {c.name: c for c in await health(rt)}
        assert lines["vector index disk"].ok and "MB in " in lines["vector index disk"].detail, lines
        assert "(tmpfs" in lines["vector index disk"].detail
        # A remember on a nearly full disk is refused before SQLite keeps anything, naming the disk.
        filler = fill(disk, leave=4 << 20)
        with pytest.raises(OSError) as err:
            await remember(rt, scope, RememberArgs(content="topic9 the cache lives on host c9", force=True))
        said = explain(err.value)
        assert f"the disk holding {disk / 'd' / 'vectors'}" in said and "free space on that disk" in said, said
        assert db_rows(disk / "d", "SELECT count(*) FROM memories") == [(5,)]
        lines = {c.name: c for c in await health(rt)}
        assert not lines["vector index disk"].ok and "too little room to write" in lines["vector index disk"].detail
        filler.unlink()
        await remember(rt, scope, RememberArgs(content="topic9 the cache lives on host c9", force=True))
    finally:
        await rt.close()
    filler = fill(disk, leave=4 << 20)  # enough for SQLite, too little to open the index
    rt = await opened()
    try:
        with pytest.raises(NotReady) as err:
            await recall(rt, scope, RecallArgs(query="topic3 runner", k=2))
        assert f"the disk holding {disk / 'd' / 'vectors'}" in str(err.value), str(err.value)
        filler.unlink()
        got = await recall(rt, scope, RecallArgs(query="topic3 runner", k=2))
        assert got.memories and got.memories[0].content.startswith("topic3"), got
    finally:
        await rt.close()
    assert not list((disk / "d").glob("vectors.broken-*")) and not list(disk.glob("vectors.broken-*"))


def test_a_small_store_takes_little_room_on_tmpfs_until_it_grows(small_disk):
    # Each payload index allocates ~7 MB on tmpfs, read in whole at load: a collection of 20
    # points took 77 MB after a restart. They are made once the collection holds
    # PAYLOAD_INDEX_AFTER points; filters work the same below (reading the payload).
    from memvault.storage.vectors.base import VectorFilter
    from memvault.storage.vectors.edge import PAYLOAD_INDEX_AFTER

    disk = small_disk("40m")
    root = disk / "vectors"
    closed_store(root)
    for _ in range(3):  # restarts: each load rewrites the shard's config, not what the segments keep
        again = EdgeVectorIndex(root)
        again.ensure_collection(COL, DIM, "test/model")
        again.close()
    idx = EdgeVectorIndex(root)
    try:
        idx.ensure_collection(COL, DIM, "test/model")
        assert edge_disk.allocated(root) < 4 << 20, edge_disk.mb(edge_disk.allocated(root))
        flt = VectorFilter(user_id="u", projects=["p"], tags_any=["t"], created_from=1.0e9 + 5, created_to=1.0e9 + 9)
        assert idx.count(COL, flt) == 5
        assert idx._open[COL].payload_indexed is False
        idx.upsert(COL, points(PAYLOAD_INDEX_AFTER, seed=7))
        assert idx._open[COL].payload_indexed is True
        assert idx.count(COL, flt) == 10  # both sets of points at those times, now through the indexes
    finally:
        idx.close()
