"""Deictic query detection and enrichment (pure)."""

from __future__ import annotations

import pytest

from memvault.policy.deixis import detect_deixis, enrich_query


@pytest.mark.parametrize("query", [
    "继续", "continue", "Continue.", "that plan", "上次那个方案", "the fix from before", "go on", "where were we?",
    "next step please", "接着做吧", "resume", "as before", "那个问题",
])
def test_pointing_queries_are_deictic(query: str) -> None:
    d = detect_deixis(query)
    assert d.deictic, (query, d)


def test_cues_are_reported() -> None:
    assert "上次" in detect_deixis("上次那个方案").cues
    assert "from before" in detect_deixis("the fix from before").cues


@pytest.mark.parametrize("query", [
    "pnpm", "ERR_PNPM_OUTDATED_LOCKFILE", "逻辑复制", "上次那个数据库方案", "that Postgres plan",
    "continue with the Postgres migration", "which package manager should I use?", "部署脚本需要哪个 Node 版本？",
    "",
    "continue " + "x" * 80,
])
def test_specific_queries_are_left_alone(query: str) -> None:
    assert not detect_deixis(query).deictic


def test_enrich_query_puts_task_first_and_keeps_the_query() -> None:
    q = enrich_query("continue", "migrate billing to Postgres", "step 2 of 4: set up logical replication")
    assert q == "migrate billing to Postgres. step 2 of 4: set up logical replication. continue"
    assert enrich_query("继续", "迁移计费库", None) == "迁移计费库. 继续"
    assert enrich_query("go on", "Fix CI", "fix ci") == "Fix CI. go on"
