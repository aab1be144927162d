"""The near-duplicate gate on a set of pairs, scored with the real embedding model.

``tests/data/dedup_pairs.jsonl`` holds pairs of memories, one per line:
``{"a": ..., "b": ..., "same": bool, "kind": category}``. ``same: false`` pairs are
distinct facts that look alike (C / C++ / C#, ``>=`` / ``<=``, -5 / 5, ports, units,
and / or, with / without, 深色 / 浅色, 不 / 没 ...); none may ever be merged.
``same: true`` pairs restate one fact (case, punctuation, whitespace, articles,
full-width forms, a trailing period, "please" ...); most should be merged.

The gate is ``is_near_duplicate`` with the cosine the model gives the pair (passage
embeddings, as ``remember`` compares them) and the configured threshold. A handful
of pairs also go through the real ``remember`` tool.

Figures: ``python -m pytest -q -s tests/bench_floors/test_dedup_pairs.py -k figures`` prints the
merges on each side.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memvault.policy.dedup import DEDUP_THRESHOLD, is_near_duplicate
from tests.conftest import call

PAIRS_FILE = Path(__file__).parents[1] / "data" / "dedup_pairs.jsonl"
THRESHOLD = DEDUP_THRESHOLD

# Share of the restatements the gate must merge (measured 98/106 = 0.925 with the bundled model;
# the 8 others have equal content words but a cosine of 0.93-0.969, below the threshold).
RESTATEMENT_FLOOR = 0.9


def load_pairs() -> list[dict]:
    return [json.loads(line) for line in PAIRS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_pair_set_is_big_enough_and_well_formed():
    pairs = load_pairs()
    distinct = [p for p in pairs if not p["same"]]
    same = [p for p in pairs if p["same"]]
    assert len(distinct) >= 200 and len(same) >= 100, (len(distinct), len(same))
    assert len({(p["a"], p["b"]) for p in pairs}) == len(pairs), "a pair is listed twice"
    kinds = {p["kind"] for p in distinct}
    assert {"language", "version", "sign", "negation", "function_word", "chinese", "unit", "operator"} <= kinds


@pytest.fixture(scope="module")
def scored(shared_embedder) -> list[tuple[dict, float, bool]]:
    """Every pair with its cosine and the gate's verdict."""
    pairs = load_pairs()
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    vecs = dict(zip(texts, shared_embedder.embed_passages(texts), strict=True))
    out = []
    for p in pairs:
        cos = float(vecs[p["a"]] @ vecs[p["b"]])
        out.append((p, cos, is_near_duplicate(p["b"], p["a"], cos, THRESHOLD)))
    return out


def _report(scored: list[tuple[dict, float, bool]]) -> str:
    distinct = [(p, c) for p, c, merged in scored if not p["same"] and merged]
    same = [(p, c, m) for p, c, m in scored if p["same"]]
    n_distinct = sum(1 for p, _, _ in scored if not p["same"])
    merged_same = sum(1 for _, _, m in same if m)
    lines = [f"distinct pairs merged: {len(distinct)}/{n_distinct}; "
             f"restatements merged: {merged_same}/{len(same)} ({merged_same / len(same):.3f}); "
             f"threshold {THRESHOLD}"]
    lines += [f"  MERGED distinct [{p['kind']}] cos={c:.3f}: {p['a']!r} / {p['b']!r}" for p, c in distinct]
    lines += [f"  kept apart restatement [{p['kind']}] cos={c:.3f}: {p['a']!r} / {p['b']!r}"
              for p, c, m in same if not m]
    return "\n".join(lines)


def test_figures(scored, capsys):
    with capsys.disabled():
        print("\n" + _report(scored))


def test_no_distinct_pair_is_merged(scored):
    merged = [(p, c) for p, c, m in scored if not p["same"] and m]
    assert not merged, _report(scored)


def test_distinct_pairs_look_alike_to_the_model(scored):
    """The set is hard: most distinct pairs pass the cosine gate alone, so the word gate decides."""
    distinct = [c for p, c, _ in scored if not p["same"]]
    above = sum(c >= THRESHOLD for c in distinct)
    assert above / len(distinct) >= 0.5, f"only {above}/{len(distinct)} distinct pairs reach cosine {THRESHOLD}"


def test_restatements_are_still_merged(scored):
    same = [m for p, _, m in scored if p["same"]]
    share = sum(same) / len(same)
    assert share >= RESTATEMENT_FLOOR, _report(scored)


# Through the real remember: the second write of each pair must be stored apart
# (distinct) or reinforce the first (restatement), and the reply must say so.
REMEMBERED_DISTINCT = [
    ("The user prefers tabs in C", "The user prefers tabs in C++"),
    ("The project requires Python >= 3.10", "The project requires Python <= 3.10"),
    ("Our SDK targets C#", "Our SDK targets F#"),
    ("The offset is -5", "The offset is 5"),
    ("The API accepts JSON and YAML", "The API accepts JSON or YAML"),
    ("Compile with debug symbols", "Compile without debug symbols"),
    ("用户喜欢深色主题", "用户不喜欢深色主题"),
    ("The link is 100 Mb", "The link is 100 MB"),
]
REMEMBERED_SAME = [
    ("The user prefers tabs in C++", "the user prefers tabs in C++."),
    ("Please use pnpm for installs", "Use pnpm for installs"),
    ("用户喜欢深色主题", "用户喜欢深色主题。"),
]


@pytest.mark.anyio
async def test_remember_keeps_distinct_facts_apart(mcp_client):
    async with mcp_client() as c:
        for a, b in REMEMBERED_DISTINCT:
            first = await call(c, "remember", content=a, kind="preference", force=True)
            second = await call(c, "remember", content=b, kind="preference", force=True)
            assert first["status"] == "stored", (a, first)
            assert second["status"] == "stored" and second["id"] != first["id"], (a, b, second)
            got = await call(c, "recall", query=b, k=10)
            assert b in [m["content"] for m in got["memories"]], (b, got["memories"])


@pytest.mark.anyio
async def test_remember_reinforces_restatements(mcp_client):
    async with mcp_client() as c:
        for a, b in REMEMBERED_SAME:
            first = await call(c, "remember", content=a, kind="preference", force=True)
            second = await call(c, "remember", content=b, kind="preference", force=True)
            assert second["status"] == "reinforced" and second["id"] == first["id"], (a, b, second)
            assert "restates an existing memory" in second["reason"], second
