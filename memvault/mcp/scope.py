"""Scope resolution: which tenant and project a call reads or writes.

The user always comes from settings (a tool argument can never name another user).
The project comes from, in order: the tool's ``project`` argument; the client's MCP
roots (first ``file://`` root, normalised to its git remote, else its folder name);
the ``project`` setting; else the user's global scope ``""``.
"""

from __future__ import annotations

import logging

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import ListRoots
from mcp_types import ListRootsResult

from memvault.config import Settings
from memvault.mcp import connection
from memvault.service.models import Scope
from memvault.service.project import make_scope, project_from_root
from memvault.service.validation import check_project

log = logging.getLogger(__name__)


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


def _workspace() -> _WorkspaceCache:
    """The roots cache of the current connection in the owner, else the process's."""
    conn = connection.current()
    if conn is None:
        return WORKSPACE
    cache = conn.cache.get("workspace")
    if not isinstance(cache, _WorkspaceCache):
        cache = conn.cache["workspace"] = _WorkspaceCache()
    return cache


async def client_roots(ctx: Context, project: str | None = None) -> ListRoots | None:
    """Resolver: ask the client for its MCP roots only when they decide the scope.

    Returns None (no question) when the tool got a ``project`` argument, when the
    client's roots were already read, or when the client has no roots capability.
    The SDK sends the ``roots/list`` request the way the negotiated protocol wants
    (mid-call, or as an input-required round on 2026-07-28+ connections).
    """
    if project is not None or _workspace().known:
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
    conn = connection.current()
    user = conn.user_id if conn is not None else settings.user_id
    if project is not None:
        return make_scope(user, project, "argument", include_global=include_global)
    workspace = _workspace()
    if workspace.known:
        from_roots = workspace.project
    else:
        from_roots = project_from_roots(roots)
        if roots is not None or ctx.client_capabilities is None or ctx.client_capabilities.roots is None:
            workspace.set(from_roots)
    if from_roots:
        return make_scope(user, from_roots, "roots", include_global=include_global)
    configured = conn.project if conn is not None else settings.project
    if configured:
        return make_scope(user, configured, "settings", include_global=include_global)
    return make_scope(user, "", "global", include_global=include_global)
