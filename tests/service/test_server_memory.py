"""End-to-end tests of remember / recall / forget through a real MCP client session.

Every test runs the real server in-process (real model, real SQLite file, real Qdrant
Edge) and talks to it with the SDK's client, as Claude Desktop or Claude Code would; a
"restart" is a new server on the same data dir after the first one has closed.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memvault.policy.units import SECONDS_PER_DAY
from memvault.service.scope.project import project_of_folder
from tests.conftest import CLIENT_NAME, call, call_error, db_rows, stored_bytes
from tests.corpus import filler_memories

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def file_bytes(data_dir: Path) -> bytes:
    """Every byte memvault keeps on disk (SQLite file, its WAL, the vector shards), each
    file's trailing NULs dropped (``stored_bytes``)."""
    return b"".join(stored_bytes(p) for p in sorted(data_dir.rglob("*")) if p.is_file() and "models" not in p.parts)


async def test_tools_listed_with_annotations_and_instructions(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"remember", "recall", "forget"} <= set(tools)
        # recall records access statistics (recency ranking reads them): not read-only, not destructive
        assert tools["recall"].annotations.read_only_hint is False
        assert tools["recall"].annotations.destructive_hint is False
        assert tools["forget"].annotations.destructive_hint is True
        assert tools["remember"].output_schema is not None
        props = tools["remember"].input_schema["properties"]
        assert {"content", "kind", "key", "tags", "importance", "ttl_days", "supersedes", "project", "source",
                "force"} <= set(props)
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "d" / "memvault.db").stat().st_mode & 0o777 == 0o600


async def test_remember_then_recall_across_restart(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        r = await call(c, "remember", content="The user prefers pnpm over npm for every JavaScript project",
                       kind="preference", key="pref.package_manager")
        assert r["status"] == "stored" and r["id"]
        assert r["scope"]["user_id"] == "local" and r["scope"]["project"] == ""
        first_id = r["id"]
    async with mcp_client(d) as c:
        got = await call(c, "recall", query="which package manager should I use?")
        assert got["memories"][0]["id"] == first_id
        assert got["memories"][0]["kind"] == "preference"
        assert got["memories"][0]["key"] == "pref.package_manager"
        assert got["memories"][0]["source"] == CLIENT_NAME  # no source given: the client's name
        assert got["scope"]["projects_read"] == [""]
    # the recall counted as an access
    count, last = db_rows(d, "SELECT access_count, last_accessed_at FROM memories WHERE id=?", (first_id,))[0]
    created = db_rows(d, "SELECT created_at FROM memories WHERE id=?", (first_id,))[0][0]
    assert count == 1 and last > created



async def test_source_defaults_to_the_client_name(tmp_path, mcp_client):
    async with mcp_client(client_name="claude-code") as c:
        plain = await call(c, "remember", content="The user reviews pull requests every morning", kind="fact")
        named = await call(c, "remember", content="The user reviews designs on Fridays", kind="fact",
                           source="meeting notes")
        got = await call(c, "recall", query="when does the user review things?", k=5)
        sources = {m["id"]: m["source"] for m in got["memories"]}
        assert sources[plain["id"]] == "claude-code" and sources[named["id"]] == "meeting notes"
    async with mcp_client() as c:  # another client on the same store
        got = await call(c, "recall", query="when does the user review things?", k=5)
        assert {m["id"]: m["source"] for m in got["memories"]}[plain["id"]] == "claude-code"
    assert db_rows(tmp_path / "d", "SELECT source FROM memories WHERE id=?", (plain["id"],)) == [("claude-code",)]


async def test_each_server_reads_its_own_clients_roots(tmp_path, mcp_client):
    """Two servers in one process, alive at once: each takes the project from its own client."""
    shop, blog = tmp_path / "src" / "shop", tmp_path / "src" / "blog"
    shop.mkdir(parents=True)
    blog.mkdir(parents=True)
    async with (mcp_client(tmp_path / "a", roots=[shop.as_uri()]) as a,
                mcp_client(tmp_path / "b", roots=[blog.as_uri()]) as b,
                mcp_client(tmp_path / "c") as none):
        ra = await call(a, "remember", content="The shop frontend uses SvelteKit", kind="fact")
        rb = await call(b, "remember", content="The blog frontend uses Astro", kind="fact")
        rn = await call(none, "remember", content="The user writes commit messages in English", kind="preference")
        # folders without git are named by their path: local:<name>-<hash>
        assert (ra["scope"]["project"], ra["scope"]["source"]) == (project_of_folder(shop).id, "roots")
        assert (rb["scope"]["project"], rb["scope"]["source"]) == (project_of_folder(blog).id, "roots")
        assert ra["scope"]["project_name"] == "shop" and rb["scope"]["project_name"] == "blog"
        assert (rn["scope"]["project"], rn["scope"]["source"]) == ("", "global")
    async with mcp_client(tmp_path / "a") as restarted:  # a new server asks its own client again
        got = await call(restarted, "recall", query="frontend framework")
        assert got["scope"]["projects_read"] == [""] and got["memories"] == []


async def test_roots_and_client_name_in_the_legacy_handshake(tmp_path, mcp_client):
    """Clients of the initialize-handshake era: roots arrive by a mid-call request."""
    shop = tmp_path / "src" / "shop"
    shop.mkdir(parents=True)
    async with mcp_client(roots=[shop.as_uri()], client_name="claude-desktop", mode="legacy") as c:
        r = await call(c, "remember", content="The shop frontend is deployed to Netlify", kind="fact")
        shop_id = project_of_folder(shop).id
        assert (r["scope"]["project"], r["scope"]["source"]) == (shop_id, "roots")
        got = await call(c, "recall", query="where is the shop frontend deployed?", k=3)
        assert got["memories"][0]["id"] == r["id"] and got["memories"][0]["source"] == "claude-desktop"
        md = (await c.read_resource("memvault://profile")).contents[0].text
        assert f"project `{shop_id}`" in md and "Netlify" in md

async def test_cross_lingual_recall_both_ways(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        zh = await call(c, "remember", content="用户喜欢深色主题", kind="preference")
        assert zh["status"] == "stored", zh
        for m in filler_memories(40):
            await call(c, "remember", content=m, force=True)
        got = await call(c, "recall", query="what theme does the user like?", k=3)
        assert zh["id"] in [m["id"] for m in got["memories"]]

        en = await call(c, "remember", content="The deploy script must run with Node 20, never Node 18",
                        kind="procedure")
        got = await call(c, "recall", query="部署脚本需要哪个 Node 版本？", k=3)
        assert en["id"] in [m["id"] for m in got["memories"]]


async def test_error_code_found_among_200(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        for m in filler_memories(200):
            r = await call(c, "remember", content=m, force=True)
            assert r["status"] in ("stored", "reinforced")
        target = await call(c, "remember", content="pnpm install failed in CI with ERR_PNPM_OUTDATED_LOCKFILE; "
                            "fixed by running pnpm install and committing pnpm-lock.yaml", kind="episode")
        got = await call(c, "recall", query="ERR_PNPM_OUTDATED_LOCKFILE", k=5)
        assert got["memories"][0]["id"] == target["id"]
        # Chinese word inside a sentence, found by the keyword channel.
        zh = await call(c, "remember", content="计费服务的数据库迁移使用逻辑复制，避免停机", kind="decision")
        got = await call(c, "recall", query="逻辑复制", k=3)
        assert got["memories"][0]["id"] == zh["id"]


async def test_supersede_by_key_keeps_history(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        a = await call(c, "remember", content="The user prefers tabs for indentation", kind="preference",
                       key="pref.indent")
        b = await call(c, "remember", content="The user prefers 4 spaces for indentation", kind="preference",
                       key="pref.indent")
        assert b["status"] == "superseded" and b["superseded_ids"] == [a["id"]]
        got = await call(c, "recall", query="indentation preference", k=5)
        ids = [m["id"] for m in got["memories"]]
        assert b["id"] in ids and a["id"] not in ids
        # explicit supersedes
        c1 = await call(c, "remember", content="Billing runs on MySQL 8", kind="fact")
        c2 = await call(c, "remember", content="Billing moved to Postgres 16 in March", kind="fact",
                        supersedes=[c1["id"]])
        assert c2["status"] == "superseded" and c2["superseded_ids"] == [c1["id"]]
        err = await call_error(c, "remember", content="Billing uses Postgres 17 now", supersedes=[c1["id"]])
        assert "not active" in err and c1["id"] in err
    status = dict(db_rows(d, "SELECT id, status FROM memories"))
    assert status[a["id"]] == "superseded" and status[b["id"]] == "active"
    actions = [r[0] for r in db_rows(d, "SELECT action FROM memory_history WHERE memory_id=? ORDER BY seq", (a["id"],))]
    assert actions == ["add", "supersede"]
    assert db_rows(d, "SELECT superseded_by FROM memories WHERE id=?", (a["id"],))[0][0] == b["id"]


async def test_dedup_exact_and_near(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        a = await call(c, "remember", content="We chose Postgres for the billing service", kind="decision")
        again = await call(c, "remember", content="  we chose Postgres for the billing service ", kind="decision")
        assert again["status"] == "reinforced" and again["id"] == a["id"]
        near = await call(c, "remember", content="We chose Postgres for the billing service.", kind="decision")
        assert near["status"] == "reinforced" and near["id"] == a["id"], near
        other = await call(c, "remember", content="We chose Redis for the session cache", kind="decision")
        assert other["status"] == "stored" and other["id"] != a["id"]
    assert db_rows(d, "SELECT access_count FROM memories WHERE id=?", (a["id"],))[0][0] >= 2


async def test_ttl_expiry_with_moved_clock(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        short = await call(c, "remember", content="The staging database is down for maintenance today",
                           kind="fact", ttl_days=1)
        assert short["expires_at"] is not None
        keep = await call(c, "remember", content="The staging database lives on host db-stg-2", kind="fact")
        assert keep["expires_at"] is None
        got = await call(c, "recall", query="staging database", k=5)
        assert short["id"] in [m["id"] for m in got["memories"]]
    async with mcp_client(d, clock_offset_s=2 * SECONDS_PER_DAY) as c:
        got = await call(c, "recall", query="staging database", k=5)
        ids = [m["id"] for m in got["memories"]]
        assert short["id"] not in ids and keep["id"] in ids
    # the start-up sweep purged it: no row, and no text in history
    assert db_rows(d, "SELECT COUNT(*) FROM memories WHERE id=?", (short["id"],))[0][0] == 0
    assert db_rows(d, "SELECT action FROM memory_history WHERE memory_id=? ORDER BY seq DESC LIMIT 1",
                   (short["id"],))[0][0] == "expire"
    assert b"down for maintenance" not in file_bytes(d)


async def test_users_and_projects_are_isolated(tmp_path, mcp_client):
    d = tmp_path / "d"
    repo = tmp_path / "work" / "shop"
    repo.mkdir(parents=True)
    await anyio.run_process(["git", "init", "-q", str(repo)])
    await anyio.run_process(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/shop.git"])
    async with mcp_client(d, roots=[repo.as_uri()], user_id="alice") as c:
        r = await call(c, "remember", content="The shop frontend uses SvelteKit", kind="fact")
        assert r["scope"]["project"] == "github.com/acme/shop" and r["scope"]["source"] == "roots"
        g = await call(c, "remember", content="Alice writes commit messages in English", kind="preference",
                       project="")
        assert g["scope"]["project"] == ""
        other = await call(c, "remember", content="The blog frontend uses Astro", kind="fact", project="blog")
        # min_relevance=0: every memory in scope comes back, however unrelated (this test is about scope)
        got = await call(c, "recall", query="which frontend framework", k=10, min_relevance=0)
        ids = {m["id"] for m in got["memories"]}
        assert r["id"] in ids and g["id"] in ids and other["id"] not in ids
        assert got["scope"]["projects_read"] == ["github.com/acme/shop", ""]
        only_global = await call(c, "recall", query="commit messages", project="", k=10)
        assert [m["id"] for m in only_global["memories"]] == [g["id"]]
        assert only_global["scope"]["projects_read"] == [""]
    async with mcp_client(d, user_id="bob", project="github.com/acme/shop") as c:
        got = await call(c, "recall", query="which frontend framework", k=10)
        assert got["memories"] == [] or all(m["id"] not in {r["id"], g["id"], other["id"]} for m in got["memories"])
        got = await call(c, "recall", query="commit messages", project="", k=10)
        assert all(m["id"] != g["id"] for m in got["memories"])
        none = await call(c, "forget", ids=[r["id"]], hard=True)
        assert none["count"] == 0  # alice's memory cannot be reached by bob
    async with mcp_client(d, user_id="alice", roots=[repo.as_uri()]) as c:
        got = await call(c, "recall", query="SvelteKit", k=3)
        assert got["memories"][0]["id"] == r["id"]


async def test_secret_declined_and_never_on_disk(tmp_path, mcp_client):
    d = tmp_path / "d"
    token = "ghp_Zx81TqL0pW4mN7vB2cR9yK3sD6fH1jA5uE0g"
    async with mcp_client(d) as c:
        r = await call(c, "remember", content=f"The GitHub token for CI is {token}", kind="fact", force=True)
        assert r["status"] == "declined" and r["id"] is None
        assert token not in r["reason"]
        r = await call(c, "remember", content="my database password is hunter2-Blue-Falcon", force=True)
        assert r["status"] == "declined"
        for where in ({"tags": [token]}, {"key": "ci." + token}, {"source": token}):
            r = await call(c, "remember", content="The CI pipeline needs a token to publish", force=True, **where)
            assert r["status"] == "declined", where
        ok = await call(c, "remember", content="CI secrets are kept in the GitHub repository settings", kind="fact")
        assert ok["status"] == "stored"
    blob = file_bytes(d)
    assert token.encode() not in blob and b"hunter2-Blue-Falcon" not in blob


HF_TOKEN = "h" + "f_" + "QlwomFyypQKlSGyOXFElwdYEWJTdfeMnfP"
SENDGRID_KEY = "S" + "G." + "4cW4skHa5Qy1_-gkUfd1W4" + "." + "OS8VD3hTXktDjQsreg04J3S57PVQzHlVScMfEDOMvKF"
DO_TOKEN = "do" + "p_v1_" + "3dc1654fa1a3c5400c31fb640e2937cc2c3f48aed75ce13496a73ba763ac648d"


async def test_new_secret_forms_declined_in_every_field_and_placeholders_stored(tmp_path, mcp_client):
    """Hugging Face, SendGrid and DigitalOcean tokens, a password in JSON or in Chinese: declined
    as content, tag, key or source; documentation examples and placeholders are stored."""
    d = tmp_path / "d"
    json_pass = '{"user": "admin", "pass": "Xk29!mq7"}'
    async with mcp_client(d) as c:
        for text in (f"the inference token is {HF_TOKEN}.", f"mail goes through {SENDGRID_KEY}",
                     f"doctl auth init -t {DO_TOKEN}", f"staging login {json_pass}", "数据库的密码是 Zh8!pq72，别外传"):
            r = await call(c, "remember", content=text, force=True)
            assert r["status"] == "declined" and r["id"] is None, text
        for where in ({"tags": [HF_TOKEN]}, {"key": "mail:" + SENDGRID_KEY}, {"source": DO_TOKEN},
                      {"tags": ["pass=Xk29!mq7"]}):
            r = await call(c, "remember", content="The mail relay needs an API key to send alerts", force=True,
                           **where)
            assert r["status"] == "declined", where
        for text in ("The AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id",
                     "The CI template sets GITHUB_TOKEN=gh" + "p_" + "x" * 36 + " as a placeholder",
                     "Deploy config reads password=${DB_PASSWORD} from the environment"):
            r = await call(c, "remember", content=text, force=True)
            assert r["status"] == "stored", (text, r["reason"])
    blob = file_bytes(d)
    for secret in (HF_TOKEN, SENDGRID_KEY, DO_TOKEN, "Xk29!mq7", "Zh8!pq72"):
        assert secret.encode() not in blob, secret


async def test_low_importance_declined_unless_forced(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        r = await call(c, "remember", content="thanks!", kind="note")
        assert r["status"] == "declined" and "force" in r["reason"]
        r = await call(c, "remember", content="thanks!", kind="note", force=True)
        assert r["status"] == "stored"


async def test_forget_soft_hard_dry_run_and_query_bar(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        a = await call(c, "remember", content="The user's cat is called Miso", kind="fact")
        b = await call(c, "remember", content="The user lives in Lisbon and works remotely", kind="fact")
        x = await call(c, "remember", content="Deploys happen every Tuesday at 10:00 UTC", kind="procedure",
                       tags=["ops"])
        err = await call_error(c, "forget")
        assert "at least one selector" in err and "ids" in err and "query" in err
        dry = await call(c, "forget", ids=[a["id"]], dry_run=True)
        assert dry["count"] == 1 and dry["dry_run"] and "Miso" in dry["forgotten"][0]["content_preview"]
        assert (await call(c, "recall", query="cat name"))["memories"][0]["id"] == a["id"]
        # a vague query is below the relevance bar: nothing forgotten
        vague = await call(c, "forget", query="stuff about the user", dry_run=True)
        assert vague["count"] == 0
        close = await call(c, "forget", query="The user's cat is called Miso", dry_run=True)
        assert [f["id"] for f in close["forgotten"]] == [a["id"]]
        # cosine cannot separate these two; the exact statement wins
        p1 = await call(c, "remember", content="The user prefers pnpm over npm", kind="preference")
        p2 = await call(c, "remember", content="The user prefers npm over pnpm", kind="preference")
        exact = await call(c, "forget", query="The user prefers pnpm over npm", dry_run=True)
        assert [f["id"] for f in exact["forgotten"]] == [p1["id"]] != [p2["id"]]
        # an explicit project narrows forget to that project (no global memories)
        await call(c, "remember", content="The shop uses Stripe for payments", kind="fact", project="shop")
        narrowed = await call(c, "forget", project="shop", kinds=["fact"], dry_run=True)
        assert narrowed["count"] == 1 and narrowed["forgotten"][0]["project"] == "shop"
        soft = await call(c, "forget", ids=[a["id"]])
        assert soft["count"] == 1
        assert a["id"] not in [m["id"] for m in (await call(c, "recall", query="cat name"))["memories"]]
        tagged = await call(c, "forget", tags=["ops"])
        assert [f["id"] for f in tagged["forgotten"]] == [x["id"]]
        hard = await call(c, "forget", ids=[b["id"], a["id"]], hard=True)
        assert hard["count"] == 2 and hard["hard"]
    assert db_rows(d, "SELECT COUNT(*) FROM memories WHERE id IN (?,?)", (a["id"], b["id"]))[0][0] == 0
    blob = file_bytes(d)
    assert b"Lisbon" not in blob and b"Miso" not in blob
    # soft-deleted memory keeps its history
    assert db_rows(d, "SELECT status FROM memories WHERE id=?", (x["id"],))[0][0] == "deleted"


async def test_capacity_evicts_lowest_retention(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d", capacity_per_scope=10) as c:
        low = await call(c, "remember", content="Temporary note: the coffee machine on floor 3 is broken",
                         kind="note", importance=0.05, force=True)
        for i in range(9):
            await call(c, "remember", content=f"Service number {i} listens on port {8000 + i}", kind="fact",
                       importance=0.8)
        r = await call(c, "remember", content="The metrics service listens on port 9090", kind="fact",
                       importance=0.8)
        assert r["status"] == "stored" and r["evicted_ids"] == [low["id"]]
        assert "capacity" in r["reason"]


async def test_bad_arguments_give_clear_errors_and_server_survives(tmp_path, mcp_client):
    async with mcp_client(tmp_path / "d") as c:
        assert "content is empty" in await call_error(c, "remember", content="   ")
        err = await call_error(c, "remember", content="x" * 1_000_000)
        assert "1000000 characters" in err and "limit of 20000" in err
        err = await call_error(c, "remember", content=12345)
        assert "content" in err and "valid string" in err
        err = await call_error(c, "remember", content="Valid content here", kind="gossip")
        assert "kind" in err and "'gossip'" in err and "'preference'" in err and "'note'" in err
        err = await call_error(c, "remember", content="Valid content here", ttl_days=-3)
        assert "ttl_days is -3" in err and "positive number of days" in err
        err = await call_error(c, "remember", content="Valid content here", importance=7)
        assert "importance is 7" in err and "between 0 and 1" in err
        assert "k is 0; it must be between 1 and 50" in await call_error(c, "recall", query="anything", k=0)
        assert "k is 1000000000; it must be between 1 and 50" in await call_error(c, "recall", query="anything",
                                                                                 k=10**9)
        assert "query is empty" in await call_error(c, "recall", query="")
        err = await call_error(c, "recall", query="x", since="last tuesday")
        assert "since" in err and "'last tuesday' is not a date" in err and "ISO 8601" in err
        err = await call_error(c, "forget", ids=["not-an-id"])
        assert "'not-an-id'" in err and "not a memory id" in err
        err = await call_error(c, "recall", query="x", project="a\x00b")
        assert "project" in err and "not allowed" in err and "printable" in err
        # still serving, nothing half-written
        r = await call(c, "remember", content="The API gateway is Kong", kind="fact")
        assert r["status"] == "stored"
        got = await call(c, "recall", query="api gateway")
        assert [m["content"] for m in got["memories"]] == ["The API gateway is Kong"]


async def test_reply_is_bounded(tmp_path, mcp_client, monkeypatch):
    import memvault.service.memory.recall

    monkeypatch.setattr(memvault.service.memory.recall, "CONTENT_BUDGET_CHARS", 300)
    monkeypatch.setattr(memvault.service.memory.recall, "REPLY_BUDGET_CHARS", 1000)
    async with mcp_client(tmp_path / "d") as c:
        long = "The release checklist: " + "; ".join(f"step {i}: verify artefact {i} checksum" for i in range(200))
        r = await call(c, "remember", content=long, kind="procedure")
        for i in range(6):
            await call(c, "remember", content=f"Release step note {i}: " + "verify checksums " * 30,
                       kind="note", force=True)
        got = await call(c, "recall", query="release checklist", k=10)
        assert got["truncated"] is True
        total = sum(len(m["content"]) for m in got["memories"])
        assert total <= 1000
        first = next(m for m in got["memories"] if m["id"] == r["id"])
        assert first["content_truncated"] and len(first["content"]) <= 300
