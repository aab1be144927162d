"""CI-sized retrieval regression guard on public data.

A fixed slice of the benchmarks runs through memvault's real code path (in-process
remember / recall handlers, real model, real SQLite, real Qdrant Edge), with quality
floors a little below the values measured when this guard was written (see
docs/benchmarks.md). A change that breaks retrieval drops below a floor and fails.
Skipped when ../shared/bench (the data, never copied into the repo) is absent.
"""

from __future__ import annotations

import gzip
import json

import pytest

from bench.common import DEFAULT_DATA

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.bench]

LOCOMO_SAMPLE = "conv-30"  # the shortest of the 7 (369 turns, 81 questions of categories 1-4)
LME_QUESTIONS = 2  # round-robin over question types: one knowledge-update, one multi-session

# Floors: measured value minus a margin (measured values in the comments).
# LoCoMo conv-30, memvault, measured 2026-11-29: R@5 0.536, R@10 0.697, R@25 0.784; with
# convex fusion and the time-expression boost (2026-12-01): R@5 0.628, R@10 0.709; with the
# dense weight at 0.4 (2026-12-01): R@5 0.666, R@10 0.728, R@25 0.786; with conversation
# neighbours (2026-12-01): R@5 0.678, R@10 0.759, R@25 0.848 (the value before them fails R@10 and R@25).
FLOOR_LOCOMO = {"R@5": 0.65, "R@10": 0.73, "R@25": 0.81}
# LongMemEval 2 questions, measured 2026-11-29: session any@5 1.0, session nDCG@10 0.977, turn any@10 0.5;
# 2026-12-01 (dense weight 0.4, and 0.6 before it): 1.0, 0.989, 1.0
# (two questions: values move in steps of 0.5 for the recall metrics).
FLOOR_LME = {"session any@5": 0.99, "session ndcg@10": 0.85, "turn any@10": 0.45}


@pytest.fixture(autouse=True)
def _session_model(monkeypatch: pytest.MonkeyPatch, memo_model) -> None:
    """The benchmark runtimes use the session's model instead of loading a copy of their own
    (``memo_model``: each distinct text runs through it once a worker)."""
    import bench.mv

    monkeypatch.setattr(bench.mv, "shared_embedder", lambda _settings: memo_model)


def _need_data() -> None:
    if not (DEFAULT_DATA / "locomo_dev.json").is_file() or not (DEFAULT_DATA / "longmemeval_s_dev.json.gz").is_file():
        pytest.skip(f"benchmark data not found at {DEFAULT_DATA} (../shared/bench next to the repo)")


async def test_locomo_slice_recall_floor(model_cache):
    _need_data()
    from bench import locomo
    samples = json.loads((DEFAULT_DATA / "locomo_dev.json").read_text())
    sample = next(s for s in samples if s["sample_id"] == LOCOMO_SAMPLE)
    rows, stats = await locomo.run_conversation(sample, model_cache, ("memvault",), 25, progress=False)
    assert stats["questions"] == len(rows) > 50
    assert stats["statuses"].get("declined", 0) == 0, stats
    overall = locomo.summarise(rows, ("memvault",))["memvault"]["overall"]
    for metric, floor in FLOOR_LOCOMO.items():
        assert overall[metric] >= floor, f"LoCoMo {LOCOMO_SAMPLE} {metric} {overall[metric]:.3f} < floor {floor}"


async def test_longmemeval_slice_recall_floor(model_cache):
    _need_data()
    from bench import longmemeval
    with gzip.open(DEFAULT_DATA / "longmemeval_s_dev.json.gz", "rt") as f:
        items = longmemeval.selected(json.load(f), LME_QUESTIONS)
    results = [await longmemeval.run_question(it, model_cache, ("memvault",)) for it in items]
    summary = longmemeval.summarise(results, ("memvault",))["memvault"]
    assert summary["n"] == LME_QUESTIONS
    for metric, floor in FLOOR_LME.items():
        assert summary[metric] >= floor, f"LongMemEval {metric} {summary[metric]:.3f} < floor {floor}"


# CMRC 2018 zh slice through the documents path (bench.beir): the first 30 questions with
# qrels, their gold passages and 60 other passages (every 5th non-gold one in corpus
# order): 69 passages, ~15 s. The keyword floor guards the CJK keyword channel, which the
# hybrid alone would hide.
CMRC_QUESTIONS, CMRC_OTHERS = 30, 60
# Measured 2026-12-01 on this slice: nDCG@10 memvault 0.975, keyword channel alone 0.983
# (on the first 60 questions: 0.984 and 0.976; the full set: 0.981 and 0.978); with the dense
# weight at 0.4 (2026-12-01): memvault 0.983, keyword 0.983.
FLOOR_CMRC = {"memvault": 0.95, "keyword": 0.93}


async def test_cmrc_zh_slice_ndcg_floor(model_cache, tmp_path):
    folder = DEFAULT_DATA / "cmrc2018_zh"
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"benchmark data not found at {folder} (../shared/bench next to the repo)")
    from bench import beir
    from bench.mv import open_runtime
    bs = beir.slice_set(beir.load_set(folder), CMRC_QUESTIONS, CMRC_OTHERS)
    rt = await open_runtime(tmp_path / "data", model_cache)
    try:
        res = await beir.run_set(rt, bs, tuple(FLOOR_CMRC), raw_sample=0, progress=False)
    finally:
        await rt.close()
    assert res["queries"] == CMRC_QUESTIONS and res["index"]["chunks"] == len(bs.docs) > CMRC_OTHERS
    assert not res["index"]["reused"]
    for system, floor in FLOOR_CMRC.items():
        got = res["scores"][system]["ndcg@10"]
        assert got >= floor, f"CMRC-zh slice {system} nDCG@10 {got:.3f} < floor {floor}"
