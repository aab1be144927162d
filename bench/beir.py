"""BEIR-layout sets (SciFact, CMRC 2018 zh) through memvault's documents path, with baselines.

Protocol (../shared/bench/README.md, standard BEIR scoring): each corpus document
(title + text) becomes ONE chunk written through the same path as ``index_docs``
(``write_documents`` here: ``index_docs``'s batch embedding, keyword vectors, Qdrant Edge upsert,
SQLite registry; chunk path = the document id). Each query with qrels is ranked to depth
100. Scores follow BEIR / trec_eval: nDCG@10 with linear gain over the qrels' graded
relevance (sum rel_i / log2(i + 1), ideal DCG from the qrels' grades), and Recall@100 =
relevant documents in the top 100 / relevant documents; both averaged over the queries.
The qrels file is ``qrels/test.tsv`` when present (SciFact: 300 queries), else the only
``.tsv`` in ``qrels/`` (CMRC: ``dev.tsv``, 3,219 questions). The data are read where they
lie and never copied.

Systems, on the same documents, queries and scoring:
- ``memvault``: ``tools.docs.rank_chunks`` (the ranking behind ``search_docs``: dense +
  keyword channels, filtered in the engine, fused with weighted RRF).
- ``dense``: the dense channel of memvault's own index alone (same model, same stored
  vectors: ``search_dense`` with the filter ``rank_chunks`` uses, depth 100).
- ``keyword``: memvault's keyword (sparse, CJK-aware) channel alone (``search_sparse``, same
  filter, depth 100). dense and keyword show what the hybrid fusion adds.
- ``bm25``: Okapi BM25 (bench.baselines.Bm25: Snowball-stemmed English words, CJK
  character bigrams) over the same title + text.

Index throughput: chunks/s of the indexing path against chunks/s of the bare embedder on
a sample of ``--raw-sample`` chunks, and ``embed_share_of_index``: the share of the
indexing run spent inside the embedder, timed in the same run (1.0 = indexing adds
nothing to bare embedding; robust to other load). ``--throughput PATH...`` instead runs
``index_docs`` on real files and compares with bare embedding of the same chunks.

The index lives in a temporary data folder unless ``--data-dir`` keeps it; a kept index
is reused (not re-embedded) when it holds exactly the set's documents, one chunk each,
with the loaded model; the result then says ``reused`` and carries the index figures of
the run that built it (``bench-beir-<set>.json`` beside the data, when present).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import anyio  # noqa: E402

from bench.common import DEFAULT_MODEL_CACHE, data_dir, md_table, write_result  # noqa: E402
from memvault.policy.keywords import DOC_KEYWORD_SCHEME  # noqa: E402
from memvault.service.documents.collection import (  # noqa: E402
    DOCS_COLLECTION,
    embed_text,
    ensure_docs_collection,
)
from memvault.service.documents.indexing import (  # noqa: E402
    PreparedFile,
    embed_batch,
    index_docs,
    prepare_batch,
    remove_documents,
    store_batch,
)
from memvault.service.documents.points import drop_orphans  # noqa: E402
from memvault.service.documents.search import rank_chunks  # noqa: E402
from memvault.service.indexing import embed_query, keyword_vector  # noqa: E402
from memvault.service.runtime import Runtime  # noqa: E402
from memvault.service.scope.project import make_scope  # noqa: E402
from memvault.storage.docs import ChunkRow, DocFile, DocStore  # noqa: E402
from memvault.storage.vectors.base import VectorFilter  # noqa: E402

PROJECT = "bench"
SYSTEMS = ("memvault", "dense", "keyword", "bm25")
DEPTH = 100  # ranked list length per query and per channel
DEFAULT_SETS = ("scifact", "cmrc2018_zh")


def say(msg: str) -> None:
    """Progress line on stderr."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def read_jsonl(path: Path) -> Iterator[dict]:
    """Rows of a JSON-lines file."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_qrels(folder: Path) -> dict[str, dict[str, int]]:
    """{query id: {doc id: grade > 0}} from ``qrels/test.tsv`` or the only qrels file.

    Raises SystemExit when there is no test.tsv and not exactly one other .tsv.
    """
    qdir = folder / "qrels"
    path = qdir / "test.tsv"
    if not path.exists():
        files = sorted(qdir.glob("*.tsv"))
        if len(files) != 1:
            raise SystemExit(f"{qdir}: no test.tsv and {len(files)} other .tsv files; cannot choose")
        path = files[0]
    out: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            qid, did, grade = line.rstrip("\n").split("\t")[:3]
            if int(grade) > 0:
                out.setdefault(qid, {})[did] = int(grade)
    return out


def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """nDCG@k with trec_eval's linear gain: sum rel_i / log2(i + 1), i 1-based; 0.0 if no rels."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k; 0.0 if no rels."""
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def doc_text(row: dict) -> str:
    """Title and text of a BEIR corpus row, as one chunk."""
    title = (row.get("title") or "").strip()
    text = (row.get("text") or "").strip()
    return f"{title}\n{text}" if title else text



async def write_documents(rt: Runtime, store: DocStore, files: Sequence[PreparedFile]) -> int:
    """Embed every chunk of ``files`` in short model runs, upsert the points, then commit file by
    file: the steps ``index_docs`` runs side by side, one after the other. Returns the number of
    chunks embedded."""
    emb, _ = await rt.ready()
    batch = await rt.run_pure(prepare_batch, emb, files)
    await embed_batch(rt, emb, batch)
    await store_batch(rt, store, batch)
    return len(batch.texts)

@dataclass
class BeirSet:
    """One BEIR-layout set in memory.

    name: collection name (folder name, ``_`` -> ``-``); docs: [(doc id, chunk text)] in
    corpus order; queries: {query id: text}; qrels: {query id: {doc id: grade > 0}};
    qids: the queries scored (those with qrels, in qrels order).
    """

    name: str
    folder: str
    docs: list[tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    qids: list[str] = field(default_factory=list)


def load_set(folder: Path, max_queries: int | None = None) -> BeirSet:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and the qrels of one BEIR folder (first ``max_queries``)."""
    queries = {r["_id"]: r["text"] for r in read_jsonl(folder / "queries.jsonl")}
    qrels = read_qrels(folder)
    qids = [q for q in qrels if q in queries][: max_queries or None]
    docs = [(str(r["_id"]), doc_text(r)) for r in read_jsonl(folder / "corpus.jsonl")]
    return BeirSet(folder.name.replace("_", "-")[:64], str(folder), docs, queries, qrels, qids)


def slice_set(bs: BeirSet, queries: int, others: int, *, stride: int = 5) -> BeirSet:
    """A deterministic sub-set: the first ``queries`` scored queries, their relevant documents,
    and ``others`` further documents (every ``stride``-th non-relevant one in corpus order)."""
    qids = bs.qids[:queries]
    gold = {d for q in qids for d in bs.qrels[q]}
    rest = [d for d in bs.docs if d[0] not in gold][::stride][:others]
    docs = [d for d in bs.docs if d[0] in gold] + rest
    return BeirSet(f"{bs.name}-slice"[:64], bs.folder, docs, bs.queries, {q: bs.qrels[q] for q in qids}, qids)


def time_embedder(emb) -> list[float]:
    """Wrap ``emb.embed_passages`` so that the returned one-item list accumulates its seconds.

    Seconds inside the embedder / seconds of the whole indexing run is the share of the
    run that bare embedding of the same chunks takes, measured on the same chunks in the
    same run (robust to other load on the machine, unlike two separate timings).
    """
    spent = [0.0]
    real = emb.embed_passages

    def timed(texts):
        t = time.perf_counter()
        try:
            return real(texts)
        finally:
            spent[0] += time.perf_counter() - t

    emb.embed_passages = timed
    return spent


def docs_filter(name: str) -> VectorFilter:
    """The engine filter ``rank_chunks`` applies for ``collection=name`` in the bench project."""
    return VectorFilter(projects=[PROJECT], status=None, path_prefix=None, equals={"collection": name})


def _figures_path(rt: Runtime, name: str) -> Path:
    return rt.settings.storage.data_dir / f"bench-beir-{name}.json"


async def index_set(rt: Runtime, bs: BeirSet, *, raw_sample: int, progress: bool) -> dict[str, Any]:
    """Index ``bs`` (one chunk per document) unless the data dir already holds exactly it.

    Returns the index figures: reused (bool), chunks, and for a fresh index seconds,
    chunks/s, bare-embedder chunks/s on ``raw_sample`` chunks, embed share, load averages.
    """
    from tqdm import tqdm

    s = rt.settings
    emb, vectors = await rt.ready()
    await ensure_docs_collection(rt, rebuild_on_mismatch=True)
    want = {d for d, _ in bs.docs}
    async with DocStore.connect(s.db_path) as store:
        files = await store.files(PROJECT, bs.name)
        chunks = sum(len(f.chunk_ids) for f in files.values())
        points = await rt.run_sync(vectors.count, DOCS_COLLECTION, docs_filter(bs.name))
        if (chunks == points == len(want) and {f.path for f in files.values()} == want
                and {f.embedding_model for f in files.values()} == {emb.model_id}):
            fig = _figures_path(rt, bs.name)
            earlier = json.loads(fig.read_text()) if fig.is_file() else None
            say(f"{bs.name}: reusing the index in {s.storage.data_dir} ({chunks} chunks, {emb.model_id})")
            return {"reused": True, "chunks": chunks, "model": emb.model_id, "earlier_run": earlier}
        if files:
            say(f"{bs.name}: {len(files)} files / {points} points in {s.storage.data_dir} do not match; re-indexing")
            await remove_documents(rt, store, list(files.values()))
            await drop_orphans(rt, store)

        spent = time_embedder(emb)
        load0 = os.getloadavg()
        t0 = time.perf_counter()
        now = rt.clock.now()
        batch: list[PreparedFile] = []
        done = 0
        bar = tqdm(total=len(bs.docs), desc=f"{bs.name} index", unit="doc", disable=not progress)
        for did, text in bs.docs:
            chunk = ChunkRow(id=str(uuid.uuid4()), seq=0, heading=None, symbol=None, start_line=1,
                             end_line=text.count("\n") + 1, page=None, text=text)
            doc = DocFile(project=PROJECT, collection=bs.name, abs_path=f"beir:{bs.name}/{did}", path=did,
                          size=len(text.encode()), mtime=0.0, content_hash="", format="text",
                          embedding_model=emb.model_id, keyword_scheme=DOC_KEYWORD_SCHEME, indexed_at=now)
            batch.append(PreparedFile(doc, [chunk]))
            if len(batch) >= s.documents.docs_batch_chunks:
                n = await write_documents(rt, store, batch)
                done += n
                bar.update(n)
                batch = []
        n = await write_documents(rt, store, batch)
        done += n
        bar.update(n)
        bar.close()
        index_s = time.perf_counter() - t0
        embed_s, spent[0] = spent[0], 0.0
    load1 = os.getloadavg()

    sample = [t for _, t in bs.docs[:raw_sample]]
    raw_rate = None
    if sample:
        t2 = time.perf_counter()
        await rt.run_sync(emb.embed_passages, sample)
        raw_rate = len(sample) / (time.perf_counter() - t2)
    index_rate = done / index_s
    out = {
        "reused": False, "chunks": done, "model": emb.model_id,
        "index_seconds": round(index_s, 1), "index_chunks_per_s": round(index_rate, 2),
        "raw_embed_sample": len(sample), "raw_embed_chunks_per_s": raw_rate and round(raw_rate, 2),
        "index_vs_raw": raw_rate and round(index_rate / raw_rate, 3),
        "embed_seconds_in_index": round(embed_s, 1), "embed_share_of_index": round(embed_s / index_s, 3),
        "loadavg_before": load0, "loadavg_after": load1,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    say(f"{bs.name}: indexed {done} chunks in {index_s:.1f}s ({index_rate:.1f} chunks/s, "
        f"{embed_s:.1f}s in the embedder)")
    _figures_path(rt, bs.name).write_text(json.dumps(out, indent=2))
    return out


async def rank_set(rt: Runtime, bs: BeirSet, systems: Sequence[str], *, progress: bool
                   ) -> tuple[dict[str, dict[str, list[str]]], dict[str, float]]:
    """Rank every scored query of ``bs`` with each system (the index must hold ``bs``).

    Returns ({system: {query id: doc ids, best first, <= DEPTH}}, {system: mean ms per query}).
    """
    from tqdm import tqdm

    from bench.baselines import Bm25

    _, vectors = await rt.ready()
    ranked: dict[str, dict[str, list[str]]] = {sys_: {} for sys_ in systems}
    spent: dict[str, float] = {sys_: 0.0 for sys_ in systems}
    flt = docs_filter(bs.name)
    channels = [c for c in ("dense", "keyword") if c in systems]
    async with DocStore.connect(rt.settings.db_path) as store:
        for qid in tqdm(bs.qids, desc=f"{bs.name} queries", unit="q", disable=not progress):
            q = bs.queries[qid]
            if "memvault" in systems:
                t = time.perf_counter()
                hits = await rank_chunks(rt, [PROJECT], q, limit=DEPTH, collection=bs.name)
                ranked["memvault"][qid] = [row.file.path for row, _ in hits if row.file is not None]
                spent["memvault"] += time.perf_counter() - t
            if channels:
                t = time.perf_counter()
                lists: dict[str, list] = {}
                if "dense" in channels:
                    qvec = await embed_query(rt, q)
                    lists["dense"] = await rt.run_sync(vectors.search_dense, DOCS_COLLECTION, qvec.tolist(), flt,
                                                       DEPTH)
                if "keyword" in channels:
                    sparse = keyword_vector(q, query=True)
                    lists["keyword"] = (await rt.run_sync(vectors.search_sparse, DOCS_COLLECTION, sparse, flt, DEPTH)
                                        if sparse.indices else [])
                rows = await store.chunks([h.id for hs in lists.values() for h in hs])
                for c, hs in lists.items():
                    ranked[c][qid] = [rows[h.id].file.path for h in hs if h.id in rows and rows[h.id].file]
                for c in channels:
                    spent[c] += (time.perf_counter() - t) / len(channels)
    if "bm25" in systems:
        t = time.perf_counter()
        ids = [d for d, _ in bs.docs]
        bm = Bm25([text for _, text in bs.docs])
        for qid in bs.qids:
            ranked["bm25"][qid] = [ids[i] for i in bm.search(bs.queries[qid], DEPTH)]
        spent["bm25"] = time.perf_counter() - t  # includes building the BM25 index
    n = max(1, len(bs.qids))
    return ranked, {sys_: round(1000 * v / n, 1) for sys_, v in spent.items()}


def score(bs: BeirSet, ranked: dict[str, list[str]]) -> dict[str, float]:
    """Mean nDCG@10 and Recall@100 over ``bs.qids`` (a query missing from ``ranked`` scores 0)."""
    n = max(1, len(bs.qids))
    return {
        "ndcg@10": round(sum(ndcg_at(ranked.get(q, []), bs.qrels[q], 10) for q in bs.qids) / n, 4),
        "recall@100": round(sum(recall_at(ranked.get(q, []), bs.qrels[q], DEPTH) for q in bs.qids) / n, 4),
    }


async def run_set(rt: Runtime, bs: BeirSet, systems: Sequence[str], *, raw_sample: int, progress: bool
                  ) -> dict[str, Any]:
    """Index (or reuse) ``bs``, rank its queries with ``systems``, score them. Returns the set's figures."""
    say(f"{bs.name}: {len(bs.docs)} documents, {len(bs.qids)} queries with qrels")
    index = await index_set(rt, bs, raw_sample=raw_sample, progress=progress)
    ranked, query_ms = await rank_set(rt, bs, systems, progress=progress)
    scores = {sys_: {**score(bs, ranked[sys_]), "query_ms_mean": query_ms[sys_]} for sys_ in systems}
    return {"set": bs.folder, "name": bs.name, "documents": len(bs.docs), "queries": len(bs.qids),
            "index": index, "loadavg_after_queries": os.getloadavg(), "scores": scores}


async def run_throughput(rt: Runtime, paths: list[Path]) -> dict[str, Any]:
    """index_docs on real files, then the bare embedder on the same chunk texts."""
    emb, _ = await rt.ready()
    scope = make_scope(rt.settings.server.user_id, PROJECT, "argument")
    spent = time_embedder(emb)
    load0 = os.getloadavg()
    res = await index_docs(rt, scope, [str(p) for p in paths], "throughput", paths, cite_bases=paths)
    async with DocStore.connect(rt.settings.db_path) as store:
        files = await store.files(PROJECT, "throughput")
        texts = [embed_text(c) for f in files.values() for c in await store.chunks_of(f.id)]
    embed_s = spent[0]
    t0 = time.perf_counter()
    await rt.run_sync(emb.embed_passages, texts)
    raw_s = time.perf_counter() - t0
    index_rate = res.chunks_embedded / res.seconds
    raw_rate = len(texts) / raw_s
    return {
        "paths": [str(p) for p in paths], "files": res.added, "chunks": res.chunks_embedded,
        "index_seconds": res.seconds, "index_chunks_per_s": round(index_rate, 2),
        "raw_embed_seconds": round(raw_s, 1), "raw_embed_chunks_per_s": round(raw_rate, 2),
        "index_vs_raw": round(index_rate / raw_rate, 3),
        "embed_seconds_in_index": round(embed_s, 1), "embed_share_of_index": round(embed_s / res.seconds, 3),
        "loadavg_before": load0, "loadavg_after": os.getloadavg(), "model": emb.model_id,
    }


def table(sets: list[dict[str, Any]]) -> str:
    """Markdown: one row per (set, system): nDCG@10, Recall@100, ms/query; memvault rows add the index figures."""
    body = []
    for st in sets:
        ix = st["index"]
        fig = (ix.get("earlier_run") or {}) if ix.get("reused") else ix
        for sys_, m in st["scores"].items():
            extra: list[Any] = [None] * 4
            if sys_ == "memvault":
                extra = [fig.get("index_chunks_per_s"), fig.get("index_vs_raw"), fig.get("embed_share_of_index"),
                         ("reused" + (" (earlier run's figures)" if ix.get("earlier_run") else ""))
                         if ix.get("reused") else "built"]
            body.append([st["name"], sys_, st["queries"], m["ndcg@10"], m["recall@100"], f"{m['query_ms_mean']:.0f}",
                         *[f"{x:.2f}" if isinstance(x, float) else x for x in extra]])
    return md_table(["set", "system", "queries", "nDCG@10", "Recall@100", "ms/query", "index chunks/s",
                     "index / raw embed", "embed share of index", "index"], body)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected sets (or ``--throughput``); print the table; write JSON; return the payload."""
    from bench.mv import open_runtime

    if args.sets or args.throughput:
        sets = list(args.sets)
    else:
        sets = [data_dir(args.data) / n for n in DEFAULT_SETS]
    systems = tuple(args.systems)
    if "memvault" not in systems:
        systems = ("memvault", *systems)  # the index is memvault's; its own ranking is the reference row
    progress = not args.no_progress
    payload: dict[str, Any] = {"protocol": __doc__.strip(),
                               "driver": "in-process: index_docs's prepare_batch / embed_batch / store_batch, rank_chunks",
                               "systems": list(systems), "depth": DEPTH, "sets": []}
    t0 = time.perf_counter()

    async def go(folder_dir: Path) -> None:
        rt = await open_runtime(folder_dir, args.model_cache)
        try:
            payload["data_dir"] = str(folder_dir) if args.data_dir else "(temporary)"
            # Blocking path calls below are fine: this driver runs one step at a time and no
            # other task waits on the event loop meanwhile.
            if args.throughput:
                paths = [q.resolve() for q in args.throughput]  # noqa: ASYNC240
                payload["throughput"] = await run_throughput(rt, paths)
            for folder in sets:
                bs = load_set(Path(folder).resolve(), args.queries)  # noqa: ASYNC240
                if args.slice:
                    nq, others = (int(x) for x in args.slice.split(":"))
                    bs = slice_set(bs, nq, others)
                payload["sets"].append(await run_set(rt, bs, systems, raw_sample=args.raw_sample, progress=progress))
        finally:
            await rt.close()

    if args.data_dir is not None:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        await go(args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="memvault-beir-") as tmp:
            await go(Path(tmp))
    payload["elapsed_s"] = round(time.perf_counter() - t0, 1)
    path = write_result("beir", payload)
    if payload["sets"]:
        print(table(payload["sets"]))
    if "throughput" in payload:
        tp = payload["throughput"]
        print(md_table(["paths", "files", "chunks", "index chunks/s", "raw embed chunks/s", "index / raw embed",
                        "embed share of index"],
                       [[" ".join(tp["paths"]), tp["files"], tp["chunks"], tp["index_chunks_per_s"],
                         tp["raw_embed_chunks_per_s"], tp["index_vs_raw"], tp["embed_share_of_index"]]]))
    print(f"\n{payload['elapsed_s']} s. JSON: {path}")
    return payload


def add_args(p: argparse.ArgumentParser) -> None:
    """Command-line flags of this bench."""
    p.add_argument("sets", nargs="*", type=Path,
                   help="BEIR-layout folders (corpus.jsonl, queries.jsonl, qrels/); default <data>/scifact "
                        "<data>/cmrc2018_zh")
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--queries", type=int, default=None, help="only the first N queries with qrels")
    p.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--slice", metavar="QUERIES:OTHERS",
                   help="a fixed sub-set per set: the first QUERIES scored queries, their relevant documents and "
                   "OTHERS further documents (every 5th other one), for before/after comparisons under load")
    p.add_argument("--raw-sample", type=int, default=256, help="chunks embedded bare for the throughput ratio")
    p.add_argument("--throughput", nargs="+", type=Path, metavar="PATH",
                   help="instead: index_docs these folders/files and compare with bare embedding")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="keep the index here and reuse it when it matches (default: a temp folder)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--no-progress", action="store_true")


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m bench.beir``."""
    p = argparse.ArgumentParser(prog="python -m bench.beir", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
