"""MCP wrapper of ``consolidate``.

Thin, like ``memvault.mcp.tools.history``: resolve the scope, call
``memvault.service.memory.consolidate``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from memvault.mcp.ctx import Ctx, client_name, runtime
from memvault.mcp.errors import reported
from memvault.mcp.scope import Roots, resolve_scope
from memvault.service.memory.consolidate import ConsolidateArgs
from memvault.service.memory.consolidate import consolidate as consolidate_handler
from memvault.service.memory.consolidate_models import ConsolidateResult
from memvault.service.validation import clean_label

CONSOLIDATE_DESCRIPTION = (
    "Propose merging memories that restate each other; dry_run=false applies, restore(merged id) undoes."
)


def register_consolidate_tools(mcp: MCPServer) -> None:
    """Register consolidate on ``mcp``."""

    @mcp.tool(
        title="Consolidate",
        description=CONSOLIDATE_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    @reported
    async def consolidate(
        ctx: Ctx,
        roots: Roots,
        project: Annotated[str | None, Field(description="Omit: current project.")] = None,
        dry_run: Annotated[bool, Field(description="true: only propose.")] = True,
        limit: Annotated[int, Field(description="Most merges (1-100).")] = 20,
    ) -> ConsolidateResult:
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=False)
        return await consolidate_handler(runtime(ctx), scope,
                                         ConsolidateArgs(dry_run=dry_run, limit=limit, project_given=project is not None),
                                         actor=clean_label(client_name(ctx)))
