"""What the server lists (tools, prompts, resources): plain descriptions and lean schemas.

The unit tests check ``lean_schema`` keeps meaning (the same JSON accepted and refused);
the server tests check the real listing through the SDK's client and that real replies
still validate against the lean output schemas.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from memvault.mcp.listing import lean_description, lean_schema
from tests.conftest import McpClient, call

pytestmark = pytest.mark.anyio

# A pydantic-shaped schema with every construct lean_schema rewrites, and some it must not.
PYDANTIC_SHAPED: dict[str, Any] = {
    "$defs": {"Inner": {"properties": {"n": {"title": "N", "type": "integer", "minimum": 0}},
                        "required": ["n"], "title": "Inner", "type": "object"}},
    "properties": {
        "title": {"title": "Title", "type": "string", "description": "A property named title stays."},
        "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                 "default": None, "title": "Tags"},
        "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "default": None},
        "k": {"default": 5, "maximum": 50, "minimum": 1, "title": "K", "type": "integer"},
        "mode": {"enum": ["a", "b"], "title": "Mode", "type": "string"},
        "maybe_mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}], "default": None},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "title": "Either"},
    },
    "required": ["title"],
    "title": "toolArguments",
    "type": "object",
}

INSTANCES: list[Any] = [
    {"title": "x"}, {"title": "x", "tags": None}, {"title": "x", "tags": ["a"]}, {"title": "x", "tags": [1]},
    {"title": "x", "tags": "a"}, {"title": "x", "inner": None}, {"title": "x", "inner": {"n": 1}},
    {"title": "x", "inner": {"n": -1}}, {"title": "x", "inner": {}}, {"title": "x", "k": 0}, {"title": "x", "k": 50},
    {"title": "x", "k": None}, {"title": "x", "mode": "c"}, {"title": "x", "mode": "a"}, {"title": "x", "either": 1.5},
    {"title": "x", "either": "s"}, {}, {"title": None}, [], "x",
    {"title": "x", "maybe_mode": None}, {"title": "x", "maybe_mode": "a"}, {"title": "x", "maybe_mode": "c"},
]


def _accepts(schema: dict[str, Any], instance: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_lean_schema_accepts_and_refuses_the_same_json() -> None:
    lean = lean_schema(PYDANTIC_SHAPED)
    for instance in INSTANCES:
        assert _accepts(lean, instance) == _accepts(PYDANTIC_SHAPED, instance), instance


def test_lean_schema_drops_only_redundancy() -> None:
    lean = lean_schema(PYDANTIC_SHAPED)
    props = lean["properties"]
    assert "title" not in lean and "title" not in props["k"] and "title" not in lean["$defs"]["Inner"]
    assert props["title"] == {"type": "string", "description": "A property named title stays."}
    assert props["tags"] == {"items": {"type": "string"}, "type": ["array", "null"]}
    # a $ref cannot be merged into a type list: the anyOf stays, only the null default goes
    assert props["inner"] == {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}
    assert props["k"] == {"default": 5, "maximum": 50, "minimum": 1, "type": "integer"}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    # an optional Literal: merged, its enum would refuse null, so the anyOf stays
    assert props["maybe_mode"] == {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}
    assert PYDANTIC_SHAPED["properties"]["tags"]["title"] == "Tags", "the input must not be changed"


def test_lean_description_joins_wrapped_lines_and_keeps_paragraphs_and_lists() -> None:
    doc = """Index documentation so that
        search_docs can find it.

        - first item
        - second item
          continued"""
    assert lean_description(doc) == "Index documentation so that search_docs can find it.\n\n- first item\n- second item continued"
    assert lean_description(None) is None


def _listing_text(value: Any) -> list[str]:
    """Every description string anywhere in a listing."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in ([v] if k == "description" and isinstance(v, str) else _listing_text(v))]
    if isinstance(value, list):
        return [t for v in value for t in _listing_text(v)]
    return []


async def test_listings_have_plain_descriptions_and_no_pydantic_titles(standin_client: McpClient) -> None:
    async with standin_client() as c:
        tools = (await c.list_tools()).tools
        prompts = (await c.list_prompts()).prompts
        templates = (await c.list_resource_templates()).resource_templates
        resources = (await c.list_resources()).resources
    dumped = [x.model_dump(mode="json", by_alias=True, exclude_none=True)
              for x in [*tools, *prompts, *templates, *resources]]
    texts = _listing_text(dumped)
    assert len(texts) > 50
    for text in texts:
        assert "  " not in text and "\n " not in text, f"indented description: {text!r}"
    for tool in tools:
        for schema in (tool.input_schema, tool.output_schema or {}):
            assert not _title_keywords(schema), (tool.name, _title_keywords(schema))


def _title_keywords(schema: Any, at: str = "") -> list[str]:
    """Where a ``title`` keyword sits in ``schema`` (property names are data, not keywords)."""
    if isinstance(schema, list):
        return [p for i, s in enumerate(schema) for p in _title_keywords(s, f"{at}[{i}]")]
    if not isinstance(schema, dict):
        return []
    found = [at or "/"] if "title" in schema else []
    for key, value in schema.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            found += [p for name, sub in value.items() for p in _title_keywords(sub, f"{at}/{key}/{name}")]
        elif key != "title":
            found += _title_keywords(value, f"{at}/{key}")
    return found


async def test_what_the_model_reads_of_the_tools_stays_small(standin_client: McpClient) -> None:
    """Name, description and input schema of every tool sit in the model's context each turn."""
    async with standin_client() as c:
        tools = (await c.list_tools()).tools
    in_context = sum(len(t.name) + len(t.description or "") + len(json.dumps(t.input_schema)) for t in tools)
    # 8 tools: 8.9k characters measured after the lean listing, 11.5k before it; 9.8k before
    # restore and history (0.7k together, descriptions already one line), 10.5k with them, 10.9k with consolidate,
    # 11.1k with visibility, 11.2k with min_relevance; 10.9k after shortening the longest descriptions
    assert in_context < 11_000, in_context


async def test_real_replies_validate_against_the_lean_output_schemas(standin_client: McpClient) -> None:
    async with standin_client(project="p") as c:
        schemas = {t.name: t.output_schema for t in (await c.list_tools()).tools}
        replies = {
            "remember": await call(c, "remember", content="The deploy script lives in ops/deploy.sh", key="where.deploy"),
            "recall": await call(c, "recall", query="deploy script"),
            "get_profile": await call(c, "get_profile"),
            "set_task_state": await call(c, "set_task_state", task_id="t1", title="Port", state={"step": "one"}),
            "get_task_state": await call(c, "get_task_state", task_id="t1"),
            "search_docs": await call(c, "search_docs", query="deploy"),
            "forget": await call(c, "forget", key="where.deploy", dry_run=True),
        }
        await call(c, "forget", key="where.deploy")
        replies["restore"] = await call(c, "restore", id=replies["remember"]["id"])
        replies["history"] = await call(c, "history", key="where.deploy")
    for name, reply in replies.items():
        schema = schemas[name]
        assert schema is not None, name
        jsonschema.Draft202012Validator(schema).validate(reply)
