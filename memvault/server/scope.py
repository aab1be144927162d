"""Scope resolution: which tenant and project a call reads or writes.

The user always comes from settings (a tool argument can never name another user).
The project comes from, in order: the tool's ``project`` argument; the client's MCP
roots (first ``file://`` root, normalised to its git remote, else its folder name);
the ``project`` setting; else the user's global scope ``""``.
"""

from __future__ import annotations

import configparser
import logging
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import ListRoots
from mcp_types import ListRootsResult

from memvault.config import Settings
from memvault.tools.models import Scope
from memvault.tools.validation import check_project

log = logging.getLogger(__name__)

_SCP_REMOTE = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # scp-like: git@host:owner/repo


def normalise_remote(url: str) -> str | None:
    """A git remote URL -> ``host/owner/repo`` (lowercase host, no scheme, user or ``.git``).

    ``git@github.com:Org/Repo.git`` and ``https://github.com/Org/Repo`` both give
    ``github.com/Org/Repo``; None when the URL has no recognisable path.
    """
    url = url.strip()
    m = _SCP_REMOTE.match(url)
    if m:
        host, path = m.group(1), m.group(2)
    else:
        parsed = urlparse(url)
        host, path = (parsed.hostname or ""), parsed.path
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    if not path:
        return None
    return f"{host.lower()}/{path}" if host else path


def git_remote(folder: Path) -> str | None:
    """The normalised ``origin`` (else first) remote of the git work tree holding ``folder``."""
    for d in [folder, *folder.parents]:
        cfg = d / ".git" / "config"
        if cfg.is_file():
            parser = configparser.ConfigParser(strict=False)
            try:
                parser.read(cfg, encoding="utf-8")
            except (configparser.Error, OSError):
                return None
            sections = [s for s in parser.sections() if s.startswith("remote ")]
            sections.sort(key=lambda s: s != 'remote "origin"')
            for s in sections:
                url = parser.get(s, "url", fallback=None)
                if url and (name := normalise_remote(url)):
                    return name
            return None
    return None


def project_from_root(uri: str) -> str | None:
    """Project name for one MCP root URI (``file:///home/me/src/app``), or None if not a file root."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    folder = Path(unquote(parsed.path))
    return git_remote(folder) or folder.name or None


def project_from_roots(result: ListRootsResult | None) -> str | None:
    """Project named after the first ``file://`` root of a ``roots/list`` result, or None."""
    if result is None:
        return None
    for root in result.roots:
        name = project_from_root(str(root.uri))
        if name:
            return name
    return None


class _WorkspaceCache:
    """The project read from the client's roots, asked once per server process.

    On stdio a server process serves exactly one client, and on 2026-07-28 connections
    every request arrives with a fresh session object, so the process is the only
    stable key. (An HTTP transport serving several clients must key this by client.)
    """

    def __init__(self) -> None:
        self.known = False
        self.project: str | None = None

    def set(self, project: str | None) -> None:
        self.known, self.project = True, project

    def clear(self) -> None:
        self.known, self.project = False, None


WORKSPACE = _WorkspaceCache()


async def client_roots(ctx: Context, project: str | None = None) -> ListRoots | None:
    """Resolver: ask the client for its MCP roots only when they decide the scope.

    Returns None (no question) when the tool got a ``project`` argument, when the
    client's roots were already read, or when the client has no roots capability.
    The SDK sends the ``roots/list`` request the way the negotiated protocol wants
    (mid-call, or as an input-required round on 2026-07-28+ connections).
    """
    if project is not None or WORKSPACE.known:
        return None
    caps = ctx.client_capabilities
    if caps is None or caps.roots is None:
        return None
    return ListRoots()


def resolve_scope(ctx: Context, settings: Settings, project: str | None, roots: ListRootsResult | None, *,
                  include_global: bool = True) -> Scope:
    """Scope of one call: settings' user; project from argument, client roots, settings, else global.

    Raises ToolError when ``project`` is not an allowed name.
    """
    project = check_project(project)
    user = settings.user_id
    if project is not None:
        return make_scope(user, project, "argument", include_global=include_global)
    if WORKSPACE.known:
        from_roots = WORKSPACE.project
    else:
        from_roots = project_from_roots(roots)
        if roots is not None or ctx.client_capabilities is None or ctx.client_capabilities.roots is None:
            WORKSPACE.set(from_roots)
    if from_roots:
        return make_scope(user, from_roots, "roots", include_global=include_global)
    if settings.project:
        return make_scope(user, settings.project, "settings", include_global=include_global)
    return make_scope(user, "", "global", include_global=include_global)


def make_scope(user_id: str, project: str, source: str, *, include_global: bool = True) -> Scope:
    """The Scope of a call: writes go to ``project``; reads cover it plus global unless excluded."""
    reads = [project] if project == "" or not include_global else [project, ""]
    return Scope(user_id=user_id, project=project, projects_read=reads, source=source)
