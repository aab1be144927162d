"""The vector engine adapters (memvault.storage.vectors), both behind one suite.

"edge" runs the real Qdrant Edge engine in tmp folders; "remote" runs qdrant-client's
local mode (no Qdrant server here). Vectors are hand-made: this is the adapter, not
retrieval quality. Edge-only tests cover the process lock and crash durability.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

import memvault
from memvault.config import Settings
from memvault.storage.vectors import (
    CollectionMismatch,
    Point,
    SparseVector,
    StoreLocked,
    UnknownCollection,
    VectorFilter,
    VectorIndex,
    open_vector_index,
)
from memvault.storage.vectors.edge import EdgeVectorIndex
from memvault.storage.vectors.remote import RemoteVectorIndex

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
MODEL = "test/model-a"
COL = "memories"
REPO_ROOT = Path(memvault.__file__).resolve().parents[1]
COMMON_TERM = 1  # every fixture point carries it, so a sparse query on it reaches all


def unit(i: int, j: int | None = None, w: float = 1.0) -> list[float]:
    """e_i (+ w * e_j), L2-normalised, DIM floats."""
    v = [0.0] * DIM
    v[i] = 1.0
    if j is not None:
        v[j] += w
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def pid(n: int) -> str:
    return str(uuid.UUID(int=n))


# id -> payload. Times in unix seconds; "expires_at" absent on 1, 6, 7, 8 and null on 2;
# "private_to" "x" on 3, "y" on 5, null on 2, absent on the others.
PAYLOADS: dict[int, dict] = {
    1: dict(user_id="u1", project="alpha", kind="fact", tags=["a", "b"], status="active", created_at=100.0),
    2: dict(user_id="u1", project="", kind="preference", tags=["c"], status="active", created_at=200.0, expires_at=None,
                private_to=None),
    3: dict(user_id="u1", project="beta", kind="note", tags=[], status="active", created_at=300.0, expires_at=1000.0,
                private_to="x"),
    4: dict(user_id="u1", project="alpha", kind="episode", tags=["b"], status="superseded", created_at=400, expires_at=2000.0),
    5: dict(user_id="u2", project="alpha", kind="fact", tags=["a"], status="active", created_at=500.0, expires_at=500.0,
                private_to="y"),
    6: dict(user_id="u1", project="alpha", kind="fact", status="active", created_at=600.0, collection="docs", path="src/app/main.py"),
    7: dict(user_id="u1", project="alpha", kind="fact", status="active", created_at=700.0, collection="docs", path="src/lib/util.py"),
    8: dict(user_id="u1", project="alpha", kind="fact", status="active", created_at=800.0, collection="docs", path="README.md"),
}


def fixture_points() -> list[Point]:
    return [
        Point(pid(n), unit(n % DIM), SparseVector([COMMON_TERM, 100 + n], [1.0, 1.0]), dict(p))
        for n, p in PAYLOADS.items()
    ]


class Engine:
    """Opens indexes of one kind; ``open(persistent=True)`` reopens the same backing store."""

    def __init__(self, kind: str, tmp_path: Path):
        self.kind = kind
        self.tmp_path = tmp_path

    def open(self, persistent: bool = False) -> VectorIndex:
        if self.kind == "edge":
            return EdgeVectorIndex(self.tmp_path / "vectors")
        if persistent:
            return RemoteVectorIndex(QdrantClient(path=str(self.tmp_path / "qdrant-local")))
        return RemoteVectorIndex(QdrantClient(location=":memory:"))


@pytest.fixture(params=["edge", "remote"])
def engine(request, tmp_path) -> Engine:
    return Engine(request.param, tmp_path)


@pytest.fixture(scope="module")
def edge_template(tmp_path_factory) -> Path:
    """A closed Edge store holding an empty ``COL`` (shard and payload indexes), made once.

    Creating the payload indexes costs a disk sync each (over a second per store on a busy
    disk), so the ``index`` fixture opens a copy; creation itself is covered by the tests
    that open fresh stores (reopen, mismatch, collections, lock, defaults).
    """
    root = tmp_path_factory.mktemp("edge-template") / "vectors"
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, MODEL)
    idx.close()
    return root


@pytest.fixture
def index(engine, edge_template):
    if engine.kind == "edge":
        shutil.copytree(edge_template, engine.tmp_path / "vectors")
    idx = engine.open()
    idx.ensure_collection(COL, DIM, MODEL)
    yield idx
    idx.close()


@pytest.fixture
def loaded(index):
    index.upsert(COL, fixture_points())
    return index


@pytest.fixture(scope="module", params=["edge", "remote"])
def loaded_once(request, tmp_path_factory):
    """The fixture points in one index per engine, shared by the read-only tests of this
    module (creating an Edge shard costs a few disk syncs; the filter cases only read)."""
    idx = Engine(request.param, tmp_path_factory.mktemp("loaded")).open()
    idx.ensure_collection(COL, DIM, MODEL)
    idx.upsert(COL, fixture_points())
    yield idx
    idx.close()


def ids_of(*ns: int) -> set[str]:
    return {pid(n) for n in ns}


# --- search ------------------------------------------------------------------------


def test_dense_search_is_cosine_best_first(index):
    index.upsert(
        COL,
        [
            Point(pid(1), unit(0), SparseVector([], []), {"status": "active"}),
            Point(pid(2), unit(0, 1, 0.5), SparseVector([], []), {"status": "active"}),
            Point(pid(3), unit(0, 1, 2.0), SparseVector([], []), {"status": "active"}),
            Point(pid(4), unit(2), SparseVector([], []), {"status": "active"}),
        ],
    )
    hits = index.search_dense(COL, unit(0), VectorFilter(), limit=3)
    assert [h.id for h in hits] == [pid(1), pid(2), pid(3)]
    expected = [1.0, 1 / math.sqrt(1.25), 1 / math.sqrt(5.0)]
    assert [h.score for h in hits] == pytest.approx(expected, abs=1e-5)


def test_sparse_search_weighs_rare_terms_higher(index):
    # term 7 is on every point (low IDF), term 9 on one (high IDF); point 4 has neither.
    index.upsert(
        COL,
        [
            Point(pid(1), unit(0), SparseVector([7, 9], [1.0, 1.0]), {"status": "active"}),
            Point(pid(2), unit(0), SparseVector([7], [1.0]), {"status": "active"}),
            Point(pid(3), unit(0), SparseVector([7, 8], [1.0, 1.0]), {"status": "active"}),
            Point(pid(4), unit(0), SparseVector([5], [1.0]), {"status": "active"}),
            Point(pid(5), unit(0), SparseVector([], []), {"status": "active"}),
        ],
    )
    hits = index.search_sparse(COL, SparseVector([7, 9], [1.0, 1.0]), VectorFilter(), limit=10)
    assert hits[0].id == pid(1)
    assert {h.id for h in hits} == ids_of(1, 2, 3)
    assert hits[0].score > hits[1].score > 0
    assert index.search_sparse(COL, SparseVector([], []), VectorFilter(), limit=10) == []


def test_update_sparse_reweighs_and_keeps_dense_and_payload(index):
    index.upsert(
        COL,
        [
            Point(pid(1), unit(0), SparseVector([7, 9], [2.0, 0.5]), {"status": "active", "kind": "doc"}),
            Point(pid(2), unit(1), SparseVector([7, 9], [0.5, 2.0]), {"status": "active", "kind": "doc"}),
            Point(pid(3), unit(2), SparseVector([8], [1.0]), {"status": "active", "kind": "doc"}),
        ],
    )
    q7 = SparseVector([7], [1.0])
    assert [h.id for h in index.search_sparse(COL, q7, VectorFilter(), limit=2)] == [pid(1), pid(2)]
    # swap the weights of points 1 and 2; an empty vector is skipped, not an error
    index.update_sparse(COL, {pid(1): SparseVector([7, 9], [0.5, 2.0]), pid(2): SparseVector([7, 9], [2.0, 0.5]),
                              pid(3): SparseVector([], [])})
    hits = index.search_sparse(COL, q7, VectorFilter(), limit=3)
    assert [h.id for h in hits] == [pid(2), pid(1)] and hits[0].score > hits[1].score
    # point 3 kept its sparse vector; dense vectors and payloads are untouched
    assert [h.id for h in index.search_sparse(COL, SparseVector([8], [1.0]), VectorFilter(), limit=3)] == [pid(3)]
    assert index.search_dense(COL, unit(0), VectorFilter(kinds=["doc"]), limit=1)[0].id == pid(1)
    assert index.count(COL, VectorFilter(kinds=["doc"])) == 3
    index.update_sparse(COL, {})  # nothing to do


def test_limit_is_respected(loaded_once):
    assert len(loaded_once.search_dense(COL, unit(0), VectorFilter(status=None), limit=3)) == 3
    assert loaded_once.search_dense(COL, unit(0), VectorFilter(), limit=0) == []


# --- filters -----------------------------------------------------------------------

FILTER_CASES: list[tuple[str, VectorFilter, set[int]]] = [
    ("any status", VectorFilter(status=None), {1, 2, 3, 4, 5, 6, 7, 8}),
    ("default is active", VectorFilter(), {1, 2, 3, 5, 6, 7, 8}),
    ("status superseded", VectorFilter(status="superseded"), {4}),
    ("user", VectorFilter(user_id="u2"), {5}),
    ("projects any-of", VectorFilter(projects=["beta", ""]), {2, 3}),
    ("global project only", VectorFilter(projects=[""]), {2}),
    ("empty any-of matches nothing", VectorFilter(projects=[]), set()),
    ("kinds any-of", VectorFilter(kinds=["preference", "note"]), {2, 3}),
    ("tags any-of", VectorFilter(tags_any=["b", "c"], status=None), {1, 2, 4}),
    ("time range inclusive", VectorFilter(created_from=200, created_to=400, status=None), {2, 3, 4}),
    ("created from", VectorFilter(created_from=700), {7, 8}),
    ("created to", VectorFilter(created_to=100), {1}),
    ("alive: null/absent never expire", VectorFilter(alive_at=1000, status=None), {1, 2, 4, 6, 7, 8}),
    ("alive: just before expiry", VectorFilter(alive_at=499.5), {1, 2, 3, 5, 6, 7, 8}),
    ("equals", VectorFilter(equals={"collection": "docs"}), {6, 7, 8}),
    ("path prefix folder", VectorFilter(path_prefix="src/"), {6, 7}),
    ("path prefix deeper", VectorFilter(path_prefix="src/app"), {6}),
    ("absent: null or no value", VectorFilter(absent=["private_to"], status=None), {1, 2, 4, 6, 7, 8}),
    ("absent or equals", VectorFilter(absent_or_equals={"private_to": "x"}, status=None), {1, 2, 3, 4, 6, 7, 8}),
    (
        "all together",
        VectorFilter(
            user_id="u1", projects=["alpha"], kinds=["fact"], tags_any=None, created_from=600,
            created_to=800, alive_at=10_000, equals={"collection": "docs"}, path_prefix="src/",
        ),
        {6, 7},
    ),
]


@pytest.mark.parametrize("flt, expected", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter_fields(loaded_once, flt, expected):
    want = ids_of(*expected)
    assert loaded_once.count(COL, flt) == len(want)
    assert {h.id for h in loaded_once.search_dense(COL, unit(0), flt, limit=100)} == want
    sparse = loaded_once.search_sparse(COL, SparseVector([COMMON_TERM], [1.0]), flt, limit=100)
    assert {h.id for h in sparse} == want


# --- writes ------------------------------------------------------------------------


def test_delete_by_id(loaded):
    loaded.delete(COL, [pid(1), pid(2), pid(99)])  # 99 never existed: ignored
    assert loaded.ids(COL) == ids_of(3, 4, 5, 6, 7, 8)
    assert pid(1) not in {h.id for h in loaded.search_dense(COL, unit(1), VectorFilter(status=None), 100)}


def test_delete_by_filter(loaded):
    loaded.delete_by_filter(COL, VectorFilter(user_id="u1", projects=["alpha"], status="active"))
    assert loaded.ids(COL) == ids_of(2, 3, 4, 5)
    loaded.delete_by_filter(COL, VectorFilter(projects=[]))  # matches nothing: deletes nothing
    assert loaded.count(COL) == 4
    loaded.delete_by_filter(COL, VectorFilter(status=None, created_to=300))
    assert loaded.ids(COL) == ids_of(4, 5)


def test_delete_by_filter_refuses_empty_filter(loaded):
    with pytest.raises(ValueError):
        loaded.delete_by_filter(COL, VectorFilter(status=None))
    assert loaded.count(COL) == len(PAYLOADS)


def test_set_payload_status_change_leaves_active_searches(loaded):
    loaded.set_payload(COL, [pid(1), pid(99)], {"status": "superseded"})  # 99: skipped
    active = {h.id for h in loaded.search_dense(COL, unit(1), VectorFilter(), limit=100)}
    assert pid(1) not in active
    assert loaded.count(COL, VectorFilter(status="superseded")) == 2
    # merge, not overwrite: the other fields still match
    assert loaded.count(COL, VectorFilter(status="superseded", kinds=["fact"], tags_any=["a"])) == 1


def test_upsert_replaces_a_point(loaded):
    loaded.upsert(COL, [Point(pid(1), unit(5), SparseVector([], []), {"status": "active", "kind": "note"})])
    assert loaded.count(COL) == len(PAYLOADS)
    assert loaded.search_dense(COL, unit(5), VectorFilter(kinds=["note"]), limit=1)[0].id == pid(1)
    assert loaded.count(COL, VectorFilter(user_id="u1", kinds=["note"])) == 1  # old payload gone


def test_ids_are_canonical_and_count_all(index):
    upper = str(uuid.uuid4()).upper()
    index.upsert(COL, [Point(upper, unit(0), SparseVector([], []), {})])
    assert index.ids(COL) == {upper.lower()}
    assert index.count(COL) == 1
    assert index.count(COL, VectorFilter()) == 0  # no status: not active


def test_ids_pages_through_many_points(index):
    points = [Point(pid(1000 + i), unit(i % DIM), SparseVector([], []), {}) for i in range(2500)]
    index.upsert(COL, points)
    assert index.ids(COL) == {p.id for p in points}


def test_retrieve_gives_vectors_terms_and_payload(loaded):
    got = loaded.retrieve(COL, [pid(1), pid(6), pid(99)])
    assert set(got) == ids_of(1, 6)  # an id without a point is left out
    one = got[pid(1)]
    assert one.dense == pytest.approx(unit(1))
    assert one.terms == {COMMON_TERM, 101}
    assert one.payload == PAYLOADS[1]
    assert loaded.retrieve(COL, []) == {}


# --- items of several points ---------------------------------------------------------


def windows(item: int, vectors: list[list[float]], **payload) -> list[Point]:
    """The points of one item: the first has the item's id, the others carry it as ``parent``."""
    base = {"user_id": "u1", "status": "active", **payload}
    return [Point(pid(item) if i == 0 else pid(item * 100 + i), v,
                  SparseVector([COMMON_TERM], [1.0]) if i == 0 else SparseVector([], []),
                  dict(base) if i == 0 else {**base, "parent": pid(item)})
            for i, v in enumerate(vectors)]


def test_an_item_of_several_points_is_one_hit_with_its_best_score(index):
    index.upsert(COL, windows(50, [unit(0), unit(1), unit(2)]) + windows(60, [unit(3), unit(1, 3, 0.2)]))
    hits = index.search_dense(COL, unit(1), VectorFilter(), limit=5)
    assert [h.id for h in hits] == [pid(50), pid(60)]
    assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(1 / math.sqrt(1.04))
    # limit counts items: one item's many points do not crowd the others out
    assert [h.id for h in index.search_dense(COL, unit(2), VectorFilter(), limit=2)] == [pid(50), pid(60)]
    assert [h.id for h in index.search_sparse(COL, SparseVector([COMMON_TERM], [1.0]), VectorFilter(), 5)] \
        in ([pid(50), pid(60)], [pid(60), pid(50)])
    assert index.ids(COL) == {pid(50), pid(60)}
    assert index.count(COL) == 2  # items, not points


def test_many_points_of_one_item_still_leave_room_for_others(index):
    index.upsert(COL, windows(70, [unit(0)] * 40) + windows(80, [unit(0, 1, 0.5)]))
    assert [h.id for h in index.search_dense(COL, unit(0), VectorFilter(), limit=2)] == [pid(70), pid(80)]


def test_search_dense_many_answers_each_vector_as_search_dense_does(index):
    # one item's 40 points fill a first fetch of 2 points: that query goes on fetching more
    index.upsert(COL, fixture_points() + windows(70, [unit(0)] * 40) + windows(80, [unit(0, 1, 0.5)]))
    queries = [unit(0), unit(3), unit(1, 2, 0.3)]
    for flt in (VectorFilter(), VectorFilter(status=None), VectorFilter(kinds=["fact"]), VectorFilter(projects=["nope"])):
        for limit in (0, 2, 5, 100):
            many = index.search_dense_many(COL, queries, flt, limit)
            assert many == [index.search_dense(COL, q, flt, limit) for q in queries]
    first = [h.id for h in index.search_dense_many(COL, [unit(0)], VectorFilter(), 2)[0]]
    assert len(set(first)) == 2 and pid(70) in first  # two items, though item 70's points alone fill 2 places
    assert index.search_dense_many(COL, [], VectorFilter(), 5) == []


def test_edge_reads_hits_payload_only_once_a_window_point_may_be_there(tmp_path):
    # Without window points a hit's id is its item's and searches read no payload; the first
    # window point upserted, and a reopened store holding one, make them read ``parent`` again.
    idx = EdgeVectorIndex(tmp_path / "vectors")
    idx.ensure_collection(COL, DIM, MODEL)
    idx.upsert(COL, fixture_points())
    assert idx._get(COL).windows is False
    assert idx.search_dense(COL, unit(1), VectorFilter(status=None), 3)[0].id == pid(1)
    far = unit(2, 5, 3.0)  # no fixture point is this close to it
    idx.upsert(COL, windows(50, [unit(6), far]))
    assert idx._get(COL).windows is True
    sparse_query = SparseVector([COMMON_TERM], [1.0])
    for hits in (idx.search_dense(COL, far, VectorFilter(), 1), idx.search_dense_many(COL, [far], VectorFilter(), 1)[0]):
        assert [h.id for h in hits] == [pid(50)]  # the window point's item, not the point
    assert pid(5001) not in {h.id for h in idx.search_sparse(COL, sparse_query, VectorFilter(status=None), 100)}
    idx.close()
    again = EdgeVectorIndex(tmp_path / "vectors")
    again.ensure_collection(COL, DIM, MODEL)
    assert again._get(COL).windows is True
    assert [h.id for h in again.search_dense(COL, far, VectorFilter(), 1)] == [pid(50)]
    again.delete(COL, [pid(50)])
    again.close()
    single = EdgeVectorIndex(tmp_path / "vectors")
    single.ensure_collection(COL, DIM, MODEL)
    assert single._get(COL).windows is False  # its window points deleted
    single.close()


def test_delete_and_set_payload_reach_every_point_of_an_item(index):
    index.upsert(COL, windows(50, [unit(0), unit(1), unit(2)], kind="fact") + windows(60, [unit(3)], kind="fact"))
    index.set_payload(COL, [pid(50)], {"kind": "note"})
    assert index.count(COL, VectorFilter(kinds=["note"])) == 1
    assert [h.id for h in index.search_dense(COL, unit(2), VectorFilter(kinds=["fact"]), 5)] == [pid(60)]
    index.delete(COL, [pid(50)])
    assert index.ids(COL) == {pid(60)} and index.count(COL) == 1


def test_bad_input_is_refused(index):
    with pytest.raises(ValueError):
        index.upsert(COL, [Point(pid(1), [1.0, 0.0], SparseVector([], []), {})])
    with pytest.raises(ValueError):
        index.upsert(COL, [Point("not-a-uuid", unit(0), SparseVector([], []), {})])
    with pytest.raises(ValueError):
        SparseVector([3, 3], [1.0, 2.0])
    with pytest.raises(ValueError):
        index.ensure_collection("../escape", DIM, MODEL)
    with pytest.raises(UnknownCollection):
        index.search_dense("other", unit(0), VectorFilter(), 5)
    assert index.count(COL) == 0


# --- collections -------------------------------------------------------------------


def test_reopen_keeps_data(engine):
    idx = engine.open(persistent=True)
    idx.ensure_collection(COL, DIM, MODEL)
    idx.upsert(COL, fixture_points())
    idx.set_payload(COL, [pid(3)], {"status": "superseded"})
    idx.close()
    idx = engine.open(persistent=True)
    try:
        idx.ensure_collection(COL, DIM, MODEL)
        assert idx.ids(COL) == ids_of(*PAYLOADS)
        assert idx.count(COL, VectorFilter(status="superseded")) == 2
        assert idx.search_dense(COL, unit(6), VectorFilter(path_prefix="src/app"), 5)[0].id == pid(6)
    finally:
        idx.close()


def test_model_mismatch_is_refused(engine):
    idx = engine.open(persistent=True)
    idx.ensure_collection(COL, DIM, MODEL)
    idx.upsert(COL, fixture_points()[:2])
    with pytest.raises(CollectionMismatch, match="memvault reindex"):
        idx.ensure_collection(COL, DIM, "test/model-b")
    idx.close()
    idx = engine.open(persistent=True)
    try:
        with pytest.raises(CollectionMismatch, match="model-a"):
            idx.ensure_collection(COL, DIM, "test/model-b")
        with pytest.raises(CollectionMismatch):
            idx.ensure_collection(COL, DIM * 2, MODEL)
        idx.ensure_collection(COL, DIM, MODEL)  # the right model still opens it
        assert idx.count(COL) == 2
        idx.drop_collection(COL)
        idx.ensure_collection(COL, DIM * 2, "test/model-b")  # rebuilt for the new model
        assert idx.count(COL) == 0
    finally:
        idx.close()


def test_collections_are_separate(index):
    index.ensure_collection("docs", DIM, MODEL)
    index.upsert("docs", fixture_points()[:3])
    assert index.count("docs") == 3
    assert index.count(COL) == 0


# --- Edge only: process lock, crash durability, threads ------------------------------


def _run_child(code: str, *args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )


@pytest.mark.slow  # a child process
def test_edge_second_process_gets_store_locked(tmp_path):
    idx = EdgeVectorIndex(tmp_path / "vectors")
    idx.ensure_collection(COL, DIM, MODEL)
    try:
        child = _run_child(
            """
            import sys
            from memvault.storage.vectors import StoreLocked
            from memvault.storage.vectors.edge import EdgeVectorIndex
            try:
                EdgeVectorIndex(sys.argv[1]).ensure_collection("memories", 8, "test/model-a")
            except StoreLocked as exc:
                print("LOCKED", exc)
            """,
            str(tmp_path / "vectors"),
        )
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out.startswith("LOCKED"), (out, err)
        assert str(tmp_path / "vectors") in out  # names the folder
        # the same process opening it twice is refused the same way
        other = EdgeVectorIndex(tmp_path / "vectors")
        with pytest.raises(StoreLocked):
            other.ensure_collection(COL, DIM, MODEL)
        with pytest.raises(StoreLocked):
            other.drop_collection(COL)  # never deletes a store another holder is serving
        assert (tmp_path / "vectors" / COL / "collection.json").is_file()
    finally:
        idx.close()
    reopened = EdgeVectorIndex(tmp_path / "vectors")  # lock released on close
    reopened.ensure_collection(COL, DIM, MODEL)
    reopened.close()


@pytest.mark.slow  # a child process
def test_edge_points_survive_kill_9_without_flush(tmp_path):
    child = _run_child(
        """
        import sys, time, uuid
        from memvault.storage.vectors import Point, SparseVector
        from memvault.storage.vectors.edge import EdgeVectorIndex
        idx = EdgeVectorIndex(sys.argv[1])
        idx.ensure_collection("memories", 8, "test/model-a")
        for n in range(300):
            v = [0.0] * 8; v[n % 8] = 1.0
            idx.upsert("memories", [Point(str(uuid.UUID(int=n)), v, SparseVector([n], [1.0]),
                                          {"status": "active", "n": n})])
        idx.set_payload("memories", [str(uuid.UUID(int=7))], {"status": "deleted"})
        idx.delete("memories", [str(uuid.UUID(int=8))])
        print("ready", flush=True)
        time.sleep(600)  # never flushes, never closes
        """,
        str(tmp_path / "vectors"),
    )
    try:
        line = child.stdout.readline()
        assert line.strip() == "ready", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    idx = EdgeVectorIndex(tmp_path / "vectors")
    try:
        idx.ensure_collection(COL, DIM, MODEL)
        assert idx.ids(COL) == {pid(n) for n in range(300) if n != 8}
        assert idx.count(COL, VectorFilter(status="deleted")) == 1
        hits = idx.search_sparse(COL, SparseVector([299], [1.0]), VectorFilter(), 1)
        assert [h.id for h in hits] == [pid(299)]
    finally:
        idx.close()


def test_edge_shards_load_with_memvaults_search_threads():
    from memvault.storage.vectors.edge_build import SEARCH_THREADS, edge_config

    # the live shard, a swapped-in build and the build itself all load with edge_config
    assert edge_config(DIM).max_search_threads == SEARCH_THREADS
    assert edge_config(DIM, max_search_threads=SEARCH_THREADS + 2).max_search_threads == SEARCH_THREADS + 2


def test_edge_concurrent_threads(tmp_path):
    idx = EdgeVectorIndex(tmp_path / "vectors", upsert_batch=7)
    idx.ensure_collection(COL, DIM, MODEL)
    errors: list[BaseException] = []

    def writer(base: int) -> None:
        try:
            for i in range(40):
                pts = [Point(pid(base + 3 * i + k), unit(k), SparseVector([k], [1.0]), {"status": "active"}) for k in range(3)]
                idx.upsert(COL, pts)
                idx.set_payload(COL, [pts[0].id], {"status": "superseded"})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(60):
                idx.search_dense(COL, unit(1), VectorFilter(), 10)
                idx.search_sparse(COL, SparseVector([2], [1.0]), VectorFilter(), 10)
                idx.count(COL)
                idx.flush()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(b,)) for b in (10_000, 20_000)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert idx.count(COL) == 240
        assert idx.count(COL, VectorFilter(status="superseded")) == 80
    finally:
        idx.close()


def test_edge_set_aside_moves_a_collection_and_keeps_the_newest_few(tmp_path, monkeypatch):
    from memvault.storage.vectors import edge_integrity

    root = tmp_path / "vectors"
    idx = EdgeVectorIndex(root)
    idx.ensure_collection(COL, DIM, MODEL)
    idx.upsert(COL, fixture_points()[:2])
    stamps = iter(f"20300101T00000{i}Z" for i in range(9))
    monkeypatch.setattr(edge_integrity.time, "strftime", lambda *_: next(stamps))
    moved = Path(idx.set_aside(COL) or "")
    assert moved == tmp_path / "vectors.broken-20300101T000000Z" / COL
    assert (moved / "shard").is_dir() and not (root / COL).exists()
    idx.ensure_collection(COL, DIM, MODEL)  # made anew, empty
    assert idx.count(COL) == 0
    for _ in range(4):
        idx.set_aside(COL)
        idx.ensure_collection(COL, DIM, MODEL)
    kept = sorted(p.name for p in tmp_path.glob("vectors.broken-*"))
    assert edge_integrity.BROKEN_KEPT == 3 and kept == [f"vectors.broken-20300101T00000{i}Z" for i in (2, 3, 4)]
    assert idx.set_aside("docs") == ""  # nothing to move
    idx.close()


def test_close_is_idempotent_and_final(tmp_path):
    idx = EdgeVectorIndex(tmp_path / "vectors")
    idx.ensure_collection(COL, DIM, MODEL)
    idx.close()
    idx.close()
    with pytest.raises(UnknownCollection):
        idx.count(COL)


def test_open_vector_index_defaults_to_edge_under_data_dir(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    idx = open_vector_index(settings)
    try:
        assert isinstance(idx, EdgeVectorIndex)
        idx.ensure_collection(COL, DIM, MODEL)
        assert (settings.vectors_dir / COL / "collection.json").is_file()
    finally:
        idx.close()
