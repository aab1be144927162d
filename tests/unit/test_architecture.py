"""The layer rule, checked on the source: each package imports only the layers below it, and the
import graph of memvault has no circle.

    memvault.cli (the console script)             -> any layer; no layer imports it
    memvault.process (owner, forwarder, sockets)  -> mcp, web, service, config, clock
    memvault.mcp (the MCP face)                   -> service, config, clock
    memvault.web (the local web page's face)      -> service, config, clock
    memvault.service (remember, recall, ...)      -> policy, storage, embedding, ingest
    memvault.storage / embedding / ingest         -> policy, config, clock
    memvault.policy                               -> nothing of memvault, no I/O
    memvault.vocabulary (kinds, task statuses)    <- every layer but policy
    memvault.defaults (defaults config and the hooks share) -> nothing of memvault

The process topology sits above the MCP face: it decides which process serves a client and
hands each connection to the face, which never knows whether it runs in an owner, alone on
stdio, or behind HTTP. Nothing but the MCP face imports the MCP SDK (``mcp``, ``mcp_types``),
except the CLI, whose ``memvault index`` is an MCP client of a running owner. Imports inside
functions and under ``TYPE_CHECKING`` count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import memvault

ROOT = Path(memvault.__file__).parent

# package -> the memvault packages it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "policy": set(),
    "vocabulary": set(),
    "defaults": set(),
    "config": {"vocabulary", "defaults"},
    "clock": set(),
    "ingest": {"policy", "config", "vocabulary"},
    "embedding": {"config", "vocabulary"},
    "storage": {"policy", "config", "clock", "vocabulary"},
    "service": {"policy", "storage", "embedding", "ingest", "config", "clock", "vocabulary"},
    "mcp": {"service", "config", "clock", "vocabulary"},
    "web": {"service", "config", "clock", "vocabulary"},
    "process": {"mcp", "web", "service", "config", "clock", "vocabulary"},
    "__init__": set(),
}
# The console script may use every layer; ``python -m memvault`` is the console script.
ALLOWED["cli"] = set(ALLOWED)
ALLOWED["__main__"] = {"cli"}
SDK = {"mcp", "mcp_types"}
SDK_USERS = {"mcp", "cli"}
# Third-party or stdlib modules that mean I/O; the policy layer is pure functions.
IO_MODULES = {"os", "io", "pathlib", "sqlite3", "aiosqlite", "anyio", "asyncio", "socket", "subprocess",
              "shutil", "tempfile", "qdrant_client", "qdrant_edge", "fastembed", "onnxruntime", "httpx"}


def _layer(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute module of ``from ... import``, a relative one resolved against ``package``
    (the dotted package the importing file lives in)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, relative ones resolved
    against ``package`` (the dotted package the file lives in)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _from_module(node, package)
            out.append((node.lineno, mod))
            if mod == "memvault":  # from memvault import x: x may be a module of memvault
                out += [(node.lineno, f"memvault.{a.name}") for a in node.names
                        if (ROOT / a.name).is_dir() or (ROOT / f"{a.name}.py").is_file()]
    return out


def _imports(path: Path) -> list[tuple[int, str]]:
    package = ".".join(["memvault", *path.relative_to(ROOT).parent.parts])
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _violations() -> list[str]:
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        layer = _layer(path)
        allowed = ALLOWED[layer] | {layer}
        where = path.relative_to(ROOT.parent)
        for line, mod in _imports(path):
            top = mod.split(".")[0]
            if top in SDK and layer not in SDK_USERS:
                bad.append(f"{where}:{line} imports the MCP SDK ({mod}); only memvault.mcp (and the CLI) may")
            if layer == "policy" and top in IO_MODULES:
                bad.append(f"{where}:{line} imports {mod}; policy is pure (no I/O)")
            if top == "memvault" and mod != "memvault":
                target = mod.split(".")[1]
                if target not in allowed:
                    bad.append(f"{where}:{line} imports {mod}: layer {layer!r} may import only {sorted(allowed)}")
    return bad


def test_every_module_belongs_to_a_known_layer() -> None:
    layers = {_layer(p) for p in ROOT.rglob("*.py")}
    unknown = layers - set(ALLOWED)
    assert not unknown, f"new top-level modules need a place in the layer map: {sorted(unknown)}"


def test_imports_follow_the_layers() -> None:
    bad = _violations()
    assert not bad, "layer rule broken:\n" + "\n".join(bad)


def _module_name(path: Path) -> str:
    """``memvault/service/memory/recall.py`` -> ``memvault.service.memory.recall``; a package's
    ``__init__.py`` is the package."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _edges(source: str, module: str, package: str, modules: set[str]) -> set[str]:
    """The memvault modules ``module`` imports: ``from a import b`` counts as importing the
    module ``a.b`` when there is one (and ``a`` itself only for names that are not modules);
    a name below a module (``a.func``) counts as the module ``a``."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _from_module(node, package)
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in modules]
            names = subs + ([mod] if len(subs) < len(node.names) else [])
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and name.split(".")[0] == "memvault":
                out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the memvault modules it imports, for every module of memvault."""
    paths = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    modules = set(paths)
    graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        graph[module] = _edges(path.read_text(encoding="utf-8"), module, package, modules)
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One circle (``[a, b, ..., a]``) per strongly connected group of ``graph`` that has one.

    Tarjan's algorithm, iterative; then, inside each group of more than one module, a path
    from its first module back to itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    found = []
    for group in groups:
        start = min(group)
        paths = {start: [start]}
        queue = [start]
        while queue:  # breadth first inside the group, until an arrow leads back to the start
            node = queue.pop(0)
            if start in graph.get(node, ()):
                found.append([*paths[node], start])
                break
            for nxt in sorted(set(graph.get(node, ())) & group):
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    queue.append(nxt)
    return found


def test_the_import_graph_has_no_circle() -> None:
    found = circles(import_graph())
    assert not found, "import circles (each arrow: imports):\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_circle_check_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"a"}}
    assert sorted(circles(graph)) == [["a", "b", "c", "a"], ["e", "f", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_from_imports() -> None:
    """``from pkg import module`` is an arrow to the module; a lazy import inside a function is an arrow."""
    modules = {"memvault.a", "memvault.a.b", "memvault.c"}
    src = "from memvault.a import b\ndef f():\n    from memvault.c import thing\n"
    assert _edges(src, "memvault.x", "memvault", modules) == {"memvault.a.b", "memvault.c"}


def test_the_check_sees_every_form_of_import() -> None:
    """Relative, dotted and ``from memvault import x`` imports all resolve to the module they name."""
    src = "from mcp.server import x\nfrom ..mcp import app\nimport memvault.mcp.app\nfrom memvault import mcp\n"
    mods = [m for _, m in _imports_in(src, "memvault.service")]
    assert mods == ["mcp.server", "memvault.mcp", "memvault.mcp.app", "memvault", "memvault.mcp"]
