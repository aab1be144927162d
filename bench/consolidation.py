"""Consolidation on a labelled set: are restatements merged, and distinct look-alikes never?

The set is ``tests/data/consolidation_set.jsonl``, one JSON object per line:

- ``{"type": "cluster", "lang": "en" | "zh", "texts": [...]}``: memories that restate one
  fact ("prefers pnpm" / "uses pnpm for every project" / "switched the monorepo to pnpm");
- ``{"type": "distinct", "a": ..., "b": ..., "kind": ...}``: two memories that look alike
  but say different things (port 8080 / 8081, Go / Python, Postgres 15 / 16, uses / does
  not use Docker, Alice / Bob, Friday / Monday, 深色 / 浅色 ...).

Two measurements:

1. store: every text of the set is remembered in one scope of a fresh data dir (real
   ``remember``, real index), then the real ``consolidate`` handler (dry run) proposes
   merges. Reported: cluster pair recall (labelled restatement pairs that end in one
   proposal), distinct pairs merged (must be 0: merge precision 1.0 on them), and
   cross-cluster merges (two texts of different clusters in one proposal, also never
   wanted);
2. band: the guard alone (``policy.consolidation.restates``) on the labelled pairs, with
   the model's cosines, at several floors of the cosine band: how the floor was calibrated.

Run: ``python -m bench.consolidation`` (about a minute on 2 cores). Prints two tables and
writes its JSON to bench/results.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result
from memvault.policy.consolidation import MIN_COSINE, fold, restates
from memvault.service.memory.consolidate import MAX_LIMIT, ConsolidateArgs, consolidate
from memvault.service.memory.models import Scope
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.runtime import Runtime

SET_FILE = Path(__file__).resolve().parent.parent / "tests" / "data" / "consolidation_set.jsonl"
FLOORS = (0.80, 0.85, 0.88, 0.90, 0.92, 0.95)
SCOPE = Scope(user_id="bench", project="consolidation", projects_read=["consolidation"], source="argument")
REPLY_BUDGET = 1_000_000
"""Reply budget of the measuring runtime: every proposal is listed (none left out by size)."""


@dataclass
class LabelledSet:
    """The labelled set: restatement clusters (lists of texts) and distinct pairs (a, b, kind)."""

    clusters: list[list[str]]
    distinct: list[tuple[str, str, str]]
    langs: list[str]

    @property
    def texts(self) -> list[str]:
        """Every text, once, in the file's order."""
        return list(dict.fromkeys([t for c in self.clusters for t in c]
                                  + [t for a, b, _ in self.distinct for t in (a, b)]))

    def cluster_pairs(self) -> list[tuple[str, str]]:
        """Every pair of texts within one cluster."""
        return [p for c in self.clusters for p in itertools.combinations(c, 2)]


def load_set(path: Path = SET_FILE) -> LabelledSet:
    """The labelled set at ``path``."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return LabelledSet(clusters=[r["texts"] for r in rows if r["type"] == "cluster"],
                       distinct=[(r["a"], r["b"], r["kind"]) for r in rows if r["type"] == "distinct"],
                       langs=[r["lang"] for r in rows if r["type"] == "cluster"])


async def measure_store(rt: Runtime, data: LabelledSet) -> dict[str, Any]:
    """Store every text in one scope of ``rt`` (a fresh data dir) and run the consolidate dry run.

    Returns counts: cluster pairs merged / total, distinct pairs merged (with the pairs),
    cross-cluster merges (with the pairs), proposals.
    """
    ids: dict[str, str] = {}
    for text in data.texts:
        res = await remember(rt, SCOPE, RememberArgs(content=text, kind="fact", force=True, importance=0.6))
        assert res.id is not None, res.reason
        ids[text] = res.id
    with whole_replies():
        res = await consolidate(rt, SCOPE, ConsolidateArgs(dry_run=True, limit=MAX_LIMIT), actor="bench")
    assert not res.truncated, "raise REPLY_BUDGET or split the set: proposals were left out"
    group = {mid: n for n, p in enumerate(res.proposals) for mid in p.member_ids}

    def together(a: str, b: str) -> bool:
        return ids[a] == ids[b] or (ids[a] in group and group.get(ids[a]) == group.get(ids[b]))

    pairs = data.cluster_pairs()
    same_cluster = {frozenset(p) for p in pairs}
    cluster_of = {t: n for n, c in enumerate(data.clusters) for t in c}
    cross = [(a, b) for a, b in itertools.combinations(data.texts, 2)
             if a in cluster_of and b in cluster_of and cluster_of[a] != cluster_of[b] and together(a, b)
             and frozenset((a, b)) not in same_cluster]
    distinct = [(a, b, k) for a, b, k in data.distinct if together(a, b)]
    merged = sum(together(a, b) for a, b in pairs)
    return {"cluster_pairs": len(pairs), "cluster_pairs_merged": merged, "pair_recall": merged / len(pairs),
            "distinct_pairs": len(data.distinct), "distinct_merged": len(distinct), "distinct_merged_pairs": distinct,
            "cross_cluster_merged": len(cross), "cross_cluster_pairs": cross, "proposals": len(res.proposals),
            "memories": res.scanned, "floor": MIN_COSINE}


async def measure_band(rt: Runtime, data: LabelledSet, floors: tuple[float, ...] = FLOORS) -> list[dict[str, Any]]:
    """The guard alone on the labelled pairs at each floor: pair recall and distinct pairs merged."""
    emb, _ = await rt.ready()
    texts = data.texts
    vecs = dict(zip(texts, await rt.run_sync(emb.embed_passages, texts), strict=True))
    folded = {t: fold(t) for t in texts}
    pairs = [(a, b, float(vecs[a] @ vecs[b])) for a, b in data.cluster_pairs()]
    distinct = [(a, b, float(vecs[a] @ vecs[b])) for a, b, _ in data.distinct]
    out = []
    for floor in floors:
        hit = sum(restates(folded[a], folded[b], c, floor) for a, b, c in pairs)
        bad = sum(restates(folded[a], folded[b], c, floor) for a, b, c in distinct)
        out.append({"floor": floor, "pair_recall": hit / len(pairs), "distinct_merged": bad})
    cos = sorted(c for _, _, c in pairs)
    dcos = sorted(c for _, _, c in distinct)
    out.append({"cluster_cosine_range": [cos[0], cos[-1]], "distinct_cosine_range": [dcos[0], dcos[-1]]})
    return out


@contextmanager
def whole_replies() -> Iterator[None]:
    """Within the block, consolidate's replies hold every proposal: its reply budget
    (``service.memory.consolidate.REPLY_BUDGET_CHARS``) is ``REPLY_BUDGET``; restored after."""
    import memvault.service.memory.consolidate as consolidate_module

    before = consolidate_module.REPLY_BUDGET_CHARS
    consolidate_module.REPLY_BUDGET_CHARS = REPLY_BUDGET
    try:
        yield
    finally:
        consolidate_module.REPLY_BUDGET_CHARS = before


async def open_measuring_runtime(data_dir: Path, model_cache: Path, **kw: Any) -> Runtime:
    """A loaded Runtime on ``data_dir`` (``measure_store`` runs consolidate on it with ``whole_replies``)."""
    from memvault.config import Settings

    settings = Settings(data_dir=data_dir, model_cache_dir=model_cache)
    rt = await Runtime.open(settings, **kw)
    await rt.load()
    await rt.ready()
    return rt


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--set", type=Path, default=SET_FILE, help="labelled set (JSON Lines)")


async def run(a: argparse.Namespace) -> dict[str, Any]:
    data = load_set(a.set)
    with tempfile.TemporaryDirectory(prefix="memvault-consolidation-") as tmp:
        rt = await open_measuring_runtime(Path(tmp) / "d", a.model_cache)
        try:
            store = await measure_store(rt, data)
            band = await measure_band(rt, data)
        finally:
            await rt.close()
    print(f"{len(data.clusters)} clusters ({data.langs.count('en')} en, {data.langs.count('zh')} zh), "
          f"{len(data.distinct)} distinct pairs, {store['memories']} memories in one scope\n")
    print(md_table(["measure (store, floor %.2f)" % store["floor"], "value"], [
        ["cluster pair recall", f"{store['cluster_pairs_merged']}/{store['cluster_pairs']} = {store['pair_recall']:.3f}"],
        ["distinct pairs merged", f"{store['distinct_merged']}/{store['distinct_pairs']}"],
        ["cross-cluster pairs merged", store["cross_cluster_merged"]],
        ["proposals", store["proposals"]],
    ]))
    for a_, b_, k in store["distinct_merged_pairs"]:
        print(f"  MERGED distinct [{k}]: {a_!r} / {b_!r}")
    print()
    print(md_table(["floor", "pair recall (guard)", "distinct merged (guard)"],
                   [[r["floor"], r["pair_recall"], r["distinct_merged"]] for r in band if "floor" in r]))
    ranges = band[-1]
    print(f"\ncosine ranges: restatement pairs {ranges['cluster_cosine_range'][0]:.3f}-"
          f"{ranges['cluster_cosine_range'][1]:.3f}, distinct pairs {ranges['distinct_cosine_range'][0]:.3f}-"
          f"{ranges['distinct_cosine_range'][1]:.3f}")
    payload = {"store": store, "band": band}
    print(f"written: {write_result('consolidation', payload)}")
    return payload


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.consolidation", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
