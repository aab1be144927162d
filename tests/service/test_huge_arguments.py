"""One huge argument is refused by its size before anything reads it, and stalls nobody.

A 20 MB task state used to be scanned for secrets (holding the interpreter for seconds)
before its size was checked, so every other call on the server waited behind it. Sizes
come first now, for every argument (content, query, state, patch, tag and path lists),
and a task state nested deeper than 64 levels is refused before it is written.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import memvault.mcp.tools.profile
import memvault.service.memory.remember
import memvault.service.profile.tasks
from memvault.policy.tasks import MAX_STATE_DEPTH, json_overflow, state_json
from tests.conftest import call, call_error, db_rows

LIMIT = memvault.service.profile.tasks.TASK_STATE_MAX_BYTES


def nested(depth: int) -> dict[str, Any]:
    """A state whose objects are ``depth`` levels deep (the state itself is level 1)."""
    state: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        state = {"a": state}
    return state


def huge_state() -> dict[str, Any]:
    return {"notes": ["x" * 1000 + str(i) for i in range(20_000)]}  # 20 MB of JSON


def test_bounds_are_found_without_reading_past_them():
    assert json_overflow(nested(MAX_STATE_DEPTH), max_bytes=LIMIT) is None
    over = json_overflow(nested(MAX_STATE_DEPTH + 1), max_bytes=LIMIT)
    assert over is not None and over.what == "depth" and over.at_least == MAX_STATE_DEPTH + 1
    over = json_overflow(huge_state(), max_bytes=LIMIT)
    assert over is not None and over.what == "size" and LIMIT < over.at_least < 2 * LIMIT
    fits = {"plan": ["step one", "step two"], "current_step": 2, "ratio": 0.5, "done": False, "x": None}
    assert json_overflow(fits, max_bytes=len(state_json(fits).encode())) is None


@pytest.fixture
def scanned(monkeypatch) -> list[int]:
    """Lengths of every text the task and remember handlers scan for secrets."""
    seen: list[int] = []
    for module in (memvault.service.profile.tasks, memvault.service.memory.remember):
        real = module.find_secret

        def spy(text: str, _real=real) -> Any:
            seen.append(len(text))
            return _real(text)

        monkeypatch.setattr(module, "find_secret", spy)
    return seen


@pytest.mark.anyio
async def test_a_huge_task_state_is_refused_before_any_scan_while_a_recall_answers(
        tmp_path, mcp_client, monkeypatch, scanned):
    d = tmp_path / "d"
    entered = anyio.Event()
    real = memvault.mcp.tools.profile.set_task_handler

    async def handler(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        return await real(*args, **kwargs)

    monkeypatch.setattr(memvault.mcp.tools.profile, "set_task_handler", handler)
    done: list[str] = []
    async with mcp_client(d) as c:
        m = await call(c, "remember", content="The billing service runs on Postgres 16", force=True)
        scanned.clear()
        replies: dict[str, Any] = {}

        async def big() -> None:
            replies["big"] = await call_error(c, "set_task_state", task_id="migrate", title="Migrate",
                                              state=huge_state())
            done.append("set_task_state")

        async def recall() -> None:
            await entered.wait()  # the huge state is in the server's hands
            replies["recall"] = await call(c, "recall", query="which database does billing use")
            done.append("recall")

        async with anyio.create_task_group() as tg:
            tg.start_soon(big)
            tg.start_soon(recall)
        assert [x["id"] for x in replies["recall"]["memories"]] == [m["id"]]
        err = replies["big"]
        assert "state is more than" in err and f"the limit is {LIMIT} bytes" in err and "Nothing was written" in err
    # refused on its size alone: no secret scan of it, so nothing held the server while the recall ran
    assert scanned == [] and max(scanned, default=0) <= LIMIT
    assert done == ["set_task_state", "recall"]
    assert db_rows(d, "SELECT count(*) FROM tasks")[0][0] == 0


@pytest.mark.anyio
async def test_task_state_nesting_is_bounded_at_64_levels(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        err = await call_error(c, "set_task_state", task_id="deep", title="Deep", state=nested(MAX_STATE_DEPTH + 1))
        assert f"state is nested {MAX_STATE_DEPTH + 1} levels deep at $.a.a" in err, err
        assert f"at most {MAX_STATE_DEPTH} levels" in err and "Nothing was written" in err
        assert db_rows(d, "SELECT count(*) FROM tasks")[0][0] == 0
        ok = await call(c, "set_task_state", task_id="deep", title="Deep", state=nested(MAX_STATE_DEPTH))
        assert ok["version"] == 1
        got = await call(c, "get_task_state", task_id="deep")  # the reply parses back
        assert got["task"]["state"] == nested(MAX_STATE_DEPTH)
        err = await call_error(c, "set_task_state", task_id="deep", patch={"b": nested(MAX_STATE_DEPTH)})
        assert "patch is nested" in err, err
        assert (await call(c, "get_task_state", task_id="deep"))["task"]["version"] == 1


@pytest.mark.anyio
async def test_every_big_argument_is_refused_by_its_size_first(tmp_path, mcp_client, scanned):
    async with mcp_client(tmp_path / "d", roots=[tmp_path.as_uri()]) as c:
        invisible = "\u200b" * 2_000_000  # used to be read character by character before its length
        err = await call_error(c, "remember", content=invisible)
        assert "content is 2000000 characters, over the limit of 20000" in err, err
        err = await call_error(c, "recall", query="q" * 3_000_000)
        assert "query has 3000000 characters; at most 2000" in err, err
        err = await call_error(c, "recall", query="tea", tags=["t"] * 100_000)
        assert "100000 tags given; at most 20" in err, err
        err = await call_error(c, "remember", content="The user likes tea", tags=["\u200b" * 10] * 50)
        assert "50 tags given; at most 20" in err, err
        err = await call_error(c, "index_docs", paths=["docs/" + "a" * 1_000_000])
        assert "a path is at most 4096" in err, err
        err = await call_error(c, "set_task_state", task_id="t", title="T", patch={"k": "v" * 1_000_000})
        assert "patch is more than" in err, err
    assert scanned == []
