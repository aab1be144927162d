"""Scope resolution: which tenant and project a call reads or writes.

The user always comes from settings, or in the owner process from the connection's
client, or over HTTP from the request's bearer token (a tool argument can never name
another user).
The project comes from, in order: the tool's ``project`` argument; the client's MCP
roots (the project of the first ``file://`` root, see ``memvault.service.scope.project``); the
repository of the folder the server (in the owner: the connection's ``memvault serve``)
was started in, when it is inside a git work tree (Claude Code starts its servers in the
project folder); the ``project`` setting (in the owner: the connection's); the start
folder itself (``local:<name>-<hash>``, as a root naming it gives), unless it is ``/``,
the home folder itself or a system or application folder
(``memvault.service.scope.project.is_no_project_folder``); else the user's global scope ``""``.

The agent (whose private memories the call reads and writes) is the client's
``MEMVAULT_AGENT_ID`` (in the owner: the connection's, sent by its forwarder), else the
name the client gave in its handshake (``clientInfo.name``), casefolded; '' when the client
gave neither (it then reads shared memories only and cannot write private ones).

The roots are read once per client connection and read again after the client says
they changed (``notifications/roots/list_changed``). On 2026-07-28 connections every
request is its own connection, so there the roots are read on every call.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp_types import ListRootsResult, NotificationParams

from memvault.config import Settings
from memvault.mcp import connection
from memvault.mcp.ctx import client_name
from memvault.mcp.http import request_user
from memvault.mcp.workspace import Workspace
from memvault.service.memory.models import Scope
from memvault.service.scope.project import (
    Project,
    folder_of_uri,
    make_scope,
    project_of_folder,
)
from memvault.service.validation import agent_label, check_project

log = logging.getLogger(__name__)

_ROOTS_STATE = "memvault.roots"
_MAX_ASKED = 256  # questions in flight on one connection; more means answers that never came


class _ConnectionRoots:
    """What one connection's roots say, kept in the SDK's per-connection state.

    ``known``/``project``: the project of the roots last read (None: no file root).
    ``changes`` counts ``roots/list_changed`` notifications; ``asked`` maps a request
    that asked for the roots to the count when it asked, so an answer that a change
    overtook is used for its call but not kept.
    """

    def __init__(self) -> None:
        self.known = False
        self.project: Project | None = None
        self.changes = 0
        self.asked: dict[Any, int] = {}

    def forget(self) -> None:
        self.changes += 1
        self.known, self.project = False, None
        self.asked.clear()


def _connection_roots(session: Any) -> _ConnectionRoots | None:
    """The roots memo of the connection ``session`` belongs to; None when it has none.

    The SDK builds a new session object for every request, but one ``Connection`` per
    client connection (per request on 2026-07-28 connections), whose ``state`` dict
    lives as long as the connection. The session does not expose it publicly.
    """
    state = getattr(getattr(session, "_connection", None), "state", None)
    if not isinstance(state, dict):
        return None
    memo = state.get(_ROOTS_STATE)
    if not isinstance(memo, _ConnectionRoots):
        memo = state[_ROOTS_STATE] = _ConnectionRoots()
    return memo


def workspace_of(ctx: Context[Any, Any]) -> Workspace:
    """The Workspace of the server handling ``ctx`` (set by ``memvault.mcp.app.build_server``)."""
    ws = getattr(ctx.mcp_server, "workspace", None)
    if not isinstance(ws, Workspace):
        raise RuntimeError("memvault's tools must be served by memvault.mcp.app.build_server's server")
    return ws


async def client_roots(ctx: Context, project: str | None = None) -> ListRoots | None:
    """Resolver: ask the client for its MCP roots only when they decide the scope.

    Returns None (no question) when the tool got a ``project`` argument, when this
    connection's roots were already read and have not changed since, or when the client
    has no roots capability. The SDK sends the ``roots/list`` request the way the
    negotiated protocol wants (mid-call, or as an input-required round on 2026-07-28+
    connections).
    """
    if project is not None:
        return None
    caps = ctx.client_capabilities
    if caps is None or caps.roots is None:
        return None
    memo = _connection_roots(ctx.session)
    if memo is not None:
        if memo.known:
            return None
        if len(memo.asked) >= _MAX_ASKED:
            memo.asked.clear()
        memo.asked[ctx.request_id] = memo.changes
    return ListRoots()


Roots = Annotated[ListRootsResult | None, Resolve(client_roots)]
"""A tool parameter the SDK fills (not the model): the client's roots when they decide the scope."""


async def on_roots_list_changed(ctx: ServerRequestContext[Any, Any], _params: NotificationParams) -> None:
    """Handler of ``notifications/roots/list_changed``: the next call reads the roots again."""
    memo = _connection_roots(ctx.session)
    if memo is not None:
        memo.forget()
        log.info("client roots changed; the project is read again on the next call")


# A folder's project, as git last said (monotonic time, Project). On 2026-07-28 connections
# the roots come with every call; asking git each time costs two processes (~15-30 ms
# here). A folder's repository and remote change rarely, and a change shows within
# FOLDER_PROJECT_TTL_S.
FOLDER_PROJECT_TTL_S = 30.0
_FOLDER_PROJECTS_MAX = 256
_folder_projects: dict[Path, tuple[float, Project]] = {}


async def project_of_root_folder(folder: Path) -> Project:
    """``project_of_folder`` in a worker thread, remembered for ``FOLDER_PROJECT_TTL_S`` seconds."""
    now = time.monotonic()
    known = _folder_projects.get(folder)
    if known is not None and now - known[0] < FOLDER_PROJECT_TTL_S:
        return known[1]
    project = await anyio.to_thread.run_sync(project_of_folder, folder)
    if len(_folder_projects) >= _FOLDER_PROJECTS_MAX:
        _folder_projects.clear()
    _folder_projects[folder] = (now, project)
    return project


async def project_from_roots(result: ListRootsResult | None) -> Project | None:
    """Project of the first ``file://`` root of a ``roots/list`` result, or None (asks git)."""
    if result is None:
        return None
    for root in result.roots:
        folder = folder_of_uri(str(root.uri))
        if folder is not None:
            return await project_of_root_folder(folder)
    return None


def call_agent(ctx: Context[Any, Any], settings: Settings) -> str:
    """The agent a call acts for (see the module docstring): the connection's (in the owner) or
    the settings' ``agent_id``, else the client's name; '' when there is neither."""
    conn = connection.current()
    configured = conn.agent_id if conn is not None else settings.server.agent_id
    return agent_label(configured) or agent_label(client_name(ctx)) or ""


async def resolve_scope(ctx: Context[Any, Any], settings: Settings, project: str | None, roots: ListRootsResult | None, *,
                        include_global: bool = True) -> Scope:
    """Scope of one call: settings' user and the call's agent (``call_agent``); project from
    argument, client roots, the start folder's repository, settings, the start folder, else global.

    ``roots``: what the ``client_roots`` (or any roots) resolver got, None when it asked
    nothing. Raises InvalidArgument when ``project`` is not an allowed name.
    """
    project = check_project(project)
    conn = connection.current()
    user = conn.user_id if conn is not None else \
        request_user(ctx.request_context.request) or settings.server.user_id
    agent = call_agent(ctx, settings)
    if project is not None:
        return make_scope(user, project, "argument", include_global=include_global, agent=agent)
    memo = _connection_roots(ctx.session)
    found: Project | None = None
    if roots is not None:
        found = await project_from_roots(roots)
        if memo is not None and memo.asked.pop(ctx.request_id, None) == memo.changes:
            memo.known, memo.project = True, found
    elif memo is not None and memo.known:
        found = memo.project
    if found is not None:
        return make_scope(user, found.id, "roots", include_global=include_global, agent=agent)
    started = await (conn.workspace if conn is not None else workspace_of(ctx)).start_project()
    if started is not None and started.kind != "folder":
        return make_scope(user, started.id, "cwd", include_global=include_global, agent=agent)
    configured = conn.project if conn is not None else settings.server.project
    if configured:
        return make_scope(user, configured, "settings", include_global=include_global, agent=agent)
    if started is not None:
        return make_scope(user, started.id, "cwd", include_global=include_global, agent=agent)
    return make_scope(user, "", "global", include_global=include_global, agent=agent)
