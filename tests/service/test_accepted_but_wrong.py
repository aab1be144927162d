"""Inputs that were accepted but did something else than asked: now refused, saying why.

- a TTL so short that the memory (or task) is expired before anyone can read it;
- index_docs on a path that does not exist (answered ok with zeros);
- an empty list as a filter (recall read kinds=[] as "all", forget refused it): every
  tool now refuses an empty filter list; an empty list of values to store is "none".
"""

from __future__ import annotations

import pytest

from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from tests.conftest import call, call_error, db_rows
from tests.docs_fixtures import write_tree


@pytest.mark.parametrize("ttl", [1e-9, 1e-6, 0.0006])
def test_a_ttl_under_a_minute_is_refused(ttl):
    with pytest.raises(InvalidArgument, match=r"ttl_days is .*it would expire before it could be read, so nothing "
                                              r"was stored\. The shortest is 0\.000694 days \(one minute\)"):
        v.check_ttl(ttl)
    assert v.check_ttl(1 / 1440) == pytest.approx(1 / 1440)


@pytest.mark.anyio
async def test_remember_and_tasks_refuse_a_ttl_that_is_already_over(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        err = await call_error(c, "remember", content="The staging database is down for maintenance",
                               ttl_days=1e-9)
        assert "ttl_days" in err and "expire before it could be read" in err and "one minute" in err, err
        err = await call_error(c, "set_task_state", task_id="hotfix", title="Hotfix", state={"step": 1},
                               ttl_days=1e-7)
        assert "ttl_days" in err and "one minute" in err, err
        ok = await call(c, "remember", content="The staging database is down for maintenance", ttl_days=0.001)
        assert ok["status"] == "stored" and ok["expires_at"] is not None
    assert db_rows(d, "SELECT count(*) FROM memories")[0][0] == 1
    assert db_rows(d, "SELECT count(*) FROM tasks")[0][0] == 0


@pytest.mark.anyio
async def test_index_docs_on_a_missing_path_is_an_error_naming_it(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "app")
    d = tmp_path / "d"
    async with mcp_client(d, roots=[tree.root.as_uri()]) as c:
        err = await call_error(c, "index_docs", paths=["no-such-folder"])
        assert "no-such-folder" in err and "does not exist" in err and str(tree.root) in err, err
        err = await call_error(c, "index_docs", paths=["docs", str(tree.root / "gone.md")])
        assert err.split("nothing indexed: ")[1].startswith(f"{tree.root / 'gone.md'} does not exist;"), err
        # a glob is not a path, and a URL is not a local file
        for pattern in (str(tree.root / "docs" / "*.md"), "docs/guide-?.md", "docs/[a-z]*"):
            err = await call_error(c, "index_docs", paths=[pattern])
            assert "not patterns" in err and "give the folder" in err, err
        err = await call_error(c, "index_docs", paths=["https://example.com/docs"])
        assert "is a URL" in err and "file://" in err, err
        listed = await call(c, "search_docs", query="deploy")
        assert listed["results"] == []  # nothing half-indexed
        # a file:// URI, as roots are given, is the folder it names
        ok = await call(c, "index_docs", paths=[(tree.root / "docs").as_uri()])
        assert ok["added"] > 0
        again = await call(c, "index_docs", paths=["docs"])
        assert again["added"] == 0 and again["unchanged"] == ok["added"]  # the same files
    assert db_rows(d, "SELECT count(*) FROM doc_files WHERE path LIKE '%gone%'")[0][0] == 0


EMPTY_FILTERS = [
    ("recall", {"query": "tea", "kinds": []}, "kinds"),
    ("recall", {"query": "tea", "tags": []}, "tags"),
    ("forget", {"ids": [], "key": "pref.tea"}, "ids"),
    ("forget", {"kinds": [], "key": "pref.tea"}, "kinds"),
    ("forget", {"tags": [], "key": "pref.tea"}, "tags"),
    ("forget", {"kinds": []}, "kinds"),
]


@pytest.mark.anyio
async def test_an_empty_filter_list_means_the_same_everywhere(mcp_client):
    async with mcp_client() as c:
        tea = await call(c, "remember", content="The user drinks green tea every morning", kind="preference",
                         key="pref.tea", tags=[], supersedes=[])
        assert tea["status"] == "stored"  # values to store: [] is none
        for tool, args, name in EMPTY_FILTERS:
            err = await call_error(c, tool, **args)
            assert f"{name} is an empty list; leave it out for" in err and "refused by every tool" in err, (tool, err)
        # left out, the same filters are no condition at all
        got = await call(c, "recall", query="tea")
        assert [m["id"] for m in got["memories"]] == [tea["id"]]
        assert (await call(c, "forget", key="pref.tea", dry_run=True))["count"] == 1
