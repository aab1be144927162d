"""Where the model places a text between two languages, for the language correction of dense scores.

A Chinese sentence written around English commands and identifiers (``Git 默认 rebase 不
merge：git config pull.rebase true``) counts more English words than CJK units, yet e5
embeds it beside Chinese text. Corrected as English text, its cosine to a Chinese question
was lifted above the Chinese memory that answers, for question after question: such
memories ranked first for unrelated Chinese questions. The correction now reads the CJK
weight of a text that mixes the two languages from the model (``service.centroids.
language_positions``, ``policy.language.passage_language``).
"""

from __future__ import annotations

import pytest

from memvault.policy.language import CJK, OTHER, cjk_weight, passage_language, script_class
from memvault.service.centroids import language_centroids, language_positions
from tests.conftest import recall_orders

MIXED = (
    "Git 默认 rebase 不 merge：git config pull.rebase true；PR 合并一律 squash merge。",
    "Docker 默认用 buildx：docker buildx bake --push；base image 一律 distroless。",
    "Git hooks 用 lefthook：lefthook install；commit 前跑 eslint --fix 和 prettier --write。",
    "CI 跑在 GitHub Actions：lint、test 和 build 三个 job；main 上 merge 后自动 deploy 到 staging。",
)


def test_passage_weight_is_the_texts_own_for_one_language_and_the_models_for_a_mix() -> None:
    assert passage_language("上线前要先跑完回归测试。", 0.2) == (CJK, 1.0)
    assert passage_language("Deploys go through Argo CD.", 0.7) == (OTHER, 0.0)
    mixed = MIXED[0]
    assert 0.0 < cjk_weight(mixed) < 0.5
    assert passage_language(mixed, None) == (script_class(mixed), cjk_weight(mixed))
    assert passage_language(mixed, 0.9) == (CJK, 0.9)
    assert passage_language(mixed, 1.3) == (CJK, 1.0) and passage_language(mixed, -0.2) == (OTHER, 0.0)


def test_the_model_places_chinese_sentences_with_english_words_beside_chinese(shared_embedder) -> None:
    texts = {"en": "Merges into main are always squash merges; rebase locally before pushing.",
             "zh": "合并到主干一律压缩合并，推送之前先在本地变基。",
             **{f"mixed{n}": t for n, t in enumerate(MIXED)}}
    vecs = dict(zip(texts, shared_embedder.embed_passages(list(texts.values())), strict=True))
    pos = language_positions({k: list(map(float, v)) for k, v in vecs.items()}, language_centroids(shared_embedder))
    assert pos["en"] < 0.5 < pos["zh"], pos
    for n, t in enumerate(MIXED):
        # more English words than Chinese by count, Chinese to the model
        assert cjk_weight(t) < 0.5 < pos[f"mixed{n}"], (t, pos)


STORE = (
    *MIXED,
    "每周三下午是组里的代码评审时间，有问题当面说。",
    "上线前必须在预发环境把下单流程完整走一遍。",
    "新人入职第一周先跟着老同事结对，不单独改线上代码。",
    "节假日前两天不安排任何发布。",
    "周报每周五下班前发到群里，写清楚下周计划。",
    "值班的人手机要保持开机，十五分钟内响应告警。",
    "The payments service times out after 15 seconds.",
    "Standup is at 10:00 every weekday in the #core channel.",
    "The user prefers tabs over spaces in Go code.",
)
QUESTIONS = (
    ("评审会是星期几？", 4),
    ("发版之前要验证什么？", 5),
    ("新同事刚来能直接改线上吗？", 6),
    ("放假前能上线吗？", 7),
    ("周报什么时候交？", 8),
    ("告警多久内要有人理？", 9),
)


@pytest.mark.anyio
async def test_chinese_memories_with_many_english_words_do_not_outrank_the_chinese_answer(mcp_client):
    async with mcp_client() as c:
        ids, orders = await recall_orders(c, STORE, [q for q, _ in QUESTIONS])
    ranks = {q: (orders[q].index(ids[want]), min(orders[q].index(ids[n]) for n in range(len(MIXED))))
             for q, want in QUESTIONS}
    # the answer above every mixed memory, for every question; first for all but one (one
    # pure Chinese memory shares a question's words, "上线前", with another's answer)
    assert all(answer < mixed for answer, mixed in ranks.values()), ranks
    assert sum(answer == 0 for answer, _ in ranks.values()) >= len(QUESTIONS) - 1, ranks
