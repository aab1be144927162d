"""The hostile inputs: built from what the server lists (tools, prompts, resources), as raw JSON-RPC lines.

Every tool's input schema is read from ``tools/list``, so a new tool or argument is swept
without editing this file: each argument gets the hostile values of its JSON type
(strings, numbers, booleans, arrays, objects, enums), the other arguments keeping a
valid base value. Per tool also: a missing required argument, unknown arguments,
arguments that are not an object. Per prompt and resource template the same string
values; then protocol-level lines (not JSON, invalid UTF-8, odd ids, batches, a 20 MB
line, 100,000-deep nesting) and ``index_docs`` paths that escape (traversal, symlinks
out, a FIFO, /dev/zero, /proc). Values that JSON cannot carry in a Python ``json.dumps``
(NaN, 1e999, deep nesting) are written as raw text (``Raw``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEEP = 100_000


class Raw(str):
    """JSON text written as is (not quoted): NaN, Infinity, 1e999, deep nesting."""


def dump(v: Any) -> str:
    """JSON text of ``v`` with ``Raw`` pieces verbatim and lone surrogates as ``\\udxxx`` escapes."""
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{dump(str(k))}:{dump(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(dump(x) for x in v) + "]"
    raise TypeError(f"cannot dump {type(v).__name__}")


@dataclass
class Case:
    """One hostile input. ``line(rid)``: the bytes sent (a request with id ``rid``, or anything).

    ``expect_reply``: the line is a request whose id the server can read, so a reply is due.
    """

    group: str
    target: str  # tool / prompt / resource / "protocol"
    name: str
    line: Callable[[int], bytes]
    expect_reply: bool = True


def request_line(method: str, params: Any) -> Callable[[int], bytes]:
    """A request line builder: ``{"jsonrpc": "2.0", "id": rid, "method": method, "params": params}``."""
    def build(rid: int) -> bytes:
        p = "" if params is _OMIT else f',"params":{dump(params)}'
        return f'{{"jsonrpc":"2.0","id":{rid},"method":{dump(method)}{p}}}'.encode()
    return build


_OMIT = object()

# ---------------------------------------------------------------------------- values by type

STRINGS: list[tuple[str, Any]] = [
    ("empty", ""),
    ("blank", " \t\r\n "),
    ("huge 2 MB ascii", "lorem ipsum " * 170_000),
    ("huge 3 MB CJK", "记忆存储" * 250_000),
    ("one 200k-char token", "x" * 200_000),
    ("NUL byte", "before\x00after"),
    ("lone high surrogate", "a\ud800b"),
    ("lone low surrogate", "\udfffz"),
    ("control characters", "\x01\x02\x07\x08\x1b[31mred\x1b[0m\x7f\x85"),
    ("bidi override", "safe\u202etxt.exe\u202c \u2066iso\u2069 \u200f"),
    ("zero-width", "a\u200bb\u200cc\u200dd\ufeff"),
    ("confusables", "\u0440\u0430\u0443\u0440\u0430l \u0441onfig"),
    ("SQL injection", "x'); DROP TABLE memories; --"),
    ("SQL tautology", "' OR '1'='1' --"),
    ("FTS syntax", 'NEAR(a b) OR "x"* AND content:* ^'),
    ("Qdrant filter JSON", '{"must":[{"key":"user_id","match":{"any":["*"]}}]}'),
    ("path traversal", "../../../../etc/passwd"),
    ("absolute path", "/etc/passwd"),
    ("format string", "%s%n%x {0} {__class__.__mro__} ${HOME} $(id)"),
    ("emoji ZWJ x200", "\U0001f469\u200d\U0001f469\u200d\U0001f467" * 200),
    ("JSON-RPC line injection", 'a\n{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'),
    ("noncharacters", "\ufffe\uffff\U0010ffff"),
]
#: The subset of string values used as array items and in URIs.
ITEM_STRINGS = ["NUL byte", "lone high surrogate", "SQL injection", "path traversal", "bidi override",
                "huge 2 MB ascii"]
NUMBERS: list[tuple[str, Any]] = [
    ("negative", -1), ("zero", 0), ("1e308", 1e308), ("-1e308", -1e308), ("NaN", Raw("NaN")),
    ("Infinity", Raw("Infinity")), ("-Infinity", Raw("-Infinity")), ("1e999", Raw("1e999")),
    ("10**40", 10**40), ("numeric string", "5"), ("boolean", True), ("fraction", 2.5), ("null", None),
]
BOOLEANS: list[tuple[str, Any]] = [("string 'true'", "true"), ("1", 1), ("null", None), ("empty list", []),
                                   ("string 'false'", "false")]
OBJECTS: list[tuple[str, Any]] = [
    ("string", "not an object"), ("list", [1, 2]), ("100k-deep", Raw('{"a":' * DEEP + "1" + "}" * DEEP)),
    ("100k keys", {f"k{i}": i for i in range(100_000)}), ("NUL key", {"\x00": 1}),
    ("__proto__", {"__proto__": {"polluted": True}, "constructor": {"prototype": {}}}),
    ("NaN value", {"a": Raw("NaN")}), ("surrogate value", {"a": "\ud800"}), ("5 MB value", {"a": "z" * 5_000_000}),
]
ENUMS: list[tuple[str, Any]] = [("unknown value", "unknown"), ("upper case", "FACT"), ("trailing space", "fact "),
                                ("empty", ""), ("null", None), ("number", 5), ("NUL inside", "fact\x00")]


def arrays(item_enum: list[Any] | None) -> list[tuple[str, Any]]:
    """Hostile array values (``item_enum``: the items' allowed values, when they have an enum)."""
    out: list[tuple[str, Any]] = [
        ("not a list", "not a list"), ("wrong item types", [1, None, {}, 2.5, [True]]),
        ("100k items", ["x"] * 100_000), ("100k-deep nesting", Raw("[" * DEEP + "]" * DEEP)),
    ]
    strings = dict(STRINGS)
    out += [(f"item: {n}", [strings[n]]) for n in ITEM_STRINGS]
    if item_enum:
        out += [("item: unknown enum value", ["unknown"]), ("item: wrong case", [str(item_enum[0]).upper()])]
    return out


def kind_of(schema: dict[str, Any]) -> tuple[str, list[Any] | None]:
    """(type, enum) of a property schema: type one of enum, string, integer, number, boolean, array, object."""
    types: list[str] = []
    enum = schema.get("enum")
    for s in [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]:
        t = s.get("type")
        types += [t] if isinstance(t, str) else list(t or [])
        enum = enum or s.get("enum")
    if enum:
        return "enum", enum
    for t in ("string", "integer", "number", "boolean", "array", "object"):
        if t in types:
            if t == "array":
                items = schema.get("items") or next((s.get("items") for s in schema.get("anyOf", []) if s.get("items")),
                                                    {})
                return "array", kind_of(items)[1] if items else None
            return t, None
    return "object", None


def values_for(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """The hostile values of one property."""
    kind, enum = kind_of(schema)
    if kind == "enum":
        return ENUMS
    if kind == "string":
        return STRINGS
    if kind in ("integer", "number"):
        return NUMBERS
    if kind == "boolean":
        return BOOLEANS
    if kind == "array":
        return arrays(enum)
    return OBJECTS


# ---------------------------------------------------------------------------- cases


def base_value(schema: dict[str, Any]) -> Any:
    """A valid value for a required property of a tool this file has no base for."""
    kind, enum = kind_of(schema)
    return {"enum": (enum or [None])[0], "string": "hostile sweep base", "integer": 1, "number": 1.0,
            "boolean": False, "array": [], "object": {}}[kind]


def tool_cases(tool: dict[str, Any], base: dict[str, Any]) -> Iterator[Case]:
    """Every hostile case of one tool (from its ``tools/list`` entry); ``base``: valid arguments."""
    name = tool["name"]
    schema = tool.get("inputSchema") or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = list(schema.get("required") or [])
    args = dict(base)
    for r in required:
        args.setdefault(r, base_value(props.get(r, {})))

    def call(arguments: Any) -> Callable[[int], bytes]:
        return request_line("tools/call", {"name": name, "arguments": arguments} if arguments is not _OMIT
                            else {"name": name})

    for prop, pschema in props.items():
        for vname, value in values_for(pschema):
            yield Case(f"{kind_of(pschema)[0]} argument", name, f"{prop}: {vname}", call({**args, prop: value}))
    for r in required:
        yield Case("structure", name, f"missing required {r}", call({k: v for k, v in args.items() if k != r}))
    yield Case("structure", name, "unknown argument", call({**args, "unknown_arg": 1, "__proto__": {"x": 1}}))
    yield Case("structure", name, "1000 unknown arguments", call({**args, **{f"x{i}": i for i in range(1000)}}))
    for vname, value in (("arguments a list", []), ("arguments a string", "x"), ("arguments null", None),
                         ("arguments a number", 5)):
        yield Case("structure", name, vname, call(value))
    yield Case("structure", name, "arguments omitted", call(_OMIT))


def prompt_cases(prompt: dict[str, Any]) -> Iterator[Case]:
    """Hostile arguments of one prompt (its arguments are strings)."""
    name = prompt["name"]
    argn = [a["name"] for a in prompt.get("arguments") or []]
    base = {a: "billing service" for a in argn}
    for a in argn:
        for vname, value in STRINGS:
            yield Case("prompt argument", name, f"{a}: {vname}",
                       request_line("prompts/get", {"name": name, "arguments": {**base, a: value}}))
        for vname, value in (("number", 5), ("null", None), ("list", ["x"])):
            yield Case("prompt argument", name, f"{a}: {vname}",
                       request_line("prompts/get", {"name": name, "arguments": {**base, a: value}}))
        yield Case("prompt argument", name, f"missing {a}", request_line("prompts/get", {"name": name, "arguments": {}}))
    yield Case("prompt argument", name, "arguments a list", request_line("prompts/get", {"name": name, "arguments": []}))


def resource_cases(static: list[str], templates: list[str]) -> Iterator[Case]:
    """Hostile reads of the listed resources and templates, and of URIs nobody listed."""
    def read(uri: Any) -> Callable[[int], bytes]:
        return request_line("resources/read", {"uri": uri})

    strings = dict(STRINGS)
    for t in templates:
        if "{" not in t:
            continue
        head, rest = t.split("{", 1)
        tail = rest.split("}", 1)[1]
        for vname, value in STRINGS:
            yield Case("resource", t, f"parameter: {vname}", read(head + value + tail))
        for vname, value in (("percent-encoded traversal", "%2e%2e%2f%2e%2e%2fprofile"), ("slash traversal", "../profile"),
                             ("query string", "x?user_id=other"), ("fragment", "x#other")):
            yield Case("resource", t, f"parameter: {vname}", read(head + value + tail))
    for s in static:
        for vname, suffix in (("query string", "?user_id=other"), ("trailing traversal", "/../../etc/passwd"),
                              ("NUL", "\x00"), ("surrogate", "\ud800")):
            yield Case("resource", s, vname, read(s + suffix))
    for vname, uri in (("file URI", "file:///etc/passwd"), ("empty URI", ""), ("unknown scheme", "gopher://x"),
                       ("huge URI", "memvault://" + "a" * 2_000_000), ("not a string", 5), ("null", None),
                       ("bidi URI", "memvault://\u202eeliforp"), ("surrogate URI", strings["lone high surrogate"])):
        yield Case("resource", "(unlisted)", vname, read(uri))


def protocol_cases() -> Iterator[Case]:
    """Lines that are not well-formed requests, and requests no tool sees."""
    def fixed(line: bytes) -> Callable[[int], bytes]:
        return lambda rid: line

    def raw(fmt: str) -> Callable[[int], bytes]:
        return lambda rid: fmt.replace("RID", str(rid)).encode()

    yield Case("protocol", "protocol", "not JSON", fixed(b"this is not json {"), expect_reply=False)
    yield Case("protocol", "protocol", "empty line", fixed(b""), expect_reply=False)
    yield Case("protocol", "protocol", "invalid UTF-8 in a string",
               lambda rid: b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"recall",'
                           b'"arguments":{"query":"a\xff\xfe\xc3b"}}}' % rid)
    yield Case("protocol", "protocol", "invalid UTF-8 outside strings", fixed(b'\xff\xfe{"jsonrpc":"2.0"}'),
               expect_reply=False)
    yield Case("protocol", "protocol", "UTF-8 BOM before a request",
               lambda rid: b'\xef\xbb\xbf{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rid)
    yield Case("protocol", "protocol", "JSON array batch", raw('[{"jsonrpc":"2.0","id":RID,"method":"ping"}]'))
    yield Case("protocol", "protocol", "JSON scalar", fixed(b"42"), expect_reply=False)
    yield Case("protocol", "protocol", "unknown method", request_line("memvault/drop_everything", {}))
    yield Case("protocol", "protocol", "tools/call without params", request_line("tools/call", _OMIT))
    yield Case("protocol", "protocol", "tools/call params a list", request_line("tools/call", ["recall"]))
    yield Case("protocol", "protocol", "unknown tool", request_line("tools/call", {"name": "drop_table", "arguments": {}}))
    yield Case("protocol", "protocol", "tool name with NUL",
               request_line("tools/call", {"name": "recall\x00", "arguments": {"query": "x"}}))
    yield Case("protocol", "protocol", "tool name 1 MB", request_line("tools/call", {"name": "r" * 1_000_000}))
    yield Case("protocol", "protocol", "tool name a surrogate", request_line("tools/call", {"name": "\ud800"}))
    yield Case("protocol", "protocol", "unknown prompt", request_line("prompts/get", {"name": "nope"}))
    yield Case("protocol", "protocol", "id null", fixed(b'{"jsonrpc":"2.0","id":null,"method":"ping"}'),
               expect_reply=False)
    yield Case("protocol", "protocol", "id an object", fixed(b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'),
               expect_reply=False)
    yield Case("protocol", "protocol", "id a float", raw('{"jsonrpc":"2.0","id":RID.5,"method":"ping"}'),
               expect_reply=False)
    yield Case("protocol", "protocol", "id 1 MB string", fixed(('{"jsonrpc":"2.0","id":"' + "i" * 1_000_000
                                                                 + '","method":"ping"}').encode()), expect_reply=False)
    yield Case("protocol", "protocol", "jsonrpc 1.0", raw('{"jsonrpc":"1.0","id":RID,"method":"ping"}'))
    yield Case("protocol", "protocol", "no jsonrpc member", raw('{"id":RID,"method":"ping"}'))
    yield Case("protocol", "protocol", "duplicate keys",
               raw('{"jsonrpc":"2.0","id":RID,"method":"tools/call","params":{"name":"recall","name":"forget",'
                   '"arguments":{"query":"x","ids":["y"]}}}'))
    yield Case("protocol", "protocol", "20 MB line", raw('{"jsonrpc":"2.0","id":RID,"method":"ping","params":{"pad":"'
                                                         + "p" * 20_000_000 + '"}}'))
    yield Case("protocol", "protocol", "100k-deep params",
               raw('{"jsonrpc":"2.0","id":RID,"method":"ping","params":{"a":' + "[" * DEEP + "]" * DEEP + "}}"))
    yield Case("protocol", "protocol", "100k-deep outside params",
               fixed(("[" * DEEP + "]" * DEEP).encode()), expect_reply=False)
    yield Case("protocol", "protocol", "cancel of an unknown request",
               fixed(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}'),
               expect_reply=False)
    yield Case("protocol", "protocol", "response nobody asked for",
               fixed(b'{"jsonrpc":"2.0","id":987654321,"result":{}}'), expect_reply=False)
    yield Case("protocol", "protocol", "second initialize",
               request_line("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                           "clientInfo": {"name": "\ud800", "version": "0"}}))


def path_cases(root: Path, plain: Path, traps: Path) -> Iterator[Case]:
    """``index_docs`` with paths that leave the allowed folder ``root`` or are not regular files
    (``plain``: a folder of ordinary files in it; ``traps``: ``make_traps``'s folder in it)."""
    def idx(paths: Any) -> Callable[[int], bytes]:
        return request_line("tools/call", {"name": "index_docs", "arguments": {"paths": paths}})

    for vname, paths in (
        ("relative traversal", ["../../../../etc"]), ("traversal inside the root", [str(root / ".." / ".." / "etc")]),
        ("/", ["/"]), ("/etc/passwd", ["/etc/passwd"]), ("/proc/self/environ", ["/proc/self/environ"]),
        ("/dev/zero", ["/dev/zero"]), ("home ~", ["~"]), ("file URI", [f"file://{root}"]), ("glob", [str(root / "*")]),
        ("symlink to /etc/passwd", [str(traps / "passwd-link")]), ("symlink to /dev/zero", [str(traps / "zero-link")]),
        ("symlink loop", [str(traps / "loop-a")]), ("FIFO", [str(traps / "fifo")]),
        ("folder with FIFO and links", [str(traps)]), ("NUL in path", [str(root) + "\x00/../etc"]),
        ("path 100k chars", [str(root) + "/" + "d" * 100_000]), ("empty list", []), ("empty string", [""]),
        ("1000 paths", [str(plain)] * 1000),
    ):
        yield Case("index_docs path", "index_docs", vname, idx(paths))


def make_traps(traps: Path) -> None:
    """The trap folder of ``path_cases``: a FIFO, symlinks to /etc/passwd and /dev/zero, a symlink loop."""
    traps.mkdir(parents=True, exist_ok=True)
    os.mkfifo(traps / "fifo")
    (traps / "passwd-link").symlink_to("/etc/passwd")
    (traps / "zero-link").symlink_to("/dev/zero")
    (traps / "loop-a").symlink_to(traps / "loop-b")
    (traps / "loop-b").symlink_to(traps / "loop-a")
