"""End-to-end tests of the profile, task state, episodes, deictic recall, resources and
the recall_context prompt, through a real MCP client session.

Real server in-process, real model, real SQLite file, real Qdrant Edge, as in
tests/service/test_server_memory.py.
"""

from __future__ import annotations

import json

import pytest

from memvault.policy.units import SECONDS_PER_DAY
from memvault.service.scope.project import project_of_folder
from tests.conftest import call, call_error, db_rows
from tests.corpus import filler_memories

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DAY = SECONDS_PER_DAY


async def test_listed_with_annotations(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"get_profile", "set_task_state", "get_task_state"} <= set(tools)
        assert tools["get_profile"].annotations.read_only_hint is True
        assert tools["get_task_state"].annotations.read_only_hint is True
        assert tools["set_task_state"].annotations.read_only_hint is False
        assert tools["set_task_state"].annotations.destructive_hint is False
        props = tools["set_task_state"].input_schema["properties"]
        assert {"task_id", "state", "patch", "title", "status", "expected_version", "ttl_days", "outcome"} <= set(props)
        assert "memvault://profile" in [str(r.uri) for r in (await c.list_resources()).resources]
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert "memvault://tasks/{task_id}" in templates
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert [a.name for a in prompts["recall_context"].arguments] == ["topic"]


async def test_profile_from_keyed_memories_supersession_and_project_override(tmp_path, mcp_client):
    shop = tmp_path / "src" / "shop"
    shop.mkdir(parents=True)
    shop_id = project_of_folder(shop).id  # a folder without git: local:shop-<hash of its path>
    async with mcp_client(tmp_path / "d", roots=[shop.as_uri()]) as c:
        en = await call(c, "remember", content="The user wants answers in English", kind="preference",
                        key="pref.language", project="")
        zh = await call(c, "remember", content="用户希望用中文回答", kind="preference", key="pref.language", project="")
        assert zh["status"] == "superseded" and zh["superseded_ids"] == [en["id"]]
        g = await call(c, "remember", content="The user runs tests with pytest", kind="preference",
                       key="pref.test_runner", project="")
        p = await call(c, "remember", content="In the shop project tests run with vitest", kind="preference",
                       key="pref.test_runner")
        assert p["scope"]["project"] == shop_id and p["scope"]["source"] == "roots"
        assert p["scope"]["project_name"] == "shop"
        fact = await call(c, "remember", content="The shop frontend is built with Vite and deployed to Netlify",
                          kind="fact", importance=0.9)

        prof = await call(c, "get_profile")
        assert prof["scope"]["project"] == shop_id and prof["scope"]["projects_read"] == [shop_id, ""]
        lang = prof["preferences"]["pref.language"]
        assert lang["id"] == zh["id"] and lang["value"] == "用户希望用中文回答"
        assert lang["won"] == "global" and lang["overrides"] is None and lang["updated_at"]
        runner = prof["preferences"]["pref.test_runner"]
        assert runner["id"] == p["id"] and runner["won"] == "project" and runner["project"] == shop_id
        assert runner["overrides"]["id"] == g["id"]
        assert [f["id"] for f in prof["facts"]] == [fact["id"]]
        assert prof["counts"] == {"fact": 1, "preference": 3}

        # global view: the global runner wins, the project one is not visible
        glob = await call(c, "get_profile", project="")
        assert glob["preferences"]["pref.test_runner"]["id"] == g["id"]
        assert glob["preferences"]["pref.test_runner"]["won"] == "global"

        # a newer value under the key shows at once (no second copy to drift)
        zh2 = await call(c, "remember", content="The user wants answers in Japanese", kind="preference",
                         key="pref.language", project="")
        prof = await call(c, "get_profile")
        assert prof["preferences"]["pref.language"]["id"] == zh2["id"]
        await call(c, "forget", ids=[p["id"]])
        prof = await call(c, "get_profile")
        assert prof["preferences"]["pref.test_runner"]["id"] == g["id"]

        # the resource: Markdown, same scope as the tools (the session's roots)
        md = (await c.read_resource("memvault://profile", cache_mode="bypass")).contents[0]
        assert md.mime_type == "text/markdown"
        assert "# Profile" in md.text and f"project `{shop_id}`" in md.text and "from roots" in md.text
        assert "**pref.language**: The user wants answers in Japanese" in md.text
        assert "Vite and deployed to Netlify" in md.text


async def test_task_state_patch_versions_conflict_size_history(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        t = await call(c, "set_task_state", task_id="t1", title="Upgrade the API to v2",
                       state={"a": {"b": "c"}, "keep": [1, 2], "gone": "soon"})
        assert (t["version"], t["status"], t["created"]) == (1, "active", True)
        assert t["scope"]["project"] == "" and t["expires_at"]
        # RFC 7396: nested merge, null removes, arrays replace
        t = await call(c, "set_task_state", task_id="t1", patch={"a": {"b": "d", "c": None}, "gone": None,
                                                                  "keep": [3], "current_step": 2})
        assert t["version"] == 2 and t["created"] is False
        assert t["state"] == {"a": {"b": "d"}, "keep": [3], "current_step": 2}
        assert t["title"] == "Upgrade the API to v2" and t["step"] == "step 2"

        err = await call_error(c, "set_task_state", task_id="t1", patch={"x": 1}, expected_version=1)
        assert "version conflict" in err and "current_version=2" in err
        err = await call_error(c, "set_task_state", task_id="t1", state={"x": 1}, patch={"y": 2})
        assert "not both" in err
        err = await call_error(c, "set_task_state", task_id="t1", patch={"blob": "x" * 70_000})
        assert "65536 bytes" in err
        err = await call_error(c, "set_task_state", task_id="new", state={}, expected_version=3)
        assert "current_version=0" in err
        err = await call_error(c, "set_task_state", task_id="t1", outcome="shipped")
        assert "status='done'" in err

        t = await call(c, "set_task_state", task_id="t1", status="blocked", expected_version=2)
        assert (t["version"], t["status"], t["state"]["current_step"]) == (3, "blocked", 2)

        got = await call(c, "get_task_state", task_id="t1", include_history=True)
        assert got["task"]["version"] == 3
        assert [h["version"] for h in got["history"]] == [3, 2, 1]
        assert got["history"][2]["state"]["gone"] == "soon"
        listed = await call(c, "get_task_state")
        assert [x["task_id"] for x in listed["tasks"]] == ["t1"] and "state" not in listed["tasks"][0]
        err = await call_error(c, "get_task_state", task_id="nope")
        assert "no task 'nope'" in err

        res = (await c.read_resource("memvault://tasks/t1", cache_mode="bypass")).contents[0]
        body = json.loads(res.text)
        assert body["task"]["version"] == 3 and body["task"]["state"]["keep"] == [3]

        # task state is working memory, not memory: it never shows in recall
        rec = await call(c, "recall", query="Upgrade the API to v2")
        assert rec["memories"] == []
    # failed writes changed nothing
    assert db_rows(d, "SELECT version FROM tasks WHERE task_id='t1'") == [(3,)]
    assert db_rows(d, "SELECT COUNT(*) FROM task_history WHERE task_id='t1'") == [(3,)]


async def test_idle_ttl_and_retention_with_moved_clock(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        await call(c, "set_task_state", task_id="old", title="Idle task", state={"n": 1})
        await call(c, "set_task_state", task_id="long", title="Long task", state={"n": 2}, ttl_days=30)
        await call(c, "set_task_state", task_id="fin", title="Finished task", state={}, status="done")
        assert [t["task_id"] for t in (await call(c, "get_task_state"))["tasks"]] == ["long", "old"]
    async with mcp_client(d, clock_offset_s=8 * DAY) as c:
        assert [t["task_id"] for t in (await call(c, "get_task_state"))["tasks"]] == ["long"]
        assert "no task 'old'" in await call_error(c, "get_task_state", task_id="old")
        assert [t["task_id"] for t in (await call(c, "get_task_state", include_done=True))["tasks"]] == ["long", "fin"]
        assert [t["task_id"] for t in (await call(c, "get_profile"))["open_tasks"]] == ["long"]
        # a write sweeps: the expired row and its history are purged
        await call(c, "set_task_state", task_id="other", title="Other", state={})
        assert db_rows(d, "SELECT COUNT(*) FROM tasks WHERE task_id='old'") == [(0,)]
        assert db_rows(d, "SELECT COUNT(*) FROM task_history WHERE task_id='old'") == [(0,)]
        # the same id starts over
        again = await call(c, "set_task_state", task_id="old", title="Idle task, again", state={})
        assert again["version"] == 1 and again["created"] is True
    async with mcp_client(d, clock_offset_s=31 * DAY) as c:
        assert "no task 'fin'" in await call_error(c, "get_task_state", task_id="fin")
        assert "no task 'long'" in await call_error(c, "get_task_state", task_id="long")


async def test_done_with_outcome_leaves_an_episode_found_by_paraphrase(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        for m in filler_memories(30):
            await call(c, "remember", content=m, force=True)
        await call(c, "set_task_state", task_id="flaky-checkout", title="Fix the flaky checkout integration test",
                   state={"approach": "pinned the container timezone to UTC and froze time with freezegun",
                          "current_step": "run it 50 times"})
        done = await call(c, "set_task_state", task_id="flaky-checkout", status="done",
                          outcome="the test passed 50 runs in a row")
        ep = done["episode"]
        assert ep["status"] == "stored" and done["episode_id"] == ep["id"]
        assert (await call(c, "get_task_state"))["tasks"] == []
        got = await call(c, "recall", query="how did we repair the unreliable checkout test?", k=3)
        top = {m["id"]: m for m in got["memories"]}
        assert ep["id"] in top
        m = top[ep["id"]]
        assert m["kind"] == "episode" and m["source"] == "task:flaky-checkout"
        assert m["content"].startswith("Task: Fix the flaky checkout integration test. Approach: pinned")
        assert m["content"].endswith("Outcome: the test passed 50 runs in a row.")
        fin = await call(c, "get_task_state", task_id="flaky-checkout")
        assert fin["task"]["status"] == "done" and fin["task"]["episode_id"] == ep["id"]


async def test_deictic_recall_resources_and_prompt(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        for m in filler_memories(100):
            await call(c, "remember", content=m, force=True)
        target = await call(c, "remember", content="decided to use logical replication for the billing migration",
                            kind="decision")
        assert target["status"] == "stored"
        no_task = await call(c, "recall", query="continue", k=3)
        assert "no open task" in no_task["query_note"]
        await call(c, "set_task_state", task_id="billing-pg", title="migrate billing to Postgres",
                   state={"steps": ["inventory tables", "set up replication", "cut over"], "current_step": 2})
        for q in ("continue", "上次那个方案"):
            got = await call(c, "recall", query=q, k=3)
            assert target["id"] in [m["id"] for m in got["memories"]], (q, got)
            assert "migrate billing to Postgres" in got["query_note"] and "billing-pg" in got["query_note"]
        plain = await call(c, "recall", query="logical replication")
        assert plain["query_note"] is None

        await call(c, "remember", content="The user prefers short answers", kind="preference", key="pref.style")
        res = await c.get_prompt("recall_context", {"topic": "billing database migration"})
        text = res.messages[0].content.text
        assert "# Profile" in text and "short answers" in text
        assert "logical replication for the billing migration" in text
        assert "`billing-pg` migrate billing to Postgres" in text and "step 2 of 3: set up replication" in text
        assert len(text) <= 8_000
        md = (await c.read_resource("memvault://profile", cache_mode="bypass")).contents[0].text
        assert "from global" in md and "billing-pg" in md


async def test_task_state_refuses_secrets(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        token = "ghp_Zx81TqL0pW4mN7vB2cR9yK3sD6fH1jA5uE0g"
        err = await call_error(c, "set_task_state", task_id="deploy", state={"notes": [f"token {token}"]})
        assert "state" in err and "GitHub token" in err and "keep secrets out" in err
        assert token not in err
        assert "no task 'deploy'" in await call_error(c, "get_task_state", task_id="deploy")  # nothing written
        ok = await call(c, "set_task_state", task_id="deploy", state={"step": 1}, title="Deploy the API")
        assert ok["version"] == 1 and ok["created"] is True
        hf = "h" + "f_" + "QlwomFyypQKlSGyOXFElwdYEWJTdfeMnfP"
        for bad in ({"state": {"db": {"user": "admin", "pass": "Xk29!mq7"}}}, {"patch": {"hf": hf}},
                    {"title": "rotate " + hf}, {"patch": {"note": "数据库密码：Zh8!pq72"}}):
            err = await call_error(c, "set_task_state", task_id="deploy", **bad)
            assert "keep secrets out" in err and "Xk29" not in err and hf not in err, (bad, err)
        same = await call(c, "get_task_state", task_id="deploy")
        assert same["task"]["version"] == 1 and same["task"]["state"] == {"step": 1}
