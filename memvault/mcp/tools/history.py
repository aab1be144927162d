"""MCP wrappers of ``restore`` and ``history``.

Thin, like ``memvault.mcp.tools.memory``: resolve the caller (and for a key's history
the scope), call ``memvault.service.memory.restore`` / ``memvault.service.memory.history``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from memvault.mcp.ctx import Ctx, client_name, runtime
from memvault.mcp.errors import reported
from memvault.mcp.scope import Roots, resolve_scope
from memvault.service.memory.history import HistoryArgs
from memvault.service.memory.history import history as history_handler
from memvault.service.memory.history_models import HistoryResult, RestoreResult
from memvault.service.memory.restore import restore as restore_handler
from memvault.service.validation import clean_label

RESTORE_DESCRIPTION = (
    "Bring back a forgotten or superseded memory by id (not an erased one); it takes its key back; "
    "undoes a merge."
)

HISTORY_DESCRIPTION = "A memory's changes (or a key's, across its memories), newest first: what, when, who, text."


def register_history_tools(mcp: MCPServer) -> None:
    """Register restore / history on ``mcp``."""

    @mcp.tool(
        title="Restore",
        description=RESTORE_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    @reported
    async def restore(
        id: Annotated[str, Field(description="Memory id (from recall, forget or history).")],
        ctx: Ctx,
    ) -> RestoreResult:
        # The memory's own project is used; '' only names the caller without asking for roots.
        scope = await resolve_scope(ctx, runtime(ctx).settings, "", None)
        return await restore_handler(runtime(ctx), scope.user_id, id, actor=clean_label(client_name(ctx)),
                                     reader=scope.agent)

    @mcp.tool(
        title="History",
        description=HISTORY_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def history(
        ctx: Ctx,
        roots: Roots,
        id: Annotated[str | None, Field(description="One memory (give id or key).")] = None,
        key: Annotated[str | None, Field(description="Every memory that held this key.")] = None,
        project: Annotated[str | None, Field(description="For key: omit for current + global.")] = None,
        limit: Annotated[int, Field(description="Newest entries to list (1-100).")] = 20,
    ) -> HistoryResult:
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=project is None)
        return await history_handler(runtime(ctx), scope, HistoryArgs(id=id, key=key, limit=limit, project=project))
