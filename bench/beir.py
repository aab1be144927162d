"""search_docs on BEIR-layout sets (nDCG@10, Recall@100) and indexing vs raw embedding throughput.

Usage (from the repository root)::

    python -m bench.beir ../shared/bench/scifact ../shared/bench/cmrc2018_zh
    python -m bench.beir ../shared/bench/scifact --queries 50          # quick look
    python -m bench.beir --throughput docs/ memvault/                  # real files through index_docs

BEIR mode: each corpus document (title + text) becomes ONE chunk written through the
same path as ``index_docs`` (``tools.docs.write_documents``: batch embedding, keyword
vectors, Qdrant Edge upsert, SQLite registry); each query goes through
``tools.docs.rank_chunks`` (the ranking behind ``search_docs``: dense + keyword, RRF).
Scores follow BEIR / trec_eval: nDCG@10 with linear gain over the qrels' grades,
Recall@100 = relevant found in the top 100 / relevant. The qrels file is
``qrels/test.tsv`` when present, else the only ``.tsv`` in ``qrels/``. The data are read
where they lie and never copied.

Throughput: chunks/s of the indexing path against chunks/s of the bare embedder on the
same texts (a sample of ``--raw-sample`` chunks in BEIR mode; every chunk in
``--throughput`` mode, where files are read, chunked and indexed by ``index_docs``), and
``embed_share_of_index``: the share of the indexing run spent inside the embedder, timed
in the same run (1.0 = indexing adds nothing to bare embedding; robust to other load).

Everything runs in a temporary data folder (``--data-dir`` to keep it); set
``MEMVAULT_MODEL_CACHE_DIR`` to reuse a converted model. Output: one JSON object per set
on stdout; progress on stderr.
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
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import anyio  # noqa: E402

from memvault.config import Settings  # noqa: E402
from memvault.server.scope import make_scope  # noqa: E402
from memvault.storage.docs import ChunkRow, DocFile, DocStore  # noqa: E402
from memvault.tools.docs import (  # noqa: E402
    PreparedFile,
    _embed_text,
    ensure_docs_collection,
    index_docs,
    rank_chunks,
    write_documents,
)
from memvault.tools.runtime import Runtime  # noqa: E402

PROJECT = "bench"


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
    """{query id: {doc id: grade > 0}} from ``qrels/test.tsv`` or the only qrels file."""
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


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    """nDCG@k with trec_eval's linear gain: sum rel_i / log2(i + 1), i 1-based."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


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


def doc_text(row: dict) -> str:
    """Title and text of a BEIR corpus row, as one chunk."""
    title = (row.get("title") or "").strip()
    text = (row.get("text") or "").strip()
    return f"{title}\n{text}" if title else text


async def run_beir(rt: Runtime, folder: Path, *, max_queries: int | None, raw_sample: int) -> dict:
    """Index one BEIR set as one chunk per document, run its queries, return the figures."""
    s = rt.settings
    name = folder.name.replace("_", "-")[:64]
    emb, _ = await rt.ready()
    await ensure_docs_collection(rt, rebuild_on_mismatch=True)
    corpus = list(read_jsonl(folder / "corpus.jsonl"))
    queries = {r["_id"]: r["text"] for r in read_jsonl(folder / "queries.jsonl")}
    qrels = read_qrels(folder)
    qids = [q for q in qrels if q in queries]
    if max_queries:
        qids = qids[:max_queries]
    say(f"{name}: {len(corpus)} documents, {len(qids)} queries with qrels")

    spent = time_embedder(emb)
    t0 = time.perf_counter()
    now = rt.clock.now()
    async with DocStore.connect(s.db_path) as store:
        batch: list[PreparedFile] = []
        done = 0
        for row in corpus:
            text = doc_text(row)
            chunk = ChunkRow(id=str(uuid.uuid4()), seq=0, heading=None, symbol=None, start_line=1,
                             end_line=text.count("\n") + 1, page=None, text=text)
            doc = DocFile(project=PROJECT, collection=name, abs_path=f"beir:{name}/{row['_id']}", path=row["_id"],
                          size=len(text.encode()), mtime=0.0, content_hash="", format="text",
                          embedding_model=emb.model_id, indexed_at=now)
            batch.append(PreparedFile(doc, [chunk]))
            if len(batch) >= s.docs_batch_chunks:
                done += await write_documents(rt, store, batch)
                batch = []
                el = time.perf_counter() - t0
                say(f"  indexed {done}/{len(corpus)} ({done / el:.1f} chunks/s)")
        done += await write_documents(rt, store, batch)
    index_s = time.perf_counter() - t0
    embed_s, spent[0] = spent[0], 0.0
    say(f"  indexed {done} chunks in {index_s:.1f}s ({embed_s:.1f}s of it in the embedder)")

    t1 = time.perf_counter()
    ndcg, rec = [], []
    for i, qid in enumerate(qids, 1):
        hits = await rank_chunks(rt, [PROJECT], queries[qid], limit=100, collection=name)
        ranked = [row.file.path for row, _ in hits if row.file is not None]
        ndcg.append(ndcg_at(ranked, qrels[qid], 10))
        rec.append(recall_at(ranked, qrels[qid], 100))
        if i % 100 == 0:
            say(f"  {i}/{len(qids)} queries, nDCG@10 so far {sum(ndcg) / len(ndcg):.4f}")
    query_s = time.perf_counter() - t1

    sample = [doc_text(r) for r in corpus[:raw_sample]]
    t2 = time.perf_counter()
    await rt.run_sync(emb.embed_passages, sample)
    raw_s = time.perf_counter() - t2
    index_rate = done / index_s
    raw_rate = len(sample) / raw_s if raw_s > 0 else float("nan")
    return {
        "set": str(folder), "documents": len(corpus), "queries": len(qids),
        "ndcg@10": round(sum(ndcg) / len(ndcg), 4), "recall@100": round(sum(rec) / len(rec), 4),
        "index_seconds": round(index_s, 1), "index_chunks_per_s": round(index_rate, 2),
        "raw_embed_sample": len(sample), "raw_embed_chunks_per_s": round(raw_rate, 2),
        "index_vs_raw": round(index_rate / raw_rate, 3),
        "embed_seconds_in_index": round(embed_s, 1), "embed_share_of_index": round(embed_s / index_s, 3),
        "query_ms_mean": round(1000 * query_s / max(1, len(qids)), 1),
        "model": emb.model_id,
    }


async def run_throughput(rt: Runtime, paths: list[Path]) -> dict:
    """index_docs on real files, then the bare embedder on the same chunk texts."""
    emb, _ = await rt.ready()
    scope = make_scope(rt.settings.user_id, PROJECT, "argument")
    spent = time_embedder(emb)
    res = await index_docs(rt, scope, [str(p) for p in paths], "throughput", paths, cite_bases=paths)
    async with DocStore.connect(rt.settings.db_path) as store:
        files = await store.files(PROJECT, "throughput")
        texts = [_embed_text(c) for f in files.values() for c in await store.chunks_of(f.id)]
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
        "model": emb.model_id,
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m bench.beir``."""
    p = argparse.ArgumentParser(prog="python -m bench.beir", description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="*", type=Path, help="BEIR-layout folders (corpus.jsonl, queries.jsonl, qrels/)")
    p.add_argument("--queries", type=int, default=None, help="only the first N queries with qrels")
    p.add_argument("--raw-sample", type=int, default=256, help="chunks embedded bare for the throughput ratio")
    p.add_argument("--throughput", nargs="+", type=Path, metavar="PATH",
                   help="instead: index_docs these folders/files and compare with bare embedding")
    p.add_argument("--data-dir", type=Path, default=None, help="keep the index here (default: a temp folder)")
    args = p.parse_args(argv)
    if not args.sets and not args.throughput:
        p.error("give BEIR folders or --throughput PATH...")

    async def run(data_dir: Path) -> None:
        rt = await Runtime.open(Settings(data_dir=data_dir))
        try:
            await rt.load()
            if args.throughput:
                out = await run_throughput(rt, [q.resolve() for q in args.throughput])
                sys.stdout.write(json.dumps(out) + "\n")
            for folder in args.sets:
                out = await run_beir(rt, folder.resolve(), max_queries=args.queries, raw_sample=args.raw_sample)
                sys.stdout.write(json.dumps(out) + "\n")
                sys.stdout.flush()
        finally:
            await rt.close()

    if args.data_dir is not None:
        anyio.run(run, args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="memvault-beir-") as tmp:
            anyio.run(run, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
