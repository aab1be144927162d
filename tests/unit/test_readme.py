"""The README is a short front door and the reference in docs/ agrees with the server.

- docs/tools.md has one row ``| `name(arg, arg=default, ...)` | what | `{reply}` |`` per tool
  the server lists, naming exactly its arguments, with the same defaults where the server
  declares one (``[]`` and ``None`` both stand for "omitted"), and a reply naming exactly
  the fields of the tool's output schema (``scope``'s own fields once, in "Reply fields").
- README.md stays at most 15,000 characters, keeps its five-step start and the test command
  CI runs, and links into docs/ for the reference; every relative link of README.md and
  docs/*.md reaches an existing file, and an anchor a heading of that file.

The settings table (docs/settings.md) is checked against ``memvault/config.py`` by
tests/unit/test_settings.py.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import McpClient

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOOLS = ROOT / "docs" / "tools.md"
README_MAX_CHARS = 15_000
# The reference pages the README must link to (the issue of a front door: one place to start).
REFERENCE_PAGES = ("tools.md", "settings.md", "documents.md", "profile-and-tasks.md", "consolidation.md",
                   "clients.md", "http.md", "benchmarks.md")

_ROW = re.compile(r"^\| `(\w+)\((.*?)\)`", re.MULTILINE)
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_NAME = re.compile(r"[A-Za-z_]\w*")


def tool_rows() -> dict[str, tuple[str, str]]:
    """``{tool: (argument text, reply text)}`` from docs/tools.md's table rows."""
    out: dict[str, tuple[str, str]] = {}
    for line in TOOLS.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in _CELL_SPLIT.split(line.strip().strip("|"))]
        reply = cells[-1].replace("\\|", "|")
        assert reply.startswith("`{") and reply.endswith("}`"), f"{m[1]}: reply cell is not `{{...}}`: {reply[:60]}"
        assert m[1] not in out, f"docs/tools.md describes {m[1]} twice"
        out[m[1]] = (m[2], reply[1:-1])
    return out


def documented_signatures() -> dict[str, dict[str, Any]]:
    """``{tool: {arg: default or ...}}`` (``...`` = no default)."""
    out: dict[str, dict[str, Any]] = {}
    for name, (args, _) in tool_rows().items():
        call = ast.parse(f"f({args})", mode="eval").body
        assert isinstance(call, ast.Call)
        sig: dict[str, Any] = {a.id: ... for a in call.args if isinstance(a, ast.Name)}
        sig.update({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg})
        out[name] = sig
    return out


# --- the reply notation: {a, b: x|y, c: {d, e}, f: [{g}], h: {KEY: {i}}, j: {KIND: n}} ---

Fields = dict[str, "Fields | None"]


def parse_reply(text: str) -> Fields:
    """The fields of a reply written in docs/tools.md's notation; ValueError names the place."""
    fields, end = _parse_object(text, 0)
    if text[end:].strip():
        raise ValueError(f"text after the reply: {text[end:]!r}")
    return fields


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] == " ":
        i += 1
    return i


def _parse_object(text: str, i: int) -> tuple[Fields, int]:
    i = _skip(text, i)
    if text[i:i + 1] != "{":
        raise ValueError(f"expected '{{' at {text[i:i + 20]!r}")
    fields: Fields = {}
    i += 1
    while True:
        i = _skip(text, i)
        if text[i:i + 1] == "}":
            return fields, i + 1
        m = _NAME.match(text, i)
        if not m:
            raise ValueError(f"expected a field name at {text[i:i + 20]!r}")
        name, i = m[0], _skip(text, m.end())
        sub: Fields | None = None
        if text[i:i + 1] == ":":
            i = _skip(text, i + 1)
            if text[i:i + 1] == "{":
                sub, i = _parse_object(text, i)
            elif text[i:i + 1] == "[" and text[_skip(text, i + 1):_skip(text, i + 1) + 1] == "{":
                sub, i = _parse_object(text, _skip(text, i + 1))
                i = _skip(text, i)
                if text[i:i + 1] != "]":
                    raise ValueError(f"expected ']' after {name}'s items at {text[i:i + 20]!r}")
                i += 1
            else:  # a leaf's values (x|y, n, [id]): up to the next ',' or '}' at this depth
                depth = 0
                while i < len(text) and not (depth == 0 and text[i] in ",}"):
                    depth += text[i] in "[{"
                    depth -= text[i] in "]}"
                    i += 1
        if name in fields:
            raise ValueError(f"field {name} named twice")
        fields[name] = sub
        i = _skip(text, i)
        if text[i:i + 1] == ",":
            i += 1


def reply_paths(fields: Fields, prefix: str = "") -> set[str]:
    """Dotted paths of ``fields``; an object keyed by a name (``{KEY: {...}}``) is ``*``."""
    out: set[str] = set()
    for name, sub in fields.items():
        out.add(prefix + name)
        if sub is None:
            continue
        if len(sub) == 1 and next(iter(sub)).isupper():  # {KEY: ...}: an object keyed by a name
            inner = next(iter(sub.values()))
            if inner is not None:
                out |= reply_paths(inner, f"{prefix}{name}.*.")
        else:
            out |= reply_paths(sub, f"{prefix}{name}.")
    return out


def schema_paths(schema: dict[str, Any], defs: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted paths of the properties of a JSON Schema (array items at their list's path)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    out: set[str] = set()
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        out |= schema_paths(branch, defs, prefix)
    if isinstance(schema.get("items"), dict):
        out |= schema_paths(schema["items"], defs, prefix)
    for name, sub in schema.get("properties", {}).items():
        out.add(prefix + name)
        out |= schema_paths(sub, defs, f"{prefix}{name}.")
    if isinstance(schema.get("additionalProperties"), dict):
        out |= schema_paths(schema["additionalProperties"], defs, f"{prefix}*.")
    return out


def _without_scope_fields(paths: set[str]) -> set[str]:
    """``scope``'s own fields are documented once (docs/tools.md, "Reply fields")."""
    return {p for p in paths if not re.search(r"(^|\.)scope\.", p)}


def test_reply_notation_parses_nesting_lists_maps_and_values() -> None:
    fields = parse_reply("{id, status: stored|declined, m: [{a, b: x|y}], p: {KEY: {v, o: {id}}}, c: {KIND: n}, l: [id]}")
    assert reply_paths(fields) == {"id", "status", "m", "m.a", "m.b", "p", "p.*.v", "p.*.o", "p.*.o.id", "c", "l"}
    for bad in ("{a, a}", "{a: [{b}}", "{a", "{a} b", "{, }"):
        with pytest.raises(ValueError):
            parse_reply(bad)


@pytest.mark.anyio
async def test_tools_page_names_every_tool_argument_default_and_reply_field(mcp_client: McpClient) -> None:
    async with mcp_client() as c:
        tools = (await c.list_tools()).tools
    rows = tool_rows()
    documented = documented_signatures()
    scope_fields: set[str] = set()
    for tool in tools:
        assert tool.name in documented, f"docs/tools.md has no row for {tool.name}"
        props: dict[str, Any] = tool.input_schema.get("properties", {})
        sig = documented[tool.name]
        assert set(sig) == set(props), f"{tool.name}: docs/tools.md {sorted(sig)} vs server {sorted(props)}"
        required = set(tool.input_schema.get("required", []))
        for arg, default in sig.items():
            if default is ...:
                assert arg in required, f"{tool.name}.{arg} has a default on the server"
                continue
            assert arg not in required, f"{tool.name}.{arg} is required on the server"
            declared = props[arg].get("default")
            if default in (None, []):
                assert declared is None, f"{tool.name}.{arg}: docs/tools.md says omitted, server default {declared!r}"
            else:
                assert declared == default, f"{tool.name}.{arg}: docs/tools.md {default!r}, server {declared!r}"
        output = tool.output_schema or {}
        served = schema_paths(output, output.get("$defs", {}))
        scope_fields |= {p.rsplit(".", 1)[1] for p in served if re.search(r"(^|\.)scope\.\w+$", p)}
        written = reply_paths(parse_reply(rows[tool.name][1]))
        served = _without_scope_fields(served)
        assert not served - written, f"{tool.name}: docs/tools.md's reply lacks {sorted(served - written)}"
        assert not written - served, f"{tool.name}: docs/tools.md's reply names {sorted(written - served)}, not served"
    assert set(documented) <= {t.name for t in tools}, "docs/tools.md describes a tool the server does not list"
    text = TOOLS.read_text(encoding="utf-8")
    section = text[text.index("\n## Reply fields\n"):]
    section = section[: section.index("\n## ", 1)]
    named = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    assert scope_fields and named == scope_fields, f"scope fields: docs/tools.md {sorted(named)} vs server {sorted(scope_fields)}"


# --- the README ---

def test_readme_is_a_short_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text) <= README_MAX_CHARS, f"README.md has {len(text)} characters, at most {README_MAX_CHARS}"
    assert re.search(r"^python -m pytest -q( +#.*)?$", text, re.MULTILINE), "README.md lost the test command CI runs"
    linked = {Path(t.split("#")[0]).name for t in _links(text) if t.startswith("docs/")}
    missing = [p for p in REFERENCE_PAGES if p not in linked]
    assert not missing, f"README.md does not link to docs/{', docs/'.join(missing)}"
    toc = text[text.index("\n## Contents\n"):]
    toc = toc[: toc.index("\n## ", 1)]
    headings = {_slug(h) for h in re.findall(r"^## (.+)$", _without_code(text), re.MULTILINE)} - {"contents"}
    listed = set(re.findall(r"\]\(#([^)]+)\)", toc))
    assert headings == listed, f"README's contents list {sorted(listed)}, its sections are {sorted(headings)}"


def test_readme_first_memory_in_five_steps() -> None:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^## (Your first memory in five steps)$", text, re.MULTILINE)
    assert m, "README.md has no '## Your first memory in five steps'"
    section = text[m.end():]
    section = section[: section.index("\n## ")]
    steps = re.findall(r"^(\d)\. (.+)$", section, re.MULTILINE)
    assert [n for n, _ in steps] == ["1", "2", "3", "4", "5"], steps
    # install -> register -> restart the client -> "remember that ..." -> see it in memvault ui
    for (_, line), needle in zip(steps, ("pip install", "client-config", "restart", "remember that", "memvault ui"),
                                 strict=True):
        assert needle in line.lower(), f"step {line!r} should say {needle!r}"


def _without_code(text: str) -> str:
    """``text`` without fenced code blocks (a ``#`` there is no heading, a ``](`` no link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _links(text: str) -> list[str]:
    """Targets of the Markdown links and images of ``text`` outside code."""
    text = re.sub(r"`[^`\n]*`", "", _without_code(text))
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    return "".join(ch for ch in text if ch in "-_ " or unicodedata.category(ch)[0] in "LN").replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _without_code(path.read_text(encoding="utf-8")), re.MULTILINE):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_slug_is_githubs() -> None:
    assert _slug("Scope: user and project") == "scope-user-and-project"
    assert _slug("Worked example: restatements, proposals, apply, undo") == \
        "worked-example-restatements-proposals-apply-undo"
    assert _slug("`memvault ui` (the page)") == "memvault-ui-the-page"


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_anchor(page: Path) -> None:
    broken = []
    for target in _links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)
