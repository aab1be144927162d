"""The document registry (SQLite) and the indexing handler called directly (no MCP).

Registry tests use a real SQLite file; handler tests a real Runtime (the session's
model, Qdrant Edge), with the embedder wrapped to count its calls.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.policy.keywords import AVG_DOC_TERMS, DOC_KEYWORD_SCHEME
from memvault.service.documents import indexing as docs_mod
from memvault.service.documents.collection import DOCS_COLLECTION, keyword_text
from memvault.service.documents.indexing import index_docs
from memvault.service.documents.points import reweigh_documents
from memvault.service.documents.search import rank_chunks
from memvault.service.indexing import keyword_vector
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.storage.docs import ChunkRow, DocFile, DocStore, SchemaTooOld
from memvault.storage.facts import FactStore
from memvault.storage.vectors.base import VectorFilter
from tests.docs_fixtures import INDEXED_FILES, write_tree

pytestmark = pytest.mark.anyio


def doc(path: str = "/r/a.md", h: str = "h1") -> DocFile:
    return DocFile(project="p", collection="c", abs_path=path, path=Path(path).name, size=3, mtime=1.0,
                   content_hash=h, format="markdown", embedding_model="m", keyword_scheme=2, indexed_at=2.0)


def chunk(cid: str, seq: int, text: str) -> ChunkRow:
    return ChunkRow(id=cid, seq=seq, heading="A > B", symbol=None, start_line=seq + 1, end_line=seq + 1,
                    page=None, text=text)


async def test_registry_swaps_versions_in_one_transaction(tmp_path):
    db = tmp_path / "m.db"
    await (await FactStore.open(db)).close()  # migrates, documents included
    async with DocStore.connect(db) as store:
        d = await store.replace_file(doc(), [chunk("c1", 0, "one"), chunk("c2", 1, "two")])
        assert d.id > 0 and d.chunk_ids == ["c1", "c2"]
        await store.replace_file(doc(h="h2"), [chunk("c3", 0, "three")])
        got = await store.chunks(["c1", "c2", "c3"])
        assert list(got) == ["c3"] and got["c3"].file.content_hash == "h2" and got["c3"].heading == "A > B"
        # a failing new version (duplicate chunk id) leaves the old one whole
        with pytest.raises(sqlite3.IntegrityError):
            await store.replace_file(doc(h="h3"), [chunk("c4", 0, "x"), chunk("c4", 1, "y")])
        files = await store.files("p", "c")
        assert files["/r/a.md"].content_hash == "h2" and files["/r/a.md"].chunk_ids == ["c3"]
        assert await store.all_chunk_ids() == {"c3"}
        assert await store.count("p", "c") == (1, 1) and await store.count("other") == (0, 0)
        await store.remove_files([files["/r/a.md"]])
        assert await store.files("p", "c") == {} and await store.all_chunk_ids() == set()


async def test_registry_refuses_an_unmigrated_database(tmp_path):
    sqlite3.connect(tmp_path / "old.db").close()
    with pytest.raises(SchemaTooOld):
        async with DocStore.connect(tmp_path / "old.db"):
            pass


async def test_files_indexed_before_migration_4_read_as_keyword_scheme_1(tmp_path):
    from memvault.storage.migrations import MIGRATIONS

    db = tmp_path / "v3.db"
    conn = sqlite3.connect(db)
    for _number, script in MIGRATIONS[:3]:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO doc_files (project, collection, abs_path, path, size, mtime, content_hash, format,"
                 " embedding_model, indexed_at)"
                 " VALUES ('p', 'c', '/r/a.md', 'a.md', 3, 1.0, 'h1', 'markdown', 'm', 2.0)")
    conn.commit()
    conn.close()
    await (await FactStore.open(db)).close()  # applies migration 4
    async with DocStore.connect(db) as store:
        old = (await store.files("p", "c"))["/r/a.md"]
        assert old.keyword_scheme == 1 and old.content_hash == "h1"
        await store.replace_file(doc(), [chunk("c1", 0, "one")])
        assert (await store.files("p", "c"))["/r/a.md"].keyword_scheme == 2


@pytest.fixture
async def runtime(tmp_path, model_cache, memo_model):
    """A loaded Runtime on the session's model (``memo_model``: these tests index the same
    tree again and again; a chunk embedded before gets the vector the model gave it then,
    and every call of the embedder still happens, so ``count_embeds`` counts them all)."""
    rt = await Runtime.open(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache),
                            load_embedder=lambda _settings: memo_model)
    await rt.load()
    yield rt
    await rt.close()


def count_embeds(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap the loaded embedder's passage call for this test; the list grows by the batch
    size per call. (The embedder is the session's: monkeypatch undoes the wrap.)"""
    calls: list[int] = []
    emb = rt._embedder
    real = emb.embed_passages

    def counted(texts):
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(emb, "embed_passages", counted)  # instance attribute shadows the method
    return calls


@pytest.mark.slow
async def test_unchanged_rerun_never_calls_the_embedder(tmp_path, runtime, monkeypatch):
    tree = write_tree(tmp_path / "proj")
    scope = make_scope("local", "proj", "argument")
    calls = count_embeds(runtime, monkeypatch)
    first = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    assert first.added == INDEXED_FILES and sum(calls) == first.chunks_embedded
    # batched across files: fewer embedder calls than files (one per model run, each bounded
    # in padded token positions: memvault.embedding.runs)
    assert len(calls) < first.added
    calls.clear()
    again = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    assert calls == [] and again.unchanged == INDEXED_FILES and again.chunks_embedded == 0


async def sparse_scores(rt: Runtime, query: str) -> dict[str, float]:
    """Keyword-channel scores of the ``proj`` documents for ``query`` (chunk id -> score)."""
    _, vectors = await rt.ready()
    flt = VectorFilter(projects=["proj"], status=None, equals={"collection": "default"})
    hits = await rt.run_sync(vectors.search_sparse, DOCS_COLLECTION, keyword_vector(query, query=True), flt, 50)
    return {h.id: h.score for h in hits}


async def weigh_as_scheme_1(rt: Runtime) -> None:
    """Make the index look as an index written before migration 4 does: chunk keyword
    vectors normalised against memory length, rows at keyword_scheme 1."""
    _, vectors = await rt.ready()
    async with DocStore.connect(rt.settings.db_path) as store:
        for f in (await store.files("proj", "default")).values():
            old = {c.id: keyword_vector(keyword_text(f.path, c), query=False, avgdl=AVG_DOC_TERMS)
                   for c in await store.chunks_of(f.id)}
            await rt.run_sync(vectors.update_sparse, DOCS_COLLECTION, old)
            await store.set_keyword_scheme(f, 1)


@pytest.mark.slow
async def test_files_of_an_older_keyword_scheme_are_reweighed_in_place(tmp_path, runtime, monkeypatch):
    tree = write_tree(tmp_path / "proj")
    scope = make_scope("local", "proj", "argument")
    first = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    query = "step procedure checks installer compiler setting frobnicator"
    current = await sparse_scores(runtime, query)
    assert len(current) >= 3
    await weigh_as_scheme_1(runtime)
    old = await sparse_scores(runtime, query)
    assert set(old) == set(current) and old != pytest.approx(current)
    # start-up step: every stale file re-weighed from the registry, nothing embedded
    calls = count_embeds(runtime, monkeypatch)
    assert await reweigh_documents(runtime) == first.added == INDEXED_FILES
    assert calls == []
    assert await sparse_scores(runtime, query) == pytest.approx(current)
    async with DocStore.connect(runtime.settings.db_path) as store:
        files = await store.files("proj", "default")
        assert {f.keyword_scheme for f in files.values()} == {DOC_KEYWORD_SCHEME}
    assert await reweigh_documents(runtime) == 0
    # index_docs does the same before comparing files: all unchanged, nothing embedded
    await weigh_as_scheme_1(runtime)
    again = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    assert again.unchanged == INDEXED_FILES and again.changed == 0 and calls == []
    assert await sparse_scores(runtime, query) == pytest.approx(current)


@pytest.mark.slow
async def test_a_stale_file_that_cannot_be_reweighed_is_reembedded_from_the_registry(tmp_path, runtime,
                                                                                    monkeypatch):
    tree = write_tree(tmp_path / "proj")
    scope = make_scope("local", "proj", "argument")
    await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    await weigh_as_scheme_1(runtime)
    _, vectors = await runtime.ready()
    async with DocStore.connect(runtime.settings.db_path) as store:
        victim = sorted((await store.files("proj", "default")).values(), key=lambda f: f.path)[0]
    await runtime.run_sync(vectors.delete, DOCS_COLLECTION, victim.chunk_ids[:1])  # a lost point
    calls = count_embeds(runtime, monkeypatch)
    assert await reweigh_documents(runtime) == INDEXED_FILES - 1
    # the next run writes the whole file again from the chunk text the registry keeps
    res = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    assert res.changed == 0 and res.unchanged == INDEXED_FILES
    assert sum(calls) == res.chunks_embedded == len(victim.chunk_ids)
    async with DocStore.connect(runtime.settings.db_path) as store:
        files = await store.files("proj", "default")
        assert {f.keyword_scheme for f in files.values()} == {DOC_KEYWORD_SCHEME}
        assert await runtime.run_sync(vectors.ids, DOCS_COLLECTION) == await store.all_chunk_ids()


@pytest.mark.slow
async def test_interrupted_run_leaves_no_half_indexed_file(tmp_path, runtime, monkeypatch):
    tree = write_tree(tmp_path / "proj")
    scope = make_scope("local", "proj", "argument")
    _, vectors = await runtime.ready()
    real = DocStore.replace_file
    committed: list[str] = []

    async def crash_on_second(self, d, chunks):
        if committed:
            raise KeyboardInterrupt("power cut")
        committed.append(d.path)
        return await real(self, d, chunks)

    monkeypatch.setattr(DocStore, "replace_file", crash_on_second)
    monkeypatch.setattr(runtime.settings.documents, "docs_batch_chunks", 10_000)
    with pytest.raises(KeyboardInterrupt):
        await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    monkeypatch.setattr(DocStore, "replace_file", real)
    # every chunk's point was written, but only the first file is in the registry
    async with DocStore.connect(runtime.settings.db_path) as store:
        files = await store.files("proj", "default")
        assert [f.path for f in files.values()] == committed
        registered = await store.all_chunk_ids()
    assert len(await runtime.run_sync(vectors.ids, DOCS_COLLECTION)) > len(registered)
    # searches see only the committed file, never a piece of the others
    for q in ("flamingo census", "reticulate_splines_v2", "from source procedure compiler"):
        hits = await rank_chunks(runtime, ["proj"], q, limit=20)
        assert {row.file.path for row, _ in hits} <= set(committed)
        assert {row.id for row, _ in hits} <= registered
    # the next run repairs it: orphans dropped, the rest indexed
    res = await index_docs(runtime, scope, [str(tree.root)], None, [tree.root], cite_bases=[tree.root])
    assert res.added == INDEXED_FILES - 1 and res.unchanged == 1
    async with DocStore.connect(runtime.settings.db_path) as store:
        assert await runtime.run_sync(vectors.ids, DOCS_COLLECTION) == await store.all_chunk_ids()
    assert docs_mod.DEFAULT_COLLECTION == "default"
