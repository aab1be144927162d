"""The vector index heals itself from SQLite (the record; the index under ``vectors/`` is derived).

A lost index folder, lost points, or any damaged file of the Qdrant Edge store: at the
next start memvault finds it (the engine refuses the files, they changed after memvault
closed them, or the index disagrees with SQLite in counts or in a sample of points),
moves the damaged collection aside to ``vectors.broken-<time>``, rebuilds it from SQLite
(documents from the chunk text the registry stores), and says so in one line on stderr.

The damage sweeps run on a small store made once per module through the real server
(``store``), copied per case with its sparse files kept sparse; the stores live on
``/dev/shm`` when there is one (making a collection costs a disk sync per payload index
on a disk: the sweeps test detection and rebuilding, not the disk). Every kind of file
found in a real store belongs to one of ``ROLES`` (checked); the end-to-end sweep damages
one file of each role in both collections and restarts the in-process server; the
detection sweep damages every file of a role in each of the three ways and opens the
collection without a server.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from memvault.config import Settings
from memvault.service.documents.collection import DOCS_COLLECTION
from memvault.service.documents.indexing import index_docs
from memvault.service.documents.search import rank_chunks
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.service.upkeep.housekeeping import after_ready
from memvault.storage.vectors.base import DamagedCollection
from memvault.storage.vectors.edge import EdgeVectorIndex
from tests.conftest import call, db_rows, inproc_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MEMORIES = [
    "The staging database lives on host pg-staging-3 in Frankfurt",
    "Alice prefers tabs over spaces in every Go file",
    "数据库备份每天凌晨三点运行",
]
DOCUMENTS = {  # file -> (text, a query that must find it)
    "volcano.md": ("# Volcanoes\n\nThe caldera of Mount Vesuvius erupted in 79 AD and buried Pompeii under ash.\n",
                   "Vesuvius eruption that buried Pompeii"),
    "kiln.md": ("# Pottery kilns\n\nA stoneware glaze matures at cone 10 in a reduction atmosphere kiln.\n",
                "stoneware glaze cone 10 kiln"),
    "orbit.md": ("# Orbits\n\nA geostationary satellite circles the equator at 35786 kilometres altitude.\n",
                 "geostationary satellite altitude"),
}
COLLECTIONS = ("memories", "docs")
MODES = ("truncate", "garble", "delete")

# Every kind of file a Qdrant Edge store holds, by role: pattern on the path relative to
# the collection folder. test_every_file_of_a_real_store_has_a_role keeps this complete.
SEG = r"shard/segments/[0-9a-f-]{36}"
ROLES: dict[str, str] = {
    "wal": r"shard/wal/.+",
    "collection record": r"collection\.json",
    "shard config": r"shard/edge_config\.json",
    "segment config": SEG + r"/segment\.json",
    "segment version": SEG + r"/version\.info",
    "id tracker": SEG + r"/mutable_id_tracker\..+",
    "payload index list": SEG + r"/payload_index/config\.json",
    "keyword index": SEG + r"/payload_index/[^/]+-map/.+",
    "null index": SEG + r"/payload_index/[^/]+-null/.+",
    "numeric index": SEG + r"/payload_index/[^/]+-numeric/.+",
    "payload storage": SEG + r"/payload_storage/.+",
    "dense vectors": SEG + r"/vector_storage-dense/vectors/.+",
    "deleted flags": SEG + r"/vector_storage-[a-z]+/deleted/.+",
    "sparse vectors": SEG + r"/vector_storage-keywords/store/.+",
}


def role_of(rel: str) -> str | None:
    """The role of a file (path relative to its collection folder), None if unknown."""
    return next((role for role, pattern in ROLES.items() if re.fullmatch(pattern, rel)), None)


def files_of(collection_dir: Path, role: str) -> list[str]:
    """Paths (relative to ``collection_dir``) of the files of ``role``, largest first."""
    files = [p for p in collection_dir.rglob("*") if p.is_file()]
    rels = [(p.stat().st_size, p.relative_to(collection_dir).as_posix()) for p in files]
    return [rel for _, rel in sorted(rels, key=lambda x: (-x[0], x[1])) if role_of(rel) == role]


def damage(path: Path, mode: str) -> None:
    """Truncate ``path`` to 0 bytes, overwrite its first 4 KiB with other bytes, or delete it."""
    if mode == "truncate":
        os.truncate(path, 0)
    elif mode == "delete":
        path.unlink()
    else:
        size = path.stat().st_size
        with open(path, "r+b") as fh:
            head = fh.read(min(size, 4096)) or b"\0" * 8
            fh.seek(0)
            fh.write(bytes(b ^ 0x5A for b in head))


def copy_sparse(src: Path, dst: Path) -> None:
    """Copy a folder keeping the holes of sparse files (the engine's files are mostly holes:
    a plain copy would write hundreds of MB) and every file's mtime."""
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if not hasattr(os, "SEEK_DATA"):
            shutil.copy2(path, target)
            continue
        with open(path, "rb") as fi, open(target, "wb") as fo:
            size = os.fstat(fi.fileno()).st_size
            fo.truncate(size)
            pos = 0
            while pos < size:
                try:
                    pos = os.lseek(fi.fileno(), pos, os.SEEK_DATA)
                except OSError:  # no data after pos
                    break
                end = os.lseek(fi.fileno(), pos, os.SEEK_HOLE)
                fi.seek(pos)
                fo.seek(pos)
                fo.write(fi.read(end - pos))
                pos = end
        shutil.copystat(path, target)


@pytest.fixture(scope="module", autouse=True)
def payload_indexes_at_once() -> Iterator[None]:
    """The stores here are small: have them make their payload indexes at once (normally made at
    ``PAYLOAD_INDEX_AFTER`` points), so that every kind of file a store holds is there to damage."""
    from memvault.storage.vectors import edge

    saved, edge.PAYLOAD_INDEX_AFTER = edge.PAYLOAD_INDEX_AFTER, 0
    yield
    edge.PAYLOAD_INDEX_AFTER = saved


@pytest.fixture(scope="module")
def fast_dir() -> Iterator[Path]:
    """A temp folder on /dev/shm when there is one (no disk syncs), else in the system temp."""
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="memvault-heal-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class Store:
    """A closed data dir holding MEMORIES and DOCUMENTS, and how to reach them."""

    data_dir: Path
    docs: Path  # the indexed folder, offered as the client's root

    @property
    def roots(self) -> list[str]:
        return [self.docs.as_uri()]


@pytest.fixture(scope="module")
def store(fast_dir, memo_model, model_cache) -> Store:
    """MEMORIES and DOCUMENTS written through a real in-process server, which is then closed."""
    docs = fast_dir / "docs"
    docs.mkdir()
    for name, (text, _) in DOCUMENTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    made = Store(fast_dir / "template", docs)

    async def make() -> None:
        async with inproc_client(made.data_dir, memo_model, model_cache, roots=made.roots) as c:
            for i, text in enumerate(MEMORIES):  # tags on one: the start-up check counts through the tags index
                await call(c, "remember", content=text, kind="fact", tags=["infra"] if i == 0 else [])
            res = await call(c, "index_docs", paths=["."])
            assert res["added"] == len(DOCUMENTS) and res["chunks_total"] == len(DOCUMENTS), res

    anyio.run(make)
    return made


@pytest.fixture
def copy_of(store, fast_dir, request) -> Iterator[Path]:
    """A fresh copy of the store's data dir for this test."""
    dst = fast_dir / re.sub(r"\W+", "-", request.node.name)
    copy_sparse(store.data_dir, dst)
    yield dst
    shutil.rmtree(dst, ignore_errors=True)  # set-aside folders included (they are beside vectors/)


async def assert_everything_found(c, data_dir: Path) -> None:
    """recall finds every memory by its text, search_docs every document by its query."""
    ids = dict(db_rows(data_dir, "SELECT content, id FROM memories"))
    for text in MEMORIES:
        got = await call(c, "recall", query=text, k=3)
        assert ids[text] in [m["id"] for m in got["memories"]], (text, got)
    for name, (_, query) in DOCUMENTS.items():
        got = await call(c, "search_docs", query=query, k=2)
        assert name in [r["path"] for r in got["results"]], (name, got)


def rebuild_lines(caplog) -> dict[str, str]:
    """The ERROR lines that say a collection is rebuilt from SQLite (or its disagreeing points
    re-indexed), by collection."""
    out = {}
    for r in caplog.records:
        m = re.match(r"vector collection '(\w+)' ", r.getMessage())
        if r.levelno == logging.ERROR and m and ("rebuilding it from SQLite" in r.getMessage()
                                                 or "re-indexing what disagrees from SQLite" in r.getMessage()):
            assert m.group(1) not in out, f"two lines for {m.group(1)}: {out[m.group(1)]!r}, {r.getMessage()!r}"
            assert "\n" not in r.getMessage()
            out[m.group(1)] = r.getMessage()
    return out


# ------------------------------------------------------------------ a lost index


async def test_documents_and_memories_come_back_after_the_index_folder_is_lost(store, copy_of, mcp_client,
                                                                              caplog):
    shutil.rmtree(copy_of / "vectors")
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            await assert_everything_found(c, copy_of)
            res = await call(c, "index_docs", paths=["."])  # nothing left to do
            assert (res["unchanged"], res["chunks_embedded"], res["chunks_total"]) == (3, 0, 3), res
    lines = rebuild_lines(caplog)
    assert set(lines) == set(COLLECTIONS), lines
    assert "holds 0 of the 3 document chunks in SQLite" in lines["docs"], lines
    assert "holds 0 of the 3 memories in SQLite" in lines["memories"], lines


async def test_lost_points_are_found_by_counts_and_the_collection_rebuilt(store, copy_of, mcp_client, caplog):
    # Points gone from a readable index (as when writes since the last flush were lost):
    # the collection opens fine, but holds fewer points than SQLite has rows.
    idx = EdgeVectorIndex(copy_of / "vectors")
    try:
        for name in COLLECTIONS:
            idx.ensure_collection(name, 384, json.loads((copy_of / "vectors" / name / "collection.json")
                                                        .read_text())["model_id"])
            idx.delete(name, sorted(idx.ids(name))[:2])
    finally:
        idx.close()
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            await assert_everything_found(c, copy_of)
    lines = rebuild_lines(caplog)
    assert "holds 1 of the 3 memories in SQLite" in lines["memories"], lines
    assert "holds 1 of the 3 document chunks in SQLite" in lines["docs"], lines
    assert "moved it to " in lines["docs"] and ".broken-" in lines["docs"], lines


async def test_a_rebuild_leaves_unreadable_rows_out_and_serves_the_rest(store, copy_of, mcp_client, caplog):
    # A row memvault cannot read has no point after a rebuild; the index still counts as
    # agreeing with SQLite (the row is logged), so the rest is served.
    con = sqlite3.connect(copy_of / "memvault.db", isolation_level=None)
    con.execute("UPDATE memories SET tags='{not json' WHERE content=?", [MEMORIES[0]])
    con.execute("UPDATE doc_chunks SET start_line='x' WHERE doc_id=(SELECT id FROM doc_files WHERE path='kiln.md')")
    con.close()
    shutil.rmtree(copy_of / "vectors")
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            for text in MEMORIES[1:]:
                assert (await call(c, "recall", query=text, k=3))["memories"][0]["content"] == text
            for name in ("volcano.md", "orbit.md"):
                got = await call(c, "search_docs", query=DOCUMENTS[name][1], k=3)
                assert got["results"][0]["path"] == name and "kiln.md" not in [r["path"] for r in got["results"]]
    assert set(rebuild_lines(caplog)) == set(COLLECTIONS)
    left_out = [r.getMessage() for r in caplog.records if r.getMessage().startswith("unreadable row left out")]
    assert any("table memories" in m and ": tags is not valid JSON" in m for m in left_out), left_out
    assert any("table doc_chunks" in m and ": start_line " in m for m in left_out), left_out


async def test_index_docs_restores_chunks_whose_points_vanished(store, copy_of, model_cache, memo_model):
    # While serving, the points of one file vanish: the next index_docs finds every file
    # unchanged, and still writes their points again from the registry.
    rt = await Runtime.open(Settings(data_dir=copy_of, model_cache_dir=model_cache),
                            load_embedder=lambda _settings: memo_model)
    try:
        await rt.load(after_ready)
        _, vectors = await rt.started()
        (project,) = {r[0] for r in db_rows(copy_of, "SELECT project FROM doc_files")}
        (lost,) = [json.loads(r[0]) for r in db_rows(copy_of, "SELECT chunk_ids FROM doc_files WHERE path='kiln.md'")]
        await rt.run_sync(vectors.delete, DOCS_COLLECTION, lost)
        assert await rank_chunks(rt, [project], DOCUMENTS["kiln.md"][1], limit=3) == [] or all(
            row.file.path != "kiln.md" for row, _ in await rank_chunks(rt, [project], DOCUMENTS["kiln.md"][1], limit=3))
        scope = make_scope(rt.settings.server.user_id, project, "argument")
        res = await index_docs(rt, scope, [str(store.docs)], None, [store.docs], cite_bases=[store.docs])
        assert (res.unchanged, res.chunks_embedded) == (3, len(lost))
        hits = await rank_chunks(rt, [project], DOCUMENTS["kiln.md"][1], limit=3)
        assert hits and hits[0][0].file is not None and hits[0][0].file.path == "kiln.md"
    finally:
        await rt.close()


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")  # local mode has none
async def test_on_a_qdrant_server_a_disagreeing_collection_is_rewritten_in_place(store, copy_of, model_cache,
                                                                               memo_model, caplog):
    # A server's collection may serve other processes: it is never moved or dropped; the
    # point that disagrees is written again. (qdrant-client's local mode stands in for a server.)
    from qdrant_client import QdrantClient

    from memvault.service.upkeep.index_health import heal_index
    from memvault.storage.vectors.remote import RemoteVectorIndex

    server = RemoteVectorIndex(QdrantClient(location=":memory:"))
    rt = await Runtime.open(Settings(data_dir=copy_of, model_cache_dir=model_cache),
                            load_embedder=lambda _settings: memo_model, open_vectors=lambda _settings: server)
    try:
        with caplog.at_level(logging.INFO):
            await rt.load(after_ready)  # an empty server: both collections written from SQLite
            assert rt.error is None
            assert server.count("memories") == len(MEMORIES) and server.count(DOCS_COLLECTION) == len(DOCUMENTS)
            # a point that says something SQLite does not (as a stale or foreign writer would leave)
            one = sorted(server.ids("memories"))[0]
            server.set_payload("memories", [one], {"project": "elsewhere"})
            caplog.clear()
            await heal_index(rt)
        assert rt.error is None
        line = rebuild_lines(caplog)["memories"]
        assert "has payload project='elsewhere'" in line and "re-indexing what disagrees" in line, line
        assert server.retrieve("memories", [one])[one].payload["project"] != "elsewhere"
    finally:
        await rt.close()


# ------------------------------------------------------------------ damaged files


def test_every_file_of_a_real_store_has_a_role(store):
    found = set()
    for name in COLLECTIONS:
        cdir = store.data_dir / "vectors" / name
        for path in cdir.rglob("*"):
            if path.is_file():
                rel = path.relative_to(cdir).as_posix()
                assert role_of(rel) is not None, f"{name}/{rel}: a kind of file the damage sweeps do not know"
                found.add(role_of(rel))
    assert found == set(ROLES)


async def test_a_clean_restart_rebuilds_nothing(store, copy_of, mcp_client, caplog):
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            await assert_everything_found(c, copy_of)
    assert rebuild_lines(caplog) == {}
    assert not list(copy_of.glob("vectors.broken-*"))


def moved_to(line: str) -> Path:
    """The folder a rebuild line says the damaged collection was moved to."""
    m = re.search(r"; moved it to (\S+); rebuilding", line)
    assert m, line
    return Path(m.group(1))


# Each role once over the cases, damaged in one collection or the other (both are the
# same kind of store; the detection sweep below covers every file of both), with the
# three kinds of damage in turn: (memories role, docs role).
ROLE_PAIRS = list(zip(list(ROLES)[0::2], list(ROLES)[1::2], strict=True))


@pytest.mark.parametrize("roles", [pytest.param(p, id=f"{p[0]}+{p[1]}") for p in ROLE_PAIRS])
async def test_a_damaged_file_is_set_aside_and_the_index_rebuilt(store, copy_of, mcp_client, caplog, roles):
    # One file of a role in each collection, damaged while memvault was stopped, then a restart.
    i = ROLE_PAIRS.index(roles)
    plan = {"memories": (roles[0], MODES[i % 3]), "docs": (roles[1], MODES[(i + 1) % 3])}
    damaged = {}
    for name, (role, mode) in plan.items():
        cdir = copy_of / "vectors" / name
        damaged[name] = files_of(cdir, role)[0]
        damage(cdir / damaged[name], mode)
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            await assert_everything_found(c, copy_of)
    lines = rebuild_lines(caplog)
    assert set(lines) == set(COLLECTIONS), lines
    for name, rel in damaged.items():
        shown = "collection.json" if rel == "collection.json" else rel.removeprefix("shard/")
        assert shown in lines[name], (plan[name], lines[name])
        moved = moved_to(lines[name])
        assert moved.parent.name.startswith("vectors.broken-") and moved.name == name
        assert (moved / rel).exists() == (plan[name][1] != "delete")  # the damaged files are kept


CRASHED = [("wal", "truncate"), ("segment config", "delete"), ("dense vectors", "truncate"),
           ("payload storage", "garble"), ("id tracker", "truncate")]


@pytest.mark.parametrize(("role", "mode"), CRASHED)
async def test_a_file_damaged_after_a_crash_is_found_by_the_engine_or_the_check(store, copy_of, mcp_client,
                                                                              caplog, role, mode):
    # After kill -9 there is no closing record to compare the files with: the engine's
    # refusal (wal, segment config), a failing read (dense vectors), the sample (payload)
    # or the count (id tracker) compared with SQLite must find the damage.
    cdir = copy_of / "vectors" / "memories"
    meta = json.loads((cdir / "collection.json").read_text())
    del meta["closed"]
    (cdir / "collection.json").write_text(json.dumps(meta))
    damage(cdir / files_of(cdir, role)[0], mode)
    with caplog.at_level(logging.INFO):
        async with mcp_client(copy_of, roots=store.roots) as c:
            await assert_everything_found(c, copy_of)
    lines = rebuild_lines(caplog)
    assert set(lines) == {"memories"}, lines  # and the documents' collection is kept
    assert ".broken-" in str(moved_to(lines["memories"]))


@contextmanager
def damaged_for_a_while(path: Path, mode: str, spare: Path) -> Iterator[None]:
    """``damage(path, mode)`` inside the block, undone after it (bytes and mtime), using ``spare`` (a
    free path outside the store) to keep what the damage takes away."""
    if mode == "garble":
        st = path.stat()
        with open(path, "rb") as fh:
            head = fh.read(4096)
        damage(path, mode)
        try:
            yield
        finally:
            with open(path, "r+b") as fh:
                fh.write(head)
                fh.truncate(st.st_size)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        return
    os.rename(path, spare)
    if mode == "truncate":
        path.touch()  # the same path, 0 bytes
    try:
        yield
    finally:
        os.replace(spare, path)


def kind_of(rel: str) -> str:
    """A file's path with the ids of its segment and payload field left out: the finest kind of
    file (``shard/segments/<segment>/payload_index/<field>-map/page_0.dat``)."""
    rel = re.sub(r"segments/[0-9a-f-]{36}", "segments/<segment>", rel)
    return re.sub(r"payload_index/[^/]+-(map|null|numeric)/", r"payload_index/<field>-\1/", rel)


@pytest.fixture(scope="module")
def closed_copy(store, fast_dir) -> Iterator[Callable[[], Path]]:
    """One copy of the store's ``vectors`` folder for the detection sweep, which only opens it
    (never loading a shard when the damage is found); call it to get the folder, with
    ``reset=True`` to copy it again after a case that did load a shard."""
    root = fast_dir / "closed-copy"

    def get(reset: bool = False) -> Path:
        if reset or not root.exists():
            shutil.rmtree(root, ignore_errors=True)
            copy_sparse(store.data_dir / "vectors", root / "vectors")
        return root / "vectors"

    yield get
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ROLES)
def test_every_file_changed_after_close_is_refused_when_opened(closed_copy, role, mode):
    # Each kind of file of the role (one file per kind_of), in both collections, in turn:
    # opening the collection (no server, no model) must refuse it and name the file; the
    # damage is then undone.
    vectors = closed_copy()
    for name in COLLECTIONS:
        meta = json.loads((vectors / name / "collection.json").read_text())
        picks = {kind_of(rel): rel for rel in reversed(files_of(vectors / name, role))}
        assert picks
        for rel in sorted(picks.values()):
            with damaged_for_a_while(vectors / name / rel, mode, vectors.parent / "spare"):
                idx = EdgeVectorIndex(vectors)
                try:
                    with pytest.raises(DamagedCollection) as err:
                        idx.ensure_collection(name, meta["dim"], meta["model_id"])
                except BaseException:
                    idx.close()
                    closed_copy(reset=True)  # the shard was loaded: the next case starts from a fresh copy
                    raise
                idx.close()
            shown = "collection.json" if rel == "collection.json" else rel.removeprefix("shard/")
            assert shown in str(err.value), (name, rel, mode, str(err.value))
