"""What ``tools/list`` and ``prompts/list`` show: the same tools, in fewer characters.

Clients put every tool's name, description and input schema into the model's context on
every turn (the Anthropic tool format is ``name``, ``description``, ``input_schema``), so
each character there is paid for in every conversation; output schemas travel on the wire
and are used by clients to check replies. The SDK derives both schemas from pydantic, which
adds a ``title`` to every property (the property's own name, capitalised), spells an
optional argument as ``anyOf: [{T}, {"type": "null"}]`` with ``default: null``, and keeps the
docstring's indentation in the description. The functions here remove exactly that
redundancy and nothing that carries meaning: every property, type, enum, bound, default and
description stays, and the schemas accept the same JSON as before.
"""

from __future__ import annotations

import inspect
from typing import Any

# JSON Schema keywords whose value is a mapping of names to subschemas (the names are data,
# not keywords: a property called "title" is kept).
_NAMED_SUBSCHEMAS = ("properties", "$defs", "definitions", "patternProperties")


def lean_description(text: str | None) -> str | None:
    """``text`` without docstring indentation, its hard-wrapped lines joined.

    Paragraphs (separated by a blank line) and list items (lines starting with ``- ``) keep
    their line breaks; ``None`` stays ``None``.
    """
    if text is None:
        return None
    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in para.splitlines():
            line = line.strip()
            if lines and not line.startswith("- "):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(p for p in paragraphs if p)


def lean_schema(schema: Any) -> Any:
    """A copy of the JSON Schema ``schema`` without pydantic's redundant parts.

    - ``title`` keywords are dropped (the property name already says it);
    - ``{"anyOf": [{"type": T, ...}, {"type": "null"}]}`` becomes ``{"type": [T, "null"], ...}``
      when the first branch is a plain typed schema without ``enum`` / ``const`` (whose
      values would then refuse null): same instances accepted;
    - ``"default": null`` is dropped from optional properties (absent means null);
    - descriptions lose their docstring indentation.
    Anything else is copied unchanged.
    """
    if isinstance(schema, list):
        return [lean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
            out[key] = {name: lean_schema(sub) for name, sub in value.items()}
        elif key == "description" and isinstance(value, str):
            out[key] = lean_description(value)
        else:
            out[key] = lean_schema(value)
    _collapse_optional(out)
    if out.get("default", 0) is None and _allows_null(out):
        del out["default"]
    return out


def _collapse_optional(schema: dict[str, Any]) -> None:
    """In place: ``anyOf [typed, null]`` -> ``type: [T, "null"]`` with the typed branch's keywords."""
    branches = schema.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches):
        return
    typed = next(b for b in branches if b != {"type": "null"})
    if not isinstance(typed, dict) or not isinstance(typed.get("type"), str):
        return  # a $ref or a union: keep the anyOf
    if "enum" in typed or "const" in typed:
        return  # an optional Literal: its values list no null, so the anyOf stays
    if any(k in schema for k in typed):
        return  # the typed branch's keywords would clash with the outer ones
    del schema["anyOf"]
    schema.update(typed)
    schema["type"] = [typed["type"], "null"]


def _allows_null(schema: dict[str, Any]) -> bool:
    """True when ``schema`` accepts JSON null at its top level."""
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(b == {"type": "null"} for b in schema.get("anyOf", []))
