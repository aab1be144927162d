"""The layer rule, checked on the source: each package imports only the layers below it.

    memvault.mcp (MCP face), memvault.cli*      -> service, config, clock (mcp hosts the web face: -> web)
    memvault.web (the local web page's face)     -> service, config, clock
    memvault.service (remember, recall, ...)     -> policy, storage, embedding, ingest
    memvault.storage / embedding / ingest         -> policy, config, clock
    memvault.policy                               -> nothing of memvault, no I/O
    memvault.vocabulary (kinds, task statuses)    <- every layer but policy

Nothing but the MCP face imports the MCP SDK (the web face neither) (``mcp``, ``mcp_types``). Imports inside
functions and under ``TYPE_CHECKING`` count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memvault

ROOT = Path(memvault.__file__).parent

# package -> the memvault packages it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "policy": set(),
    "vocabulary": set(),
    "config": {"vocabulary"},
    "clock": set(),
    "ingest": {"policy", "config", "vocabulary"},
    "embedding": {"config", "vocabulary"},
    "storage": {"policy", "config", "clock", "vocabulary"},
    "service": {"policy", "storage", "embedding", "ingest", "config", "clock", "vocabulary"},
    "mcp": {"service", "config", "clock", "vocabulary", "web"},
    "web": {"service", "config", "clock", "vocabulary"},
}
# The CLI and ``python -m memvault`` sit beside the MCP face and may use every layer.
UNCHECKED = {"cli", "cli_index", "cli_clients", "cli_transfer", "cli_consolidate", "cli_ui", "cli_hooks", "cli_owner",
             "cli_stats", "__main__", "__init__"}
SDK = {"mcp", "mcp_types"}
# Third-party or stdlib modules that mean I/O; the policy layer is pure functions.
IO_MODULES = {"os", "io", "pathlib", "sqlite3", "aiosqlite", "anyio", "asyncio", "socket", "subprocess",
              "shutil", "tempfile", "qdrant_client", "qdrant_edge", "fastembed", "onnxruntime", "httpx"}


def _layer(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, relative ones resolved
    against ``package`` (the dotted package the file lives in)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
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
        if layer in UNCHECKED:
            continue
        allowed = ALLOWED[layer] | {layer}
        where = path.relative_to(ROOT.parent)
        for line, mod in _imports(path):
            top = mod.split(".")[0]
            if top in SDK and layer != "mcp":
                bad.append(f"{where}:{line} imports the MCP SDK ({mod}); only memvault.mcp may")
            if layer == "policy" and top in IO_MODULES:
                bad.append(f"{where}:{line} imports {mod}; policy is pure (no I/O)")
            if top == "memvault" and mod != "memvault":
                target = mod.split(".")[1]
                if target not in allowed:
                    bad.append(f"{where}:{line} imports {mod}: layer {layer!r} may import only {sorted(allowed)}")
    return bad


def test_every_module_belongs_to_a_known_layer() -> None:
    layers = {_layer(p) for p in ROOT.rglob("*.py")}
    unknown = layers - set(ALLOWED) - UNCHECKED
    assert not unknown, f"new top-level modules need a place in the layer map: {sorted(unknown)}"


def test_imports_follow_the_layers() -> None:
    bad = _violations()
    assert not bad, "layer rule broken:\n" + "\n".join(bad)


def test_the_check_sees_every_form_of_import() -> None:
    """Relative, dotted and ``from memvault import x`` imports all resolve to the module they name."""
    src = "from mcp.server import x\nfrom ..mcp import app\nimport memvault.mcp.app\nfrom memvault import mcp\n"
    mods = [m for _, m in _imports_in(src, "memvault.service")]
    assert mods == ["mcp.server", "memvault.mcp", "memvault.mcp.app", "memvault", "memvault.mcp"]
