"""Private and shared memories: two agents of one user on one runtime, through real MCP sessions.

Two in-process servers share one Runtime (as the owner process serves every client with
one), each reached by an SDK client reporting its own name; the agent is that name, or
``MEMVAULT_AGENT_ID``. One test runs the real owner process with two forwarded clients
that differ only in ``MEMVAULT_AGENT_ID``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from tests.conftest import call, call_error, db_rows
from tests.process.test_owner import forwarded_client, owners_started

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PRIVATE = "The user keeps their draft notes for the billing refactor in the scratch folder notes/billing"
SHARED = "The billing service deploys with blue-green releases every Tuesday"


@asynccontextmanager
async def agents(folder: Path, embedder: Any, model_cache: Path, *names: str, **settings: Any
                 ) -> AsyncIterator[list[Any]]:
    """One connected client per name in ``names`` (the name each reports), all served by one
    running Runtime on the data dir ``folder``, as the owner serves its clients."""
    from mcp.client.client import Client
    from mcp_types import Implementation

    from memvault.mcp.app import build_server
    from memvault.mcp.lifespan import running_runtime

    s = Settings(data_dir=folder, model_cache_dir=model_cache, **settings)
    async with running_runtime(s, load_embedder=lambda _settings: embedder) as rt, AsyncExitStack() as stack:
        clients = []
        for name in names:
            server = build_server(s, runtime=rt, cwd=folder.parent)
            clients.append(await stack.enter_async_context(
                Client(server, client_info=Implementation(name=name, version="0"))))
        yield clients


def ids_of(result: dict[str, Any]) -> list[str]:
    return [m["id"] for m in result["memories"]]


async def test_a_private_memory_is_read_only_by_the_agent_that_wrote_it(tmp_path, shared_embedder, model_cache):
    d = tmp_path / "d"
    async with agents(d, shared_embedder, model_cache, "claude-code", "cursor") as (a, b):
        mine = await call(a, "remember", content=PRIVATE, visibility="private", force=True)
        shared = await call(b, "remember", content=SHARED, force=True)
        assert mine["status"] == "stored" and mine["scope"]["agent"] == "claude-code"

        # The writer reads both, and sees which is which.
        got = await call(a, "recall", query="where are the draft notes of the billing refactor", k=10)
        by_id = {m["id"]: m for m in got["memories"]}
        assert by_id[mine["id"]]["visibility"] == "private"
        got = await call(a, "recall", query="how does billing deploy", k=10)
        assert {m["id"]: m["visibility"] for m in got["memories"]}[shared["id"]] == "shared"

        # The other agent never meets the private one: recall, profile, history, forget, restore.
        got = await call(b, "recall", query="where are the draft notes of the billing refactor", k=50)
        assert mine["id"] not in ids_of(got) and shared["id"] in ids_of(got)
        assert all(m["visibility"] == "shared" for m in got["memories"])
        profile = await call(b, "get_profile")
        assert mine["id"] not in [f["id"] for f in profile["facts"]]
        assert profile["counts"] == {"fact": 1}  # its own shared fact only: the private one is not counted
        assert (await call(a, "get_profile"))["counts"] == {"fact": 2}
        assert f"no memory with id {mine['id']} for this user" in await call_error(b, "history", id=mine["id"])
        gone = await call(b, "forget", ids=[mine["id"]])
        assert gone["count"] == 0 and gone["forgotten"] == []
        by_text = await call(b, "forget", query=PRIVATE, dry_run=True)
        assert by_text["count"] == 0
        assert f"no memory with id {mine['id']} for this user" in await call_error(b, "restore", id=mine["id"])
        assert db_rows(d, "SELECT status, visibility, agent FROM memories WHERE id=?", (mine["id"],)) \
            == [("active", "private", "claude-code")]

        # Its own agent reads its history and may forget and restore it.
        own = (await call(a, "history", id=mine["id"]))["entries"]
        assert [(e["action"], e["visibility"]) for e in own] == [("added", "private")]
        assert (await call(a, "forget", ids=[mine["id"]]))["count"] == 1
        assert f"no memory with id {mine['id']}" in await call_error(b, "restore", id=mine["id"])
        assert (await call(a, "restore", id=mine["id"]))["status"] == "restored"
        got = await call(a, "recall", query="where are the draft notes of the billing refactor", k=10)
        assert mine["id"] in ids_of(got)

        # A supersedes naming it from the other agent is refused as for an unknown id.
        text = await call_error(b, "remember", content="Draft notes are kept in the wiki", supersedes=[mine["id"]],
                                force=True)
        assert "not active memories of this user" in text and mine["id"] in text

    # The command line acts for the user: export holds both, with visibility and writer.
    from memvault.service.transfer import export_lines

    records = [json.loads(x) for x in export_lines(Settings(data_dir=d), 0.0)][1:]
    memories = {r["id"]: (r["visibility"], r["agent"]) for r in records if r["type"] == "memory"}
    assert memories == {mine["id"]: ("private", "claude-code"), shared["id"]: ("shared", "cursor")}


async def test_keys_are_slots_per_owner_and_the_agents_own_value_wins_in_its_profile(
        tmp_path, shared_embedder, model_cache):
    d = tmp_path / "d"
    async with agents(d, shared_embedder, model_cache, "claude-code", "cursor") as (a, b):
        emacs = await call(b, "remember", content="The user edits code in Emacs", kind="preference",
                           key="pref.editor", project="")
        vim = await call(a, "remember", content="The user edits code in Vim when working with this agent",
                         kind="preference", key="pref.editor", project="", visibility="private")
        assert vim["status"] == "stored" and vim["superseded_ids"] == []  # the shared slot is not its

        assert (await call(a, "get_profile"))["preferences"]["pref.editor"]["id"] == vim["id"]
        assert (await call(a, "get_profile"))["preferences"]["pref.editor"]["visibility"] == "private"
        assert (await call(b, "get_profile"))["preferences"]["pref.editor"]["id"] == emacs["id"]
        md = (await a.read_resource("memvault://profile", cache_mode="bypass")).contents[0].text
        assert "- **pref.editor**: The user edits code in Vim when working with this agent _(private)_" in md, md
        md = (await b.read_resource("memvault://profile", cache_mode="bypass")).contents[0].text
        assert "- **pref.editor**: The user edits code in Emacs" in md and "Vim" not in md, md
        key_history = await call(b, "history", key="pref.editor")
        assert {e["memory_id"] for e in key_history["entries"]} == {emacs["id"]}

        # A shared write of the key replaces the shared value only; the private one stays.
        helix = await call(a, "remember", content="The user edits code in Helix", kind="preference",
                           key="pref.editor", project="")
        assert helix["status"] == "superseded" and helix["superseded_ids"] == [emacs["id"]]
        assert (await call(b, "get_profile"))["preferences"]["pref.editor"]["id"] == helix["id"]
        assert (await call(a, "get_profile"))["preferences"]["pref.editor"]["id"] == vim["id"]

        # The same text, private and shared, is two memories: each owner keeps its own.
        again = await call(b, "remember", content="The user edits code in Vim when working with this agent",
                           kind="preference", project="")
        assert again["status"] == "stored" and again["id"] != vim["id"]
    assert db_rows(d, "SELECT id FROM memories WHERE status='active' ORDER BY id") \
        == sorted([(vim["id"],), (helix["id"],), (again["id"],)])


async def test_visibility_is_checked_and_private_needs_an_agent(tmp_path, standin, standin_client):
    async with standin_client() as c:
        text = await call_error(c, "remember", content=SHARED, visibility="team")
        assert "visibility" in text and "'shared'" in text and "'private'" in text, text
    async with agents(tmp_path / "e", standin, tmp_path / "no-models", "") as (nameless,):
        text = await call_error(nameless, "remember", content=PRIVATE, visibility="private", force=True)
        assert "needs an agent" in text and "MEMVAULT_AGENT_ID" in text, text
        assert (await call(nameless, "remember", content=SHARED, force=True))["status"] == "stored"
    assert db_rows(tmp_path / "e", "SELECT visibility, agent FROM memories") == [("shared", None)]


async def test_the_agent_id_setting_names_the_agent_instead_of_the_client(tmp_path, standin_client):
    async with standin_client(agent_id="Reviewer") as c:
        got = await call(c, "remember", content=PRIVATE, visibility="private", force=True)
        assert got["scope"]["agent"] == "reviewer"  # casefolded, like the client names
    assert db_rows(tmp_path / "d", "SELECT agent, source FROM memories") == [("reviewer", "memvault-tests")]


async def test_two_forwarded_clients_with_their_own_agent_ids_are_two_agents_of_one_owner(
        data_dir, model_cache, shared_embedder):  # noqa: F811  (data_dir: test_owner's fixture)
    async with forwarded_client(data_dir, model_cache, agent_id="planner") as a, \
            forwarded_client(data_dir, model_cache, agent_id="coder") as b:
        mine = await call(a, "remember", content=PRIVATE, visibility="private", force=True)
        await call(b, "remember", content=SHARED, force=True)
        assert mine["scope"]["agent"] == "planner"
        got_b = await call(b, "recall", query="where are the draft notes of the billing refactor", k=50)
        got_a = await call(a, "recall", query="where are the draft notes of the billing refactor", k=50)
        assert mine["id"] not in ids_of(got_b) and got_b["scope"]["agent"] == "coder"
        assert mine["id"] in ids_of(got_a)
    assert owners_started(data_dir) == 1
    assert db_rows(data_dir, "SELECT agent, visibility FROM memories ORDER BY agent") \
        == [("coder", "shared"), ("planner", "private")]


async def test_consolidation_never_mixes_owners_or_shows_another_agents_private_memory(
        tmp_path, shared_embedder, model_cache):
    restating = ["The user prefers pnpm for JavaScript projects", "The user uses pnpm for JavaScript projects"]
    async with agents(tmp_path / "d", shared_embedder, model_cache, "claude-code", "cursor") as (a, b):
        private = [await call(a, "remember", content=t, visibility="private", force=True, project="")
                   for t in restating]
        shared = await call(b, "remember", content=restating[0] + " and monorepos", force=True, project="")
        shared2 = await call(b, "remember", content="The user uses pnpm for JavaScript projects and monorepos",
                             force=True, project="")
        private_ids = {p["id"] for p in private}
        shared_ids = {shared["id"], shared2["id"]}

        # The other agent's proposals name none of the private memories, nor their text.
        seen_by_b = await call(b, "consolidate", project="")
        assert not private_ids & set(json.dumps(seen_by_b).split('"'))
        assert [set(p["member_ids"]) for p in seen_by_b["proposals"]] == [shared_ids]

        # The writer's own run merges its private pair and the shared pair separately.
        applied = await call(a, "consolidate", project="", dry_run=False)
        groups = sorted((set(p["member_ids"]) for p in applied["proposals"]), key=len)
        assert private_ids in groups and shared_ids in groups and len(groups) == 2
        merged = db_rows(tmp_path / "d", "SELECT visibility, agent FROM memories WHERE status='active' ORDER BY 1")
        assert [m[0] for m in merged] == ["private", "shared"] and merged[0][1] == "claude-code"

        # The private merge stays private: the other agent never recalls it.
        got = await call(b, "recall", query="which package manager for JavaScript", k=20)
        assert all(m["visibility"] == "shared" for m in got["memories"])


async def test_a_project_named_after_a_folder_is_not_scanned_as_a_secret(tmp_path, standin):
    # memvault derives `local:<folder>-<hash>` itself: a folder named like a prefixed token
    # ("test_a_..._0-7b5f6702d9be") is no secret of anyone's and must not decline the write
    folder = tmp_path / "test_a_private_memory_is_read_0"
    folder.mkdir()
    async with agents(folder / "d", standin, tmp_path / "no-models", "claude-code") as (a,):
        got = await call(a, "remember", content=SHARED, force=True)
        assert got["status"] == "stored" and got["scope"]["source"] == "cwd", got
