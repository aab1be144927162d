"""``index_docs`` runs its stages side by side: the next files are read and the last batch
stored while the model embeds, a stop in the middle of that leaves every file whole or
absent, and a failing stage's own error reaches the caller.

A real Runtime (the session's model, Qdrant Edge, SQLite) called directly; the embedder,
the reader and the registry's commit are wrapped only to note when they ran.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest

from memvault.config import Settings
from memvault.service.documents import indexing as docs_mod
from memvault.service.documents.collection import DOCS_COLLECTION
from memvault.service.documents.indexing import index_docs
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.storage.docs import DocStore
from memvault.storage.vectors.edge import EdgeVectorIndex
from tests.docs_fixtures import write_filler_corpus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FILES = 10
SECTIONS = 3
BATCH = 4  # chunks a batch: a file or two each, so that there are several batches to overlap


def write_corpus(root: Path) -> None:
    """FILES Markdown files of SECTIONS sections each (two chunks a file, a few hundred tokens)."""
    write_filler_corpus(root, files=FILES, sections=SECTIONS, words=60, modulus=11, title="Notes")


@pytest.fixture
async def runtime(tmp_path, model_cache, shared_embedder):
    rt = await Runtime.open(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache),
                            load_embedder=lambda _settings: shared_embedder)
    await rt.load()
    rt.settings.documents.docs_batch_chunks = BATCH
    yield rt
    await rt.close()


class Timeline:
    """(what, start, end) of the wrapped calls, in ``time.perf_counter`` seconds, from any thread."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def note(self, what: str, start: float) -> None:
        with self._lock:
            self.spans.append((what, start, time.perf_counter()))

    def of(self, what: str) -> list[tuple[float, float]]:
        return [(a, b) for w, a, b in self.spans if w == what]

    def during_model(self, what: str) -> int:
        """How many ``what`` calls overlapped a model run."""
        runs = self.of("model")
        return sum(any(a < rb and ra < b for ra, rb in runs) for a, b in self.of(what))


def watch(rt: Runtime, monkeypatch: pytest.MonkeyPatch, tl: Timeline) -> None:
    """Note every model run, file read (and chunking) and file commit of ``rt``'s indexing."""
    emb = rt._embedder
    assert emb is not None
    embed, read, commit = emb.embed_passages, docs_mod._read_and_chunk, DocStore.replace_file

    def model(texts):
        t = time.perf_counter()
        try:
            return embed(texts)
        finally:
            tl.note("model", t)

    def read_and_chunk(*args):
        t = time.perf_counter()
        try:
            return read(*args)
        finally:
            tl.note("read", t)

    async def replace_file(self, *args):
        t = time.perf_counter()
        try:
            return await commit(self, *args)
        finally:
            tl.note("commit", t)

    monkeypatch.setattr(emb, "embed_passages", model)  # the session's embedder: undone after the test
    monkeypatch.setattr(docs_mod, "_read_and_chunk", read_and_chunk)
    monkeypatch.setattr(DocStore, "replace_file", replace_file)


async def registry(rt: Runtime) -> dict[str, tuple[list[str], int]]:
    """{path: (chunk ids its row lists, chunk rows it has)} of the registered files."""
    async with DocStore.connect(rt.settings.db_path) as store:
        files = await store.files("proj", "default")
        return {f.path: (f.chunk_ids, len(await store.chunks_of(f.id))) for f in files.values()}


async def test_files_are_read_and_stored_while_the_model_runs(tmp_path, runtime, monkeypatch):
    write_corpus(tmp_path / "ws")
    tl = Timeline()
    watch(runtime, monkeypatch, tl)
    engine_slots_used: list[int] = []

    async def sample() -> None:
        while True:
            engine_slots_used.append(int(runtime._engine_limiter.borrowed_tokens))
            await anyio.sleep(0.005)

    scope = make_scope("local", "proj", "argument")
    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        res = await index_docs(runtime, scope, [str(tmp_path / "ws")], None, [tmp_path / "ws"],
                               cite_bases=[tmp_path / "ws"])
        tg.cancel_scope.cancel()
    assert res.added == FILES and res.chunks_embedded == res.chunks_total > FILES
    assert len(tl.of("read")) == FILES and len(tl.of("commit")) == FILES
    # the next batch's files are read, and the last batch's files committed, while a model run goes on
    assert tl.during_model("read") >= 1, tl.spans
    assert tl.during_model("commit") >= 1, tl.spans
    # reading and storing never take the engine's slots: one is always left for recall
    assert max(engine_slots_used) == 1, engine_slots_used
    _, vectors = await runtime.ready()
    kept = await registry(runtime)
    assert all(len(ids) == rows > 0 for ids, rows in kept.values())
    assert await runtime.run_sync(vectors.ids, DOCS_COLLECTION) == {i for ids, _ in kept.values() for i in ids}


async def test_the_first_batch_is_short_so_the_model_starts_early(tmp_path, runtime, monkeypatch):
    # two chunks a file: the first batch closes after one file, the later ones after BATCH chunks
    write_corpus(tmp_path / "ws")
    monkeypatch.setattr(docs_mod, "FIRST_BATCH_CHUNKS", 2)
    sizes: list[int] = []
    embed_batch = docs_mod.embed_batch

    async def noted(rt, emb, batch, on_run=None):
        sizes.append(len(batch.texts))
        return await embed_batch(rt, emb, batch, on_run)

    monkeypatch.setattr(docs_mod, "embed_batch", noted)
    scope = make_scope("local", "proj", "argument")
    res = await index_docs(runtime, scope, [str(tmp_path / "ws")], None, [tmp_path / "ws"],
                           cite_bases=[tmp_path / "ws"])
    assert res.added == FILES and sum(sizes) == res.chunks_embedded
    assert sizes[0] == 2 and max(sizes[1:]) >= BATCH > 2, sizes


async def test_a_stop_while_stages_overlap_keeps_whole_files_and_resume_redoes_only_the_rest(tmp_path, runtime,
                                                                                            monkeypatch):
    write_corpus(tmp_path / "ws")
    tl = Timeline()
    watch(runtime, monkeypatch, tl)
    scope = make_scope("local", "proj", "argument")
    args = (runtime, scope, [str(tmp_path / "ws")], None, [tmp_path / "ws"])
    _, vectors = await runtime.ready()
    real = DocStore.replace_file  # the watched one
    stop = anyio.Event()
    commits = 0

    async def stop_after_third(self, *a):  # the stop lands right after a commit, mid-batch
        nonlocal commits
        got = await real(self, *a)
        commits += 1
        if commits == 3:
            stop.set()
        return got

    monkeypatch.setattr(DocStore, "replace_file", stop_after_third)
    async with anyio.create_task_group() as tg:
        async def index() -> None:
            await index_docs(*args, cite_bases=[tmp_path / "ws"])
            pytest.fail("index_docs finished before the stop")

        tg.start_soon(index)
        await stop.wait()
        tg.cancel_scope.cancel()
    kept = await registry(runtime)
    assert len(kept) == 3, kept  # the stop lands before the next file's commit, even within a batch
    assert all(len(ids) == rows > 0 for ids, rows in kept.values()), kept  # none half-written
    points = await runtime.run_sync(vectors.ids, DOCS_COLLECTION)
    kept_ids = {i for ids, _ in kept.values() for i in ids}
    assert kept_ids <= points  # every committed file has all its points (others' are orphans)

    monkeypatch.setattr(DocStore, "replace_file", real)
    resumed = time.perf_counter()  # (a read abandoned by the stop may still be noted after this)
    again = await index_docs(*args, cite_bases=[tmp_path / "ws"])
    # the finished files are neither read nor embedded again; the others are indexed whole
    assert again.unchanged == len(kept) and again.added == FILES - len(kept), again
    assert again.chunks_embedded == again.chunks_total - len(kept_ids), again
    assert len([a for a, _ in tl.of("read") if a >= resumed]) == FILES - len(kept)
    assert await runtime.run_sync(vectors.ids, DOCS_COLLECTION) == {
        i for ids, _ in (await registry(runtime)).values() for i in ids}


async def test_a_failing_store_stage_raises_its_own_error_and_keeps_committed_files(tmp_path, runtime,
                                                                                    monkeypatch):
    write_corpus(tmp_path / "ws")
    scope = make_scope("local", "proj", "argument")
    real = EdgeVectorIndex.upsert
    upserts = 0

    def upsert_fails_on_third(self, *a, **kw):
        nonlocal upserts
        upserts += 1
        if upserts == 3:
            raise OSError(28, "No space left on device")
        return real(self, *a, **kw)

    monkeypatch.setattr(EdgeVectorIndex, "upsert", upsert_fails_on_third)
    with pytest.raises(OSError, match="No space left"):  # the error itself, not a group of the stages'
        await index_docs(runtime, scope, [str(tmp_path / "ws")], None, [tmp_path / "ws"],
                         cite_bases=[tmp_path / "ws"])
    kept = await registry(runtime)
    assert 0 < len(kept) < FILES and all(len(ids) == rows > 0 for ids, rows in kept.values()), kept
