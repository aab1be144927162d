"""A refused argument is never quoted whole: not in the reply, not in the server's log.

Every tool the server lists, every argument it takes, gets values that are the caller's
data: a GitHub token inside a key-shaped string (``k ghp_…``), the token alone, the token
inside a list and inside an object (the wrong type for most arguments, so pydantic's
report, which quotes its input, is in the path), and a sentence of plain user text. The
replies and every log record at INFO and above (the server's default level) are searched
for the token and, for refused calls, for the sentence. The tokens are random and built at
run time, so this file holds none.
"""

from __future__ import annotations

import logging
import random
import string
from typing import Any

import pytest

from memvault.service import validation as v
from tests.conftest import call, call_error
from tests.service.test_error_reasons import VALID, valid_arguments

pytestmark = pytest.mark.anyio

RNG = random.Random(29)
TOKEN = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
PLAIN = "Remember that the router in the hallway is the old one, not the new one"


def _values() -> list[tuple[str, Any, str]]:
    """(label, value sent, text that must not come back whole)."""
    return [
        ("token in a key-shaped string", f"k {TOKEN}", TOKEN),
        ("token alone", TOKEN, TOKEN),
        ("token in a list", [f"note {TOKEN}"], TOKEN),
        ("token in an object", {"note": TOKEN}, TOKEN),
        ("plain user text", PLAIN, PLAIN),
        ("plain user text in a list", [PLAIN], PLAIN),
    ]


def _text(res: Any) -> str:
    return " ".join(getattr(x, "text", "") for x in res.content)


async def test_no_reply_or_log_line_quotes_a_refused_value_whole(tmp_path, mcp_client, caplog):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Notes\nThe sweep indexes this file.\n")
    known = {**VALID, "paths": [str(notes)]}
    leaks: list[str] = []
    refused = 0
    caplog.set_level(logging.INFO)
    async with mcp_client(docs_allowed_dirs=[tmp_path]) as c:
        tools = (await c.list_tools()).tools
        assert {"remember", "recall", "forget", "index_docs", "set_task_state"} <= {t.name for t in tools}
        for tool in tools:
            base = valid_arguments(tool.input_schema, known)
            for prop in tool.input_schema.get("properties", {}):
                for label, value, needle in _values():
                    res = await c.call_tool(tool.name, {**base, prop: value})
                    text = _text(res)
                    refused += res.is_error
                    # The token: never in any reply. Plain text: never in the reply that refuses it,
                    # but for index_docs' paths: a path it cannot read is named whole (which one
                    # is the point; one holding a secret is masked, as the token cases check).
                    if needle in text and (needle == TOKEN or (res.is_error and prop != "paths")):
                        leaks.append(f"reply of {tool.name}({prop}={label}): {text[:200]!r}")
        for record in caplog.records:
            line = record.getMessage()
            failure = "failed" in line or "rejected" in line  # plain text may be a project's name elsewhere
            if TOKEN in line or (PLAIN in line and failure and "nothing indexed" not in line):
                leaks.append(f"log {record.levelname} {record.name}: {line[:200]!r}")
    assert refused > 100
    assert not leaks, "refused values quoted whole:\n" + "\n".join(leaks[:20])


async def test_a_token_in_a_key_is_refused_as_a_secret_before_its_shape(mcp_client, caplog):
    """The issue's case: remember declines it for the secret (not the key's format), without
    quoting the token; other tools refuse a token in a name argument as a secret too."""
    caplog.set_level(logging.INFO)
    async with mcp_client() as c:
        got = await call(c, "remember", content="The CI token is stored", key=f"k {TOKEN}")
        assert got["status"] == "declined" and got["id"] is None, got
        assert "GitHub token" in got["reason"] and TOKEN[:12] not in got["reason"], got
        for where in ({"tags": [f"ci {TOKEN}"]}, {"source": f"{TOKEN} bot"}):
            got = await call(c, "remember", content="The CI token is stored", **where)
            assert got["status"] == "declined" and "GitHub token" in got["reason"], (where, got)
        text = await call_error(c, "recall", query="ci token", tags=[f"k {TOKEN}"])
        assert "tag holds what looks like a GitHub token" in text and TOKEN[:12] not in text, text
    assert not any(TOKEN[:12] in r.getMessage() for r in caplog.records)


async def test_a_wrongly_typed_argument_is_logged_by_its_name_only(mcp_client, caplog):
    caplog.set_level(logging.INFO)
    async with mcp_client() as c:
        text = await call_error(c, "remember", content={"text": PLAIN})
        assert "content" in text and "an object of 1 entry" in text, text
        text = await call_error(c, "remember", content="The build uses pnpm", importance=PLAIN)
        assert "importance" in text and PLAIN not in text and f"({len(PLAIN)} characters)" in text, text
    lines = [r.getMessage() for r in caplog.records if "remember" in r.getMessage()]
    assert any("rejected arguments" in line and "content" in line for line in lines), lines
    assert not any(PLAIN[:30] in line for line in lines), lines


@pytest.mark.parametrize(("value", "shown"), [
    ("opinion", "'opinion'"),  # a short plain word names the mistake
    ("five", "'five'"),
    ("The CI token is stored", "'The CI …' (22 characters)"),
    ("sk3jd8Fj2kdlsm4ks9", "'sk****…' (18 characters)"),  # a token-like run masked past two characters
    (4242424242424242, "42… (16 characters)"),
    (-1, "-1"),
    ([1, 2], "a list of 2 items"),
    ({"a": "b"}, "an object of 1 entry"),
    (None, "None"),
])
def test_shown_cuts_and_masks(value: Any, shown: str) -> None:
    assert v.shown(value) == shown


def test_shown_names_a_secret_without_any_of_it() -> None:
    got = v.shown(f"deploy with {TOKEN}")
    assert got == f"<{len(TOKEN) + 12} characters that look like a GitHub token, not shown>"
    assert v.shown_path(f"/tmp/{TOKEN}/notes") == v.shown(f"/tmp/{TOKEN}/notes")
    assert v.shown_path("/home/me/notes/guide.md") == "/home/me/notes/guide.md"
