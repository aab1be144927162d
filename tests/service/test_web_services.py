"""The services behind the web page (``memvault.service.browse``, ``explain``, ``health``) on a real runtime.

Real SQLite, Qdrant Edge and model; memories written through ``remember`` as the tool
writes them. What the page shows is checked against what the tools would say.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from memvault.service import browse
from memvault.service.errors import Conflict, InvalidArgument
from memvault.service.memory.explain import explain
from memvault.service.memory.recall import rank
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope
from memvault.service.upkeep.health import health

pytestmark = pytest.mark.anyio
USER = "local"
GITHUB_PAT = "gh" + "p_" + "Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3Cd5Fg0Jh" + "AbCd"  # a fake token of the real shape


@pytest.fixture
async def rt(tmp_path: Path, model_cache: Path, memo_model: Any) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache),
                                 load_embedder=lambda _s: memo_model)
    await runtime.load()
    yield runtime
    await runtime.close()


async def _remember(rt: Runtime, content: str, project: str = "", **kw: Any) -> str:
    done = await remember(rt, make_scope(USER, project, "argument"), RememberArgs(content=content, force=True, **kw))
    assert done.id is not None, done.reason
    return done.id


async def test_pages_filters_and_states(rt: Runtime) -> None:
    ids = [await _remember(rt, f"The build agent number {i} runs on host rack-{i} in the basement", tags=["ci"])
           for i in range(27)]
    other = await _remember(rt, "The api project deploys with Helm charts", project="api", kind="decision",
                            tags=["ops"])
    first = await browse.list_memories(rt, USER, browse.Filters(), per_page=25)
    assert (first.total, first.pages, len(first.memories)) == (28, 2, 25)
    assert first.memories[0].id == other  # newest first
    second = await browse.list_memories(rt, USER, browse.Filters(), page=2, per_page=25)
    assert len(second.memories) == 3
    assert {m.id for m in first.memories + second.memories} == {*ids, other}

    api = await browse.list_memories(rt, USER, browse.Filters(project="api"))
    assert [m.id for m in api.memories] == [other] and api.memories[0].project_name == "api"
    assert (await browse.list_memories(rt, USER, browse.Filters(project="-"))).total == 27
    assert (await browse.list_memories(rt, USER, browse.Filters(kind="decision"))).total == 1
    assert (await browse.list_memories(rt, USER, browse.Filters(tag="ops"))).total == 1
    assert (await browse.list_memories(rt, USER, browse.Filters(until="2000-01-01"))).total == 0

    await browse.forget_memory(rt, USER, ids[0])
    gone = await browse.list_memories(rt, USER, browse.Filters(status="deleted"))
    assert [m.id for m in gone.memories] == [ids[0]] and gone.memories[0].status == "deleted"
    assert (await browse.list_memories(rt, USER, browse.Filters(status="all"))).total == 28
    assert (await browse.list_memories(rt, USER, browse.Filters())).total == 27
    assert (await browse.user_projects(rt, USER)) == [("", "global", 27), ("api", "api", 1)]


@pytest.mark.parametrize("filters, says", [
    (browse.Filters(status="gone"), "status 'gone' is not known; use one of: all, active, expired"),
    (browse.Filters(kind="thought"), "kind 'thought' is not known"),
    (browse.Filters(since="yesterday"), "since"),
    (browse.Filters(since="2026-02-01", until="2026-01-01"), "since is after until"),
])
async def test_a_bad_filter_is_refused_saying_what_is_allowed(rt: Runtime, filters: browse.Filters,
                                                              says: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        await browse.list_memories(rt, USER, filters)
    assert says in str(err.value)


async def test_a_bad_page_size_is_refused(rt: Runtime) -> None:
    with pytest.raises(InvalidArgument, match="per_page must be one of 25, 50, 100, got 7"):
        await browse.list_memories(rt, USER, browse.Filters(), per_page=7)


async def test_an_edit_is_a_new_version_through_remember_and_a_secret_is_refused(rt: Runtime) -> None:
    old = await _remember(rt, "Use 4 spaces in Python files", key="pref.indent", tags=["style"])
    done = await browse.edit_memory(rt, USER, old, browse.Edit(content="Use 4 spaces in Python, 2 in YAML",
                                                              key="pref.indent", tags="style, yaml",
                                                              importance="0.9", ttl_days="10"))
    assert done.status == "superseded" and done.superseded_ids == [old] and done.id != old
    assert done.id is not None
    new = await browse.memory_detail(rt, USER, done.id)
    assert (new.memory.key, new.memory.tags, new.memory.importance) == ("pref.indent", ["style", "yaml"], 0.9)
    assert new.memory.source == browse.UI_ACTOR and 9.9 < (new.memory.ttl_days_left or 0) <= 10
    was = await browse.memory_detail(rt, USER, old)
    assert was.memory.status == "superseded" and was.memory.superseded_by == done.id
    assert [e.action for e in was.history] == ["superseded", "added"]

    before = await browse.list_memories(rt, USER, browse.Filters(status="all"))
    refused = await browse.edit_memory(rt, USER, done.id, browse.Edit(content=f"deploy token {GITHUB_PAT}"))
    assert refused.status == "declined" and "GitHub token" in refused.reason
    after = await browse.list_memories(rt, USER, browse.Filters(status="all"))
    assert after.total == before.total
    with pytest.raises(Conflict, match="is superseded; restore it before editing it"):
        await browse.edit_memory(rt, USER, old, browse.Edit(content="anything"))
    with pytest.raises(InvalidArgument, match="importance must be a number, got 'high'"):
        await browse.edit_memory(rt, USER, done.id, browse.Edit(content="x y z", importance="high"))


async def test_an_edit_of_a_private_memory_stays_private_to_its_agent(rt: Runtime) -> None:
    scope = make_scope(USER, "", "argument", agent="cursor")
    done = await remember(rt, scope, RememberArgs(content="The draft pricing memo sits in notes/pricing",
                                                  force=True, visibility="private"))
    assert done.id is not None
    edited = await browse.edit_memory(rt, USER, done.id, browse.Edit(content="The pricing memo moved to docs/pricing"))
    assert edited.id is not None and edited.superseded_ids == [done.id]
    new = (await browse.memory_detail(rt, USER, edited.id)).memory
    assert (new.visibility, new.agent) == ("private", "cursor")
    other = await rank(rt, USER, [""], "where is the pricing memo", limit=10, reader="claude-code")
    mine = await rank(rt, USER, [""], "where is the pricing memo", limit=10, reader="cursor")
    assert edited.id not in [r.row.id for r in other] and edited.id in [r.row.id for r in mine]


async def test_the_list_and_search_filter_by_visibility(rt: Runtime) -> None:
    mine = await remember(rt, make_scope(USER, "", "argument", agent="cursor"),
                          RememberArgs(content="The scratch notes for the pricing memo are in notes/pricing",
                                       force=True, visibility="private"))
    shared = await _remember(rt, "The pricing memo is reviewed by finance every quarter")
    assert mine.id is not None
    for visibility, expect in (("private", {mine.id}), ("shared", {shared}), ("", {mine.id, shared})):
        page = await browse.list_memories(rt, USER, browse.Filters(visibility=visibility))
        assert {m.id for m in page.memories} == expect, visibility
        hits = await explain(rt, USER, "pricing memo", browse.check_filters(browse.Filters(visibility=visibility)))
        assert {h.memory.id for h in hits} == expect, visibility
    assert {m.visibility for m in (await browse.list_memories(rt, USER, browse.Filters())).memories} == {
        "private", "shared"}
    with pytest.raises(InvalidArgument, match="visibility 'secret' is not known; use one of: shared, private"):
        browse.check_filters(browse.Filters(visibility="secret"))


async def test_forget_then_restore_from_the_page(rt: Runtime) -> None:
    mid = await _remember(rt, "The staging database is reset every Sunday night")
    assert (await browse.forget_memory(rt, USER, mid)).count == 1
    assert (await browse.memory_detail(rt, USER, mid)).memory.status == "deleted"
    restored = await browse.restore_memory(rt, USER, mid)
    assert restored.previous_status == "deleted"
    detail = await browse.memory_detail(rt, USER, mid)
    assert detail.memory.status == "active"
    assert [e.action for e in detail.history] == ["restored", "forgotten", "added"]
    assert detail.history[0].actor == browse.UI_ACTOR


async def test_why_this_result_shows_recalls_own_order_and_each_part(rt: Runtime) -> None:
    await _remember(rt, "The team prefers pnpm over npm for JavaScript projects", key="pref.pm")
    await _remember(rt, "Deploys go out on Tuesdays after standup", kind="procedure")
    await _remember(rt, "Billing runs on PostgreSQL 16", project="billing", kind="decision")
    checked = browse.check_filters(browse.Filters())
    hits = await explain(rt, USER, "pnpm or npm for JavaScript", checked, limit=10)
    ranked = await rank(rt, USER, ["", "billing"], "pnpm or npm for JavaScript", limit=10)
    assert [x.memory.id for x in hits] == [r.row.id for r in ranked]
    top = hits[0]
    assert "pnpm" in top.memory.content and top.rank == 1
    assert top.dense_rank == 1 and top.keyword_rank == 1  # both channels put it first
    assert 0 < top.relevance <= 1 and top.recency == pytest.approx(1.0, abs=1e-3)
    assert top.score == pytest.approx(ranked[0].score, abs=1e-4)
    assert any(x.keyword_rank is None for x in hits)  # no shared word with the query: dense only
    only_billing = await explain(rt, USER, "which database", browse.check_filters(browse.Filters(project="billing")))
    assert [x.memory.project for x in only_billing] == ["billing"]
    with pytest.raises(InvalidArgument):
        await explain(rt, USER, "   ", checked)


async def test_health_checks_the_index_against_sqlite(rt: Runtime) -> None:
    await _remember(rt, "The office wifi is called orbit")
    checks = {c.name: c for c in await health(rt)}
    assert list(checks) == ["sqlite", "model", "vector index", "vector index disk"]
    assert all(c.ok for c in checks.values())
    assert checks["vector index"].detail == "1 points for 1 live memories"


PNPM = ["The user prefers pnpm", "The user uses pnpm for every project", "The user switched the monorepo to pnpm"]
DARK = ["The user prefers dark mode in the editor", "The user likes the editor in dark mode"]
DISTINCT = ["The API server listens on port 8080", "The API server listens on port 8081"]


async def _restatements(rt: Runtime) -> tuple[list[str], list[str], list[str]]:
    """Two groups of restatements and a distinct look-alike pair, in project ``shop``."""
    pnpm = [await _remember(rt, t, project="shop", kind="preference") for t in PNPM]
    dark = [await _remember(rt, t, project="shop", kind="preference") for t in DARK]
    apart = [await _remember(rt, t, project="shop") for t in DISTINCT]
    return pnpm, dark, apart


async def _statuses(rt: Runtime, ids: list[str]) -> list[tuple[str, str | None]]:
    return [((d := (await browse.memory_detail(rt, USER, i)).memory).status, d.superseded_by) for i in ids]


async def test_the_consolidation_view_applies_only_the_proposal_chosen(rt: Runtime) -> None:
    pnpm, dark, apart = await _restatements(rt)
    view = await browse.consolidation(rt, USER, "shop")
    groups = {frozenset(p.member_ids): p for p in view.result.proposals}
    assert set(groups) == {frozenset(pnpm), frozenset(dark)}  # the distinct pair is never proposed
    assert set(view.members) == {*pnpm, *dark} and view.members[pnpm[0]].content == PNPM[0]
    assert (await browse.consolidation(rt, USER, "")).result.proposals == []  # global: nothing there

    chosen = groups[frozenset(dark)]
    done = await browse.apply_proposals(rt, USER, "shop", [",".join(chosen.member_ids)])
    assert done.applied and [p.member_ids for p in done.proposals] == [chosen.member_ids]
    merged = done.proposals[0].merged_id
    assert merged is not None
    assert await _statuses(rt, dark) == [("superseded", merged)] * 2
    assert await _statuses(rt, pnpm + apart) == [("active", None)] * 5  # the other group stays as it was
    detail = await browse.memory_detail(rt, USER, merged)
    assert detail.memory.content == chosen.content and detail.merged_from == dark and detail.can_undo_merge
    left = await browse.consolidation(rt, USER, "shop")
    assert [set(p.member_ids) for p in left.result.proposals] == [set(pnpm)]


async def test_a_stale_proposal_is_refused_and_nothing_is_merged(rt: Runtime) -> None:
    pnpm, dark, _ = await _restatements(rt)
    shown = await browse.consolidation(rt, USER, "shop")
    pnpm_ids = next(p.member_ids for p in shown.result.proposals if set(p.member_ids) == set(pnpm))
    dark_ids = next(p.member_ids for p in shown.result.proposals if set(p.member_ids) == set(dark))

    await browse.forget_memory(rt, USER, dark[1])
    with pytest.raises(Conflict) as err:
        await browse.apply_proposals(rt, USER, "shop", [",".join(pnpm_ids), ",".join(dark_ids)])
    assert f"{dark[1]} is no longer active" in str(err.value) and "nothing was merged" in str(err.value)
    assert await _statuses(rt, pnpm) == [("active", None)] * 3  # all or nothing: the fresh one is not applied

    fourth = await _remember(rt, "The user always uses pnpm", project="shop", kind="preference")
    now = await browse.consolidation(rt, USER, "shop")
    assert any(fourth in p.member_ids for p in now.result.proposals), "the new restatement joins the group"
    with pytest.raises(Conflict, match="its memories now group as .*" + fourth):
        await browse.apply_proposals(rt, USER, "shop", [",".join(pnpm_ids)])
    assert await _statuses(rt, pnpm + [fourth]) == [("active", None)] * 4
    with pytest.raises(InvalidArgument, match="a proposal merges at least two memories"):
        await browse.apply_proposals(rt, USER, "shop", [pnpm[0]])
    with pytest.raises(InvalidArgument, match="choose at least one proposal"):
        await browse.apply_proposals(rt, USER, "shop", [])


async def test_undo_merge_brings_the_members_back_and_only_undoes(rt: Runtime) -> None:
    pnpm, _, apart = await _restatements(rt)
    view = await browse.consolidation(rt, USER, "shop")
    chosen = next(p for p in view.result.proposals if set(p.member_ids) == set(pnpm))
    merged = (await browse.apply_proposals(rt, USER, "shop", [",".join(chosen.member_ids)])).proposals[0].merged_id
    assert merged is not None

    undone = await browse.undo_merge(rt, USER, merged)
    assert undone.status == "merge_undone" and sorted(undone.restored_ids) == sorted(pnpm)
    assert undone.retired_ids == [merged]
    assert await _statuses(rt, pnpm) == [("active", None)] * 3
    detail = await browse.memory_detail(rt, USER, merged)
    assert detail.memory.status == "deleted" and not detail.can_undo_merge
    assert detail.history[0].actor == browse.UI_ACTOR
    found = await rank(rt, USER, ["shop"], "which package manager does the user use", limit=10)
    assert set(pnpm) <= {r.row.id for r in found} and merged not in {r.row.id for r in found}

    with pytest.raises(Conflict, match="is deleted; only an active memory that merged others"):
        await browse.undo_merge(rt, USER, merged)
    with pytest.raises(Conflict, match=f"memory {apart[0]} merged no memories"):
        await browse.undo_merge(rt, USER, apart[0])
    assert (await browse.memory_detail(rt, USER, apart[0])).memory.status == "active"


async def test_the_pages_apply_all_form_merges_every_group_and_a_stale_one_is_answered_409(rt: Runtime) -> None:
    """The routes on the real runtime (through the guard, as the browser posts): Apply all, then
    the same form again, now stale."""
    import httpx

    from memvault.web.app import PageContext, build_app
    from memvault.web.guard import Guard

    pnpm, dark, _ = await _restatements(rt)
    secret, port = "t" * 43, 8123
    app = Guard(build_app(PageContext(runtime=lambda: rt, user_id=USER, owner_status=dict), f"/{secret}"),
                secret, port)
    origin = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=origin,
                                 headers={"Origin": origin}) as web:
        page = await web.get(f"/{secret}/consolidate", params={"project": "shop"})
        assert page.status_code == 200 and "Apply all 2 merges" in page.text
        form = {"project": "shop", "p": [",".join(pnpm), ",".join(dark)]}
        done = await web.post(f"/{secret}/consolidate", data=form)
        assert done.status_code == 303 and "/consolidate?project=shop&merged=" in done.headers["location"]
        merged = done.headers["location"].split("merged=")[1].split("&")[0].split("%2C")
        assert await _statuses(rt, pnpm) == [("superseded", merged[0])] * 3
        assert await _statuses(rt, dark) == [("superseded", merged[1])] * 2
        shown = await web.get(done.headers["location"])
        assert f'href="/{secret}/m/{merged[0]}"' in shown.text and "No memories of this project restate" in shown.text

        again = await web.post(f"/{secret}/consolidate", data=form)
        assert again.status_code == 409 and "no longer stands" in again.text and "nothing was merged" in again.text


async def test_an_edited_memory_names_the_version_it_replaced_and_back(rt: Runtime) -> None:
    old = await _remember(rt, "The staging cluster runs Kubernetes 1.29", key="infra.k8s")
    done = await browse.edit_memory(rt, USER, old, browse.Edit(content="The staging cluster runs Kubernetes 1.31",
                                                              key="infra.k8s"))
    assert done.id is not None
    new = await browse.memory_detail(rt, USER, done.id)
    assert new.replaced == [old]
    assert (await browse.memory_detail(rt, USER, old)).memory.superseded_by == done.id
    from memvault.web import pages

    page = pages.detail("/s", new)
    assert f'This version replaced <a href="/s/m/{old}">{old}</a>' in page
    back = pages.detail("/s", await browse.memory_detail(rt, USER, old))
    assert f'A newer version replaced this one: <a href="/s/m/{done.id}"' in back


async def test_the_search_marks_what_recall_would_not_count_as_relevant(rt: Runtime) -> None:
    from memvault.service.memory.recall import LIKELY_ANSWER
    from memvault.web import pages

    await _remember(rt, "The web framework of this project is Django 5")
    for i in range(12):
        await _remember(rt, f"The office plant number {i} is watered on day {i} of the month")
    hits = await explain(rt, USER, "which web framework does this project use?", browse.check_filters(browse.Filters()))
    relevant = [x for x in hits if x.relevance >= LIKELY_ANSWER]
    below = [x for x in hits if x.relevance < LIKELY_ANSWER]
    assert relevant and "Django" in relevant[0].memory.content and below
    shown = pages.explained_rows("/s", hits, "which web framework?", LIKELY_ANSWER, more_href="/s/?all=1")
    assert f"{len(below)} more below the relevance bar" in shown and "show them" in shown
    assert shown.count("<tbody>") == 1 and "office plant" not in shown  # the weak ones only on request
    every = pages.explained_rows("/s", hits, "which web framework?", LIKELY_ANSWER, show_all=True)
    assert every.count("<tbody>") == 2 and "office plant" in every


async def test_documents_list_files_with_chunks_and_search_them(rt: Runtime, tmp_path: Path) -> None:
    from memvault.service.documents.indexing import index_docs

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "backup.md").write_text("# Backups\n\nThe database is backed up every night at 03:00 UTC.\n")
    (docs / "deploy.md").write_text("# Deploys\n\n## When\n\nDeploys go out on Tuesdays.\n\n## How\n\nWith Helm.\n")
    scope = make_scope(USER, "github.com/acme/shop", "argument")
    await index_docs(rt, scope, [str(docs)], None, [docs], cite_bases=[docs])
    files = await browse.doc_files(rt)
    assert {(f.path, f.project, f.collection) for f in files} == {
        ("backup.md", "github.com/acme/shop", "default"), ("deploy.md", "github.com/acme/shop", "default")}
    assert all(f.chunks >= 1 and f.indexed_at > 0 for f in files)
    found = await browse.search_documents(rt, USER, "github.com/acme/shop", "when is the database backed up?")
    assert found.results[0].path == "backup.md" and "03:00" in found.results[0].text
    from memvault.web import pages

    shown = pages.docs("/s", await browse.doc_collections(rt), files, {"github.com/acme/shop": "shop"},
                       "when is the database backed up?", "github.com/acme/shop", found)
    assert "backup.md:" in shown and "Files (2, most recently indexed first)" in shown and "shop" in shown
