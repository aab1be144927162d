"""The ``save_session`` prompt, listed and rendered through a real MCP client session."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


async def test_save_session_is_listed_lean_and_asks_for_remember_calls(standin_client):
    async with standin_client() as c:
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert set(prompts) == {"recall_context", "save_session"}
        listed = prompts["save_session"]
        assert "remember" in (listed.description or "") and len(listed.description or "") <= 120
        assert [(a.name, a.required) for a in listed.arguments or []] == [("project", False)]

        got = await c.get_prompt("save_session", {})
        assert len(got.messages) == 1 and got.messages[0].role == "user"
        text = got.messages[0].content.text
        assert "`remember`" in text
        for rule in ("one self-contained sentence", "kind: one of preference, fact, decision, episode",
                     "key for a value that a later one should replace", "Do not save secrets",
                     "nothing transient", 'project=""', 'visibility="private"'):
            assert rule in text, rule
        assert "Pass project=" not in text  # no project given: remember decides

        scoped = (await c.get_prompt("save_session", {"project": "acme"})).messages[0].content.text
        assert 'Pass project="acme" to every call' in scoped


async def test_save_session_refuses_a_bad_project_name(standin_client):
    from mcp.shared.exceptions import MCPError

    async with standin_client() as c:
        with pytest.raises(MCPError) as err:
            await c.get_prompt("save_session", {"project": "a\nb"})
        assert "project" in str(err.value) and "control characters" in str(err.value), str(err.value)
