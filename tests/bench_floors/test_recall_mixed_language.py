"""Recall on a developer's store: Chinese sentences with English identifiers in them.

End to end through a real MCP client session on the real model. Eighteen memories as a
coding assistant stores them for one developer: pure Chinese, Chinese with identifiers
(``shop-web 的埋点用 PostHog ...``) and English. A Chinese sentence carrying identifiers is
Chinese (``policy.language``): it must neither take the cross-language stand-in that an
English memory gets for a Chinese question, nor outrank the Chinese memory that answers.
An identifier in a Chinese question (``SHOP-4091``) must find the English memory holding
it, and questions about facts never stored must be flagged ``nothing_relevant``.
"""

from __future__ import annotations

import pytest

from tests.conftest import call

pytestmark = pytest.mark.anyio

MEMORIES = (
    "周五下午不允许上线生产环境。",
    "新同事入职第一周要完成安全培训。",
    "支付服务的超时时间设置为十五秒。",
    "代码评审意见要在一天之内回复。",
    "每月第三个周五下午有团队技术分享。",
    "测试环境的数据库每周日凌晨重置一次。",
    "shop-web 的埋点用 PostHog，事件名用 snake_case，例如 checkout_started。",
    "shop-api 的 OpenAPI 文档在 http://localhost:8040/docs，生成 SDK 用 make sdk。",
    "shop-web 的组件库用 shadcn/ui，新组件用 pnpm dlx shadcn@latest add 生成。",
    "shop-api 的 Grafana 看板叫 'Shop / API'，重点看 p95_latency 和 error_rate。",
    "shop-pipeline 的 Kafka broker 在 localhost:29092，容器里是 kafka:9092。",
    "shop-api 生产部署在 AWS eu-west-1 的 ECS Fargate 上，用 terraform apply 发布。",
    "Commit messages follow Conventional Commits (feat:, fix:, chore:).",
    "The user prefers pnpm over npm for every JavaScript project.",
    "Error SHOP-4091 'duplicate idempotency key' came from retries reusing the key; each retry now makes a new key.",
    "The consumer lag spike came from max.poll.interval.ms being exceeded by slow inserts; "
    "max.poll.records is now 200.",
    "The user edits code in Neovim with LazyVim; give Neovim keybindings, not VS Code ones.",
    "Standup starts at 9:30 every weekday in the #shop-dev channel.",
)
# (question, index of the memory that answers it)
QUESTIONS = (
    ("周五可以发布到生产吗？", 0),
    ("新员工第一周要做什么？", 1),
    ("支付接口多久超时？", 2),
    ("评审意见多久要回复？", 3),
    ("技术分享是什么时候？", 4),
    ("测试库什么时候重置？", 5),
    ("提交信息有什么格式要求？", 12),
    ("装依赖用 npm 还是别的？", 13),
    ("SHOP-4091 这个错误是怎么回事？", 14),
    ("max.poll.interval.ms 超时的问题后来怎么解决的？", 15),
    ("用户用什么编辑器？", 16),
    ("站会几点开始？", 17),
)
NOT_STORED = ("生产环境的 Kubernetes 是哪个版本？", "谁是这个项目的产品经理？", "发票 PDF 用什么字体？")
# never stored, and each names a thing no memory mentions, close in topic to a stored one
# (not yet: "SHOP-5120 这个错误码是什么意思？" against the stored SHOP-4091 reads 0.62: the term
# lowers a near miss that close in meaning and words, it does not flag it)
NAMES_NOT_STORED = ("shop-web 的 Sentry DSN 配在哪个环境变量里？", "What is SHOP_CACHE_TTL set to in shop-api?",
                    "shop-api 的 Redis 缓存过期时间是多少？")


async def test_chinese_questions_find_their_memory_among_mixed_ones(mcp_client):
    async with mcp_client() as c:
        ids = [(await call(c, "remember", content=m, project="", force=True))["id"] for m in MEMORIES]
        assert len(set(ids)) == len(MEMORIES)
        ranks = {}
        for q, want in QUESTIONS:
            got = await call(c, "recall", query=q, k=10)
            order = [m["id"] for m in got["memories"]]
            ranks[q] = order.index(ids[want]) + 1 if ids[want] in order else None
        assert all(r is not None and r <= 3 for r in ranks.values()), ranks
        assert sum(r == 1 for r in ranks.values()) >= 10, ranks

        flagged = {}
        for q in NOT_STORED:
            got = await call(c, "recall", query=q, k=10)
            flagged[q] = (got["nothing_relevant"], got["memories"][0]["relevance"])
        # each is flagged (before the term-level language judgement none was; before the model's
        # placement of mixed texts, "发票 PDF 用什么字体？" read 0.39 against a mixed memory)
        assert all(f for f, _ in flagged.values()), flagged

        named = {}
        for q in NAMES_NOT_STORED:
            got = await call(c, "recall", query=q, k=10)
            named[q] = (got["nothing_relevant"], got["memories"][0]["relevance"])
        assert all(f for f, _ in named.values()), named
        # a name the store holds is no reason to doubt
        for q, _ in QUESTIONS[8:10]:
            got = await call(c, "recall", query=q, k=10)
            assert not got["nothing_relevant"], (q, got["memories"][0])
