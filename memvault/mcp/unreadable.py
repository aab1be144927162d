"""The answer to a JSON-RPC line that the MCP library cannot read.

The SDK's line transports drop a line that fails its JSON-RPC parser (its JSON reader
refuses a lone UTF-16 surrogate such as ``"\\ud800"`` and nesting deeper than about 200
levels; any message of the wrong shape fails too) without answering it, so the client
waits for its own timeout. memvault reads such a line again with the standard library's
JSON reader, finds the request id (or scans for it when the line is not JSON at all) and
answers with a JSON-RPC error whose message says what was wrong and what to send instead.

``replies_to_unreadable(line, why)`` is a pure function: the error lines to write (none
for a line that is not a request with an id: JSON-RPC answers no notification or
response, and a line without a findable id is logged, not answered).
"""

from __future__ import annotations

import json
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_SDK_MAX_DEPTH = 200
"""Nesting the MCP library's JSON reader accepts: arrays and objects inside the message object."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string, or one structural character. Strings are matched whole, so brackets,
# colons and commas inside them are never taken for structure. Linear: the alternatives
# of the string body cannot both match at one place.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
_SPACE = re.compile(r"\s*")


def replies_to_unreadable(line: str, why: str = "") -> list[str]:
    """The JSON-RPC error lines (no newline) answering ``line``; empty when nothing is to be answered.

    ``line``: one message as the client sent it (text). ``why``: what the MCP library's
    parser said (used when nothing clearer is found). Each reply carries the id of the
    request it answers and a message naming the problem and what to send instead. A line
    whose request id cannot be found, a notification, and a response (to the server's own
    request) get no reply: answering those with ``"id": null`` could start an endless
    exchange of errors with a peer that answers errors too. Never raises.
    """
    try:
        msg = json.loads(line)
    except RecursionError:
        msg_id, has_method = _scan_id(line)
        if msg_id is None or not has_method:
            return []
        return [_error(msg_id, PARSE_ERROR, "the message nests JSON arrays or objects too deeply to read "
                       f"(memvault reads at most {_SDK_MAX_DEPTH} levels); send flatter arguments")]
    except ValueError as exc:
        msg_id, has_method = _scan_id(line)
        if msg_id is None or not has_method:
            return []
        where = f" ({exc.msg} at column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return [_error(msg_id, PARSE_ERROR, f"the message is not valid JSON{where}; send one JSON-RPC message "
                       "per line, as UTF-8 JSON")]
    if isinstance(msg, list):  # a batch: JSON-RPC has them, MCP does not
        return [_error(m["id"], INVALID_REQUEST, "batches (a JSON array of messages) are not part of MCP; send "
                       "one JSON-RPC message per line")
                for m in msg if isinstance(m, dict) and "method" in m and _valid_id(m.get("id"))]
    if not isinstance(msg, dict) or "method" not in msg or not _valid_id(msg.get("id")):
        return []  # not a request, or one whose id no client can be waiting on
    reply = _why(msg, why)
    return [reply] if reply is not None else []


def _why(msg: dict[str, Any], why: str) -> str | None:
    """The error answering request ``msg`` (JSON, with a valid id) that the SDK could not read."""
    msg_id = msg["id"]
    surrogate = _find_surrogate(msg)
    if surrogate is not None:
        path, char = surrogate
        return _error(msg_id, INVALID_PARAMS, f"{path} holds a lone UTF-16 surrogate (\\u{ord(char):04x}), "
                      "which is not valid Unicode text; send the text as valid UTF-8 (a character outside "
                      "the BMP as one character or a complete surrogate pair)")
    depth = _depth(msg)
    if depth > _SDK_MAX_DEPTH:
        return _error(msg_id, INVALID_PARAMS, f"the request nests JSON {depth} levels deep; memvault reads at "
                      f"most {_SDK_MAX_DEPTH} levels: send flatter arguments")
    if msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str) \
            or not isinstance(msg.get("params", {}), dict):
        return _error(msg_id, INVALID_REQUEST, 'not a JSON-RPC 2.0 request: it needs "jsonrpc": "2.0", a '
                      'string "method" and, if any, an object "params"')
    detail = f" ({why[:200]})" if why else ""
    return _error(msg_id, INVALID_REQUEST, f"the request could not be read{detail}")


def _error(msg_id: Any, code: int, message: str) -> str:
    # ensure_ascii: an id that holds a lone surrogate still makes a line the client can read.
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}},
                      ensure_ascii=True, separators=(",", ":"))


def _valid_id(msg_id: Any) -> bool:
    return isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))


def _scan_id(line: str) -> tuple[Any, bool]:
    """``(id, has_method)`` of the top-level object of a line that is not JSON (id None when not found)."""
    depth, msg_id, has_method = 0, None, False
    for m in _TOKEN.finditer(line):
        tok = m.group()
        if tok in "{[":
            depth += 1
        elif tok in "}]":
            depth -= 1
        elif depth == 1 and tok.startswith('"'):
            after = _SPACE.match(line, m.end()).end()  # type: ignore[union-attr]  # \s* always matches
            if not line.startswith(":", after):
                continue
            if tok == '"method"':
                has_method = True
            elif tok == '"id"':
                value_at = _SPACE.match(line, after + 1).end()  # type: ignore[union-attr]
                try:
                    value, _ = json.JSONDecoder().raw_decode(line, value_at)
                except (ValueError, RecursionError):
                    value = None
                msg_id = value if _valid_id(value) else None
            if msg_id is not None and has_method:
                break
    return msg_id, has_method


def _find_surrogate(msg: Any) -> tuple[str, str] | None:
    """``(path, character)`` of the first lone surrogate in a key or string of ``msg``, or None."""
    stack: list[tuple[str, Any]] = [("the request", msg)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            hit = _LONE_SURROGATE.search(node)
            if hit:
                return path, hit.group()
        elif isinstance(node, dict):
            for key, value in reversed(list(node.items())):
                hit = _LONE_SURROGATE.search(key)
                if hit:
                    return f"a key in {path}", hit.group()
                stack.append((key if path == "the request" else f"{path}.{key}", value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(node))))
    return None


def _depth(msg: Any) -> int:
    """Nesting depth of arrays and objects inside ``msg`` (the message object itself is level 0)."""
    deepest, stack = 0, [(msg, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in node)
    return deepest
