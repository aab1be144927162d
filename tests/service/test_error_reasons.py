"""Every failure reaches the caller as a reason: no bare "Error executing tool X".

A sweep over everything the server lists (tools/list, prompts/list, resources/list,
resources/templates/list, so that a new tool, prompt or resource is swept without
changing this file) calls each with bad inputs (wrong types, empty strings, NUL
characters, huge and negative numbers, unknown enum values; lone surrogates go over the
wire in ``test_every_request_is_answered``), and fails
on any error whose text is only the SDK's generic line or a JSON-RPC code 0; then checks
that the server still answers. Unexpected failures that a person can meet are provoked
for real: SQLite's "database or disk is full" (the store's own page limit), a NUL in a
path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from tests.conftest import call, call_error

pytestmark = pytest.mark.anyio

# The SDK's lines that name no cause (the in-memory transport says "Internal server error"
# where stdio says "Error rendering prompt <name>" with code 0).
GENERIC = re.compile(r"^\s*(Error executing tool|Error rendering prompt|Error reading resource)\s*\S*\s*:?\s*$"
                     r"|^\s*Internal (server )?error\.?\s*$", re.IGNORECASE)
HUGE = "x" * 1_000_000


def is_generic(text: str) -> bool:
    """True when an error says nothing but which tool / prompt / resource failed."""
    stripped = text.strip()
    return not stripped or bool(GENERIC.match(stripped)) or "Traceback (most recent call last)" in text


def _types(schema: dict[str, Any]) -> set[str]:
    if "anyOf" in schema:
        return set().union(*(_types(s) for s in schema["anyOf"]))
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t or [])


def _enum(schema: dict[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return list(schema["enum"])
    for sub in schema.get("anyOf", []):
        if "enum" in sub:
            return list(sub["enum"])
    return None


def _items(schema: dict[str, Any]) -> dict[str, Any]:
    if "items" in schema:
        return dict(schema["items"])
    for sub in schema.get("anyOf", []):
        if "items" in sub:
            return dict(sub["items"])
    return {}


def bad_values(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """Inputs a careless or hostile caller sends for a property of JSON schema ``schema``.

    Lone surrogates are not here: the SDK's client cannot send them (it fails to encode
    the request), and on the wire they are answered before any tool runs; the process
    tests (``test_every_request_is_answered``) send them as JSON escapes.
    """
    types = _types(schema)
    out: list[tuple[str, Any]] = [("an object", {"x": 1}), ("a list of numbers", [1, 2])]
    if "string" in types:
        out += [("empty", ""), ("blank", "   "), ("NUL", "a\x00b"), ("huge", HUGE), ("a number", 12345),
                ("path escape", "../../../../etc/passwd")]
    if _enum(schema) is not None:
        out += [("unknown enum value", "no-such-value")]
    if "integer" in types:
        out += [("negative", -1), ("very negative", -(2**63)), ("huge int", 10**30), ("text", "abc"), ("fraction", 1.5)]
    if "number" in types:
        out += [("negative", -1.0), ("huge number", 1e308), ("very negative", -1e308), ("text", "abc")]
    if "boolean" in types:
        out += [("text", "yes"), ("a number", 2)]
    if "array" in types:
        out += [("text", "not a list"), ("null item", [None]), ("empty item", [""]), ("NUL item", ["a\x00b"]),
                ("many items", ["x"] * 100_000), ("huge item", [HUGE])]
        if _enum(_items(schema)) is not None:
            out += [("unknown enum item", ["no-such-value"])]
    if "object" in types:
        nested: Any = {}
        for _ in range(150):
            nested = {"a": nested}
        out += [("text", "x"), ("NUL key", {"\x00": 1}), ("NUL value", {"a": "\x00"}), ("deep", nested),
                ("huge value", {"a": HUGE})]
    return out


VALID: dict[str, Any] = {"content": "The sweep checks that every error names its cause", "query": "sweep check",
                         "task_id": "sweep-task"}


def valid_arguments(schema: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """The required arguments of a tool with plausible values (``known``: by argument name)."""
    args = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        if name in known:
            args[name] = known[name]
        elif "array" in _types(prop):
            args[name] = ["x"]
        elif "integer" in _types(prop):
            args[name] = 1
        else:
            args[name] = "x"
    return args


async def _still_answers(c: Any) -> None:
    assert [t.name for t in (await c.list_tools()).tools]
    got = await call(c, "recall", query="sweep check")
    assert "memories" in got


async def test_every_tool_argument_error_names_its_cause(tmp_path, standin_client):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Notes\nThe sweep indexes this file.\n")
    known = {**VALID, "paths": [str(notes)]}
    generic: list[str] = []
    raw: list[str] = []
    calls = 0
    # No roots: the SDK's client cannot re-send a lone surrogate in the input-required round
    # that asks for them; the documents folder is allowed by the settings instead.
    async with standin_client(docs_allowed_dirs=[tmp_path]) as c:
        tools = (await c.list_tools()).tools
        assert {"remember", "recall", "forget", "index_docs", "search_docs", "get_profile", "set_task_state",
                "get_task_state"} <= {t.name for t in tools}
        for tool in tools:
            base = valid_arguments(tool.input_schema, known)
            for prop, schema in tool.input_schema.get("properties", {}).items():
                for label, value in bad_values(schema):
                    calls += 1
                    res = await c.call_tool(tool.name, {**base, prop: value})
                    text = " ".join(getattr(x, "text", "") for x in res.content)
                    if res.is_error and is_generic(text):
                        generic.append(f"{tool.name}({prop}={label}): {text!r}")
                    if res.is_error and ("validation error for" in text or "errors.pydantic.dev" in text):
                        raw.append(f"{tool.name}({prop}={label}): {text!r}")
        await _still_answers(c)
    assert calls > 200
    assert not generic, "errors without a reason:\n" + "\n".join(generic)
    assert not raw, "pydantic's raw report instead of a sentence:\n" + "\n".join(raw[:10])


async def test_an_argument_of_the_wrong_type_is_named_with_what_was_sent(standin_client):
    async with standin_client() as c:
        text = await call_error(c, "remember", content="The build uses pnpm", importance="high")
        assert text.startswith("remember: invalid arguments: importance:"), text
        assert "valid number" in text and "'high'" in text and "\n" not in text
        text = await call_error(c, "recall", query="build", k="five")
        assert text.startswith("recall: invalid arguments: k:") and "'five'" in text, text
        text = await call_error(c, "forget", ids="abc")
        assert "ids: Input should be a valid list" in text and "'abc'" in text, text
        text = await call_error(c, "remember", content="The build uses pnpm", kind="opinion")
        assert "kind:" in text and "'preference'" in text and "'opinion'" in text, text
        await _still_answers(c)


async def test_kinds_match_without_regard_to_case(mcp_client):
    async with mcp_client() as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "preference" in json.dumps(tools["remember"].input_schema["properties"]["kind"])
        stored = await call(c, "remember", content="The user prefers pnpm over npm for JavaScript projects",
                            kind=" Preference ")
        got = await call(c, "recall", query="which package manager", kinds=["PREFERENCE"])
        assert [(m["id"], m["kind"]) for m in got["memories"]] == [(stored["id"], "preference")]
        gone = await call(c, "forget", ids=[stored["id"]], kinds=["Preference"])
        assert stored["id"] in json.dumps(gone)


async def test_every_prompt_and_resource_error_names_its_cause(tmp_path, standin_client):
    from mcp.shared.exceptions import MCPError

    generic: list[str] = []
    async with standin_client(roots=[tmp_path.as_uri()]) as c:
        prompts = (await c.list_prompts()).prompts
        assert "recall_context" in {p.name for p in prompts}
        for prompt in prompts:
            names = [a.name for a in prompt.arguments or []]
            cases: list[tuple[str, dict[str, str]]] = [("no arguments", {})]
            for name in names:
                for label, value in (("empty", ""), ("blank", "  "), ("NUL", "a\x00b"), ("huge", HUGE)):
                    cases.append((f"{name}={label}", {n: "billing" for n in names} | {name: value}))
            for label, arguments in cases:
                try:
                    await c.get_prompt(prompt.name, arguments)
                except MCPError as exc:
                    if exc.error.code == 0 or is_generic(exc.error.message):
                        generic.append(f"prompt {prompt.name}({label}): code {exc.error.code} "
                                       f"{exc.error.message!r}")
        uris = [str(r.uri) for r in (await c.list_resources()).resources]
        for template in (await c.list_resource_templates()).resource_templates:
            for value in ("", "%00", "x" * 10_000, "..%2F..%2Fetc", "%ED%A0%80", "no-such-task"):
                uris.append(re.sub(r"\{[^}]+\}", value, template.uri_template))
        assert any(u.startswith("memvault://tasks/") for u in uris)
        for uri in uris:
            try:
                await c.read_resource(uri)
            except MCPError as exc:
                if exc.error.code == 0 or is_generic(exc.error.message):
                    generic.append(f"read {uri[:60]}: code {exc.error.code} {exc.error.message!r}")
        await _still_answers(c)
    assert not generic, "errors without a reason:\n" + "\n".join(generic)


async def test_recall_context_with_an_empty_topic_says_what_is_wrong(tmp_path, standin_client):
    from mcp.shared.exceptions import MCPError

    async with standin_client(roots=[tmp_path.as_uri()]) as c:
        with pytest.raises(MCPError) as caught:
            await c.get_prompt("recall_context", {"topic": ""})
    assert caught.value.error.code != 0
    assert "topic" in caught.value.error.message.lower() or "empty" in caught.value.error.message.lower(), \
        caught.value.error.message


async def test_a_nul_in_a_path_says_so(tmp_path, standin_client):
    (tmp_path / "docs").mkdir()
    async with standin_client(roots=[tmp_path.as_uri()]) as c:
        err = await call_error(c, "index_docs", paths=["docs\x00/guide.md"])
    assert not is_generic(err)
    assert "NUL" in err or "null" in err.lower(), err


async def test_a_full_database_says_the_disk_is_full(tmp_path, shared_embedder, model_cache):
    """SQLite's own "database or disk is full" (SQLITE_FULL), provoked by capping the store's pages."""
    from mcp.client.client import Client

    from memvault.mcp.app import build_server
    from memvault.mcp.lifespan import running_runtime

    d = tmp_path / "d"
    settings = Settings(data_dir=d, model_cache_dir=model_cache)
    async with running_runtime(settings, load_embedder=lambda _s: shared_embedder) as rt:
        server = build_server(settings, runtime=rt, cwd=tmp_path)
        async with Client(server) as c:
            await call(c, "remember", content="The first note fits on the disk", force=True)
            pages = (await rt.facts.database.fetchone("PRAGMA page_count"))[0]
            async with rt.facts.database.transaction() as tx:
                await tx.execute(f"PRAGMA max_page_count = {pages}")
            errors = []
            for i in range(40):  # each write needs new pages sooner or later
                res = await c.call_tool("remember", {"content": f"Note number {i} about the billing service "
                                                                f"{'and its many details ' * 40}", "force": True})
                if res.is_error:
                    errors.append(" ".join(getattr(x, "text", "") for x in res.content))
                    break
            assert errors, "the capped database never filled up"
            err = errors[0]
            assert "database or disk is full" in err, err
            assert str(d / "memvault.db") in err and "Free space" in err, err
            # another store of the same file (task state) says the same
            res = await c.call_tool("set_task_state", {"task_id": "full-disk", "title": "Fill the disk",
                                                       "state": {"notes": ["a long note " * 50] * 40}})
            text = " ".join(getattr(x, "text", "") for x in res.content)
            assert res.is_error and "database or disk is full" in text and "Free space" in text, text
            async with rt.facts.database.transaction() as tx:
                await tx.execute("PRAGMA max_page_count = 1073741823")
            got = await call(c, "recall", query="the first note")  # still answers, the store is whole
            assert got["memories"][0]["content"] == "The first note fits on the disk"


def test_explain_names_a_real_enospc_and_its_path():
    """A real ENOSPC (writing to /dev/full) explained: the errno's meaning, its name, the path, what to do."""
    from memvault.service.failures import explain

    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full on this system")
    try:
        with full.open("wb") as f:
            f.write(b"x" * 65536)
            f.flush()
    except OSError as exc:
        exc.filename = exc.filename or str(full)
        text = explain(exc)
    else:
        pytest.fail("writing /dev/full did not fail")
    assert "No space left on device" in text and "ENOSPC" in text and "/dev/full" in text, text
    assert "free space" in text, text


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_explain_names_a_real_file_size_limit():
    """A real EFBIG and SQLite's disk I/O error, from a child process with a small RLIMIT_FSIZE."""
    import subprocess
    import sys

    child = r"""
import os, resource, sqlite3, sys, tempfile
from memvault.service.failures import explain
d = tempfile.mkdtemp()
db = os.path.join(d, "memvault.db")
con = sqlite3.connect(db, isolation_level=None)
con.execute("PRAGMA journal_mode=WAL")
con.execute("CREATE TABLE t(x)")
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
try:
    with open(os.path.join(d, "big"), "wb") as f:
        f.write(b"x" * 300_000)
except OSError as exc:
    print("FILE", explain(exc))
try:
    for _ in range(100):
        con.execute("INSERT INTO t VALUES (?)", (os.urandom(20_000),))
except sqlite3.Error as exc:
    from pathlib import Path
    print("SQLITE", explain(exc, db=Path(db)))
"""
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert "File too large (EFBIG)" in lines["FILE"] and "size limit" in lines["FILE"], lines
    assert "memvault.db" in lines["SQLITE"] and "file size limit" in lines["SQLITE"], lines
