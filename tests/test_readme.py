"""README's tool tables agree with what the server lists.

Each tool the server lists has one README row ``name(arg, arg=default, ...)`` naming exactly
its arguments, with the same defaults where the server declares one (README's ``[]`` and
``None`` both stand for "omitted").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import McpClient

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parents[1] / "README.md"
_ROW = re.compile(r"^\| `(\w+)\((.*?)\)`", re.MULTILINE)


def readme_signatures() -> dict[str, dict[str, Any]]:
    """``{tool: {arg: default or ...}}`` from README's table rows (``...`` = no default)."""
    out: dict[str, dict[str, Any]] = {}
    for name, args in _ROW.findall(README.read_text(encoding="utf-8")):
        call = ast.parse(f"f({args})", mode="eval").body
        assert isinstance(call, ast.Call)
        sig: dict[str, Any] = {a.id: ... for a in call.args if isinstance(a, ast.Name)}
        sig.update({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg})
        assert name not in out, f"README describes {name} twice"
        out[name] = sig
    return out


async def test_readme_rows_name_every_tool_argument_and_default(mcp_client: McpClient) -> None:
    async with mcp_client() as c:
        tools = (await c.list_tools()).tools
    documented = readme_signatures()
    for tool in tools:
        assert tool.name in documented, f"README has no row for {tool.name}"
        props: dict[str, Any] = tool.input_schema.get("properties", {})
        sig = documented[tool.name]
        assert set(sig) == set(props), f"{tool.name}: README {sorted(sig)} vs server {sorted(props)}"
        required = set(tool.input_schema.get("required", []))
        for arg, default in sig.items():
            if default is ...:
                assert arg in required, f"{tool.name}.{arg} has a default on the server"
                continue
            assert arg not in required, f"{tool.name}.{arg} is required on the server"
            declared = props[arg].get("default")
            if default in (None, []):
                assert declared is None, f"{tool.name}.{arg}: README says omitted, server default {declared!r}"
            else:
                assert declared == default, f"{tool.name}.{arg}: README {default!r}, server {declared!r}"
    assert set(documented) <= {t.name for t in tools}, "README describes a tool the server does not list"
