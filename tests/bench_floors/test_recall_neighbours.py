"""Conversation neighbours in recall, end to end through a real MCP client session.

The memory that answers a question is often the one written right after the memory that
holds the question's words ("I loved *Becoming Nicole* ..." then "It taught me
self-acceptance ..."). recall lifts the memory written just before or after one of its
best hits, by the same client, within 30 minutes, to near that hit; memories of another
conversation (hours later) or another client are not lifted.
"""

from __future__ import annotations

import pytest

import memvault.service.memory.recall
from tests.conftest import call

pytestmark = pytest.mark.anyio

QUERY = "What did Caroline take away from the book Becoming Nicole?"
CUE = 'Caroline loved "Becoming Nicole" by Amy Ellis Nutt, a true story about a trans girl and her family.'
ANSWER = "It taught her self-acceptance, and that tough times don't last: hope and love exist."
# Same conversation, before and after the pair: other books and other lessons.
BEFORE = [
    "Caroline has lots of kids' books: classics, stories from different cultures, educational books.",
    "Melanie is reading a novel about a lighthouse keeper on a remote island.",
]
AFTER = [
    "Caroline's pottery class taught her patience: clay does not hurry.",
    "Melanie found that the hiking trip made her feel alive and grateful.",
    "Caroline is researching adoption agencies that welcome single parents.",
    "Melanie's running group taught her that small steps add up.",
]


async def _place(c, text: str) -> int:
    got = await call(c, "recall", query=QUERY, k=10)
    return [m["content"] for m in got["memories"]].index(text) + 1


async def _write(c, lines: list[str]) -> None:
    for line in lines:
        await call(c, "remember", content=line, force=True)


async def test_the_memory_written_after_the_best_hit_comes_right_after_it(mcp_client, tmp_path, monkeypatch):
    data = tmp_path / "d"
    async with mcp_client(data, client_name="claude-code") as c:
        await _write(c, [*BEFORE, CUE, ANSWER, *AFTER])
        got = await call(c, "recall", query=QUERY, k=3)
        top = [m["content"] for m in got["memories"]]
        # the cue, then the kids' books memory (a likely answer on its own words: context never
        # displaces one), then the answer, lifted as the cue's context
        assert top == [CUE, BEFORE[0], ANSWER], top
        assert got["memories"][2]["neighbour_of"] == got["memories"][0]["id"]
        assert got["memories"][2]["relevance"] < 0.3 < got["memories"][1]["relevance"]
    monkeypatch.setattr(memvault.service.memory.recall, "NEIGHBOUR_LIFT", 0.0)
    async with mcp_client(data, client_name="claude-code") as c:
        # what the lift changed: on its own words the answer ranks lower
        assert await _place(c, ANSWER) > 3


async def test_another_conversation_or_another_client_is_not_lifted(mcp_client, tmp_path):
    later, other = tmp_path / "later", tmp_path / "other"
    async with mcp_client(later, client_name="claude-code") as c:
        await _write(c, [*BEFORE, CUE])
    async with mcp_client(later, client_name="claude-code", clock_offset_s=2 * 3600) as c:
        await _write(c, [ANSWER, *AFTER])  # two hours later: another conversation
        assert await _place(c, ANSWER) > 2
    async with mcp_client(other, client_name="claude-code") as c:
        await _write(c, [*BEFORE, CUE])
    async with mcp_client(other, client_name="cursor") as c:
        await _write(c, [ANSWER])  # another client, right after
    async with mcp_client(other, client_name="claude-code") as c:
        await _write(c, AFTER)
        assert await _place(c, ANSWER) > 2
        assert await _place(c, AFTER[0]) <= 3  # claude-code's next line is still the cue's neighbour


async def test_unrelated_neighbours_never_displace_memories_that_answer_on_their_own(mcp_client, tmp_path):
    # An assistant stores several unrelated facts within minutes; other days stored the rest.
    data = tmp_path / "d"
    async with mcp_client(data, client_name="claude-code") as c:
        await _write(c, ["The user prefers pnpm over npm.", "Tests run with pytest and the -x flag.",
                         "The API server listens on port 8080.", "The user writes commit messages in the imperative mood.",
                         "The team's standup is at 9:30 every morning."])
    async with mcp_client(data, client_name="claude-code", clock_offset_s=3 * 86400) as c:
        await _write(c, ["The admin dashboard is served on port 3000 in development.",
                         "Redis runs on port 6379 on the developer machines."])
        got = await call(c, "recall", query="what ports do our services listen on?", k=3)
    top = [m["content"] for m in got["memories"]]
    assert sum("port" in t for t in top) == 3, top
    assert all(m["neighbour_of"] is None for m in got["memories"])
