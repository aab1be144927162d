"""The MCP face of memvault: builds the ``MCPServer`` and registers the tools.

Each tool here is a thin wrapper: it resolves the scope, then calls the handler in
``memvault.tools`` that applies the policies. Tool descriptions are written for the
model that reads them.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Resolve
from mcp_types import ListRootsResult
from mcp_types import ToolAnnotations
from pydantic import Field

from memvault import __version__
from memvault.server.ctx import client_name, runtime
from memvault.config import Settings
from memvault.server.docs_tools import register_doc_tools
from memvault.server.lifespan import make_lifespan
from memvault.server.profile_tools import register_profile_tools
from memvault.server.scope import client_roots, resolve_scope
from memvault.tools.forget import ForgetArgs
from memvault.tools.forget import forget as forget_handler
from memvault.tools.models import ForgetResult, RecallResult, RememberResult
from memvault.tools.recall import RecallArgs
from memvault.tools.recall import recall as recall_handler
from memvault.tools.remember import RememberArgs
from memvault.tools.remember import remember as remember_handler

log = logging.getLogger(__name__)

Kind = Literal["preference", "fact", "decision", "episode", "procedure", "note"]

INSTRUCTIONS = """\
memvault is this user's long-term memory across sessions and clients.
- recall at the start of a task, and whenever the user refers to earlier work, decisions,
  preferences or "last time" / "as before" / "上次"; recall before asking the user something
  they may already have told you.
- remember stable preferences (use a key such as pref.package_manager so a later value
  replaces the old), decisions and their reasons, facts about the project or the user,
  and lessons learned (what fixed a problem). One self-contained sentence per memory, in
  the user's language. Never store secrets, passwords or tokens.
- Memories belong to the current project (from the workspace) unless you pass project=""
  for facts true everywhere (e.g. the user's own preferences).
- forget when the user asks, or when a memory is wrong; prefer remember with the same key
  or supersedes=[id] to correct one.
"""

# Filled by the SDK (not by the model): the client's MCP roots when they decide the scope.
Roots = Annotated[ListRootsResult | None, Resolve(client_roots)]

RecallProject = Annotated[
    str | None,
    Field(description="Project to read; omit for the current project, '' for the user's global scope only."),
]


REMEMBER_DESCRIPTION = (
    "Store a memory for later sessions. The reply says stored, reinforced (already known), "
    "superseded (replaced an older one) or declined (and why)."
)

RECALL_DESCRIPTION = (
    "Find relevant memories from earlier sessions (current project + global by default), best first, "
    "each with its id, kind, scores and dates. Long contents are cut; the reply is bounded."
)

FORGET_DESCRIPTION = (
    "Forget memories chosen by selectors (combined with AND; at least one). Soft by default (kept in "
    "history); hard=true erases them. Use dry_run=true to preview."
)




def register_memory_tools(mcp: MCPServer) -> None:
    """Register remember / recall / forget on ``mcp``."""

    @mcp.tool(
        title="Remember",
        description=REMEMBER_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def remember(
        content: Annotated[str, Field(description="One self-contained statement worth keeping, e.g. 'The user prefers pnpm over npm'.")],
        ctx: Context,
        roots: Roots,
        kind: Annotated[Kind, Field(description="preference | fact | decision | episode | procedure | note")] = "fact",
        key: Annotated[str | None, Field(description="Stable slot, e.g. 'pref.package_manager'; a new value with the same key replaces the old.")] = None,
        tags: Annotated[list[str] | None, Field(description="Short labels for filtering.")] = None,
        importance: Annotated[float | None, Field(description="0..1; omit to let memvault score it.")] = None,
        ttl_days: Annotated[float | None, Field(description="Days until it expires; omit for the kind's default.")] = None,
        supersedes: Annotated[list[str] | None, Field(description="Ids of memories this one replaces.")] = None,
        project: Annotated[str | None, Field(description="Omit for the current project; '' for the user's global scope.")] = None,
        source: Annotated[str | None, Field(description="Where it came from (file, session, client); defaults to the client's name.")] = None,
        force: Annotated[bool, Field(description="Store even if scored unimportant (never overrides the secret check).")] = False,
    ) -> RememberResult:
        scope = resolve_scope(ctx, runtime(ctx).settings, project, roots)
        args = RememberArgs(content=content, kind=kind, key=key, tags=tags or [], importance=importance,
                            ttl_days=ttl_days, supersedes=supersedes or [], source=source or client_name(ctx),
                            force=force)
        return await remember_handler(runtime(ctx), scope, args)

    @mcp.tool(
        title="Recall",
        description=RECALL_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False),
    )
    async def recall(
        query: Annotated[str, Field(description="What to look for, in any language; identifiers and error codes work too.")],
        ctx: Context,
        roots: Roots,
        k: Annotated[int, Field(description="How many memories to return (1-50).")] = 5,
        kinds: Annotated[list[Kind] | None, Field(description="Only these kinds.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with at least one of these tags.")] = None,
        since: Annotated[str | None, Field(description="ISO date/time: created at or after.")] = None,
        until: Annotated[str | None, Field(description="ISO date/time: created at or before.")] = None,
        project: RecallProject = None,
        include_global: Annotated[bool, Field(description="Also read the user's global scope.")] = True,
    ) -> RecallResult:
        scope = resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=include_global)
        args = RecallArgs(query=query, k=k, kinds=list(kinds) if kinds else None, tags=tags, since=since, until=until)
        return await recall_handler(runtime(ctx), scope, args)

    @mcp.tool(
        title="Forget",
        description=FORGET_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def forget(
        ctx: Context,
        roots: Roots,
        ids: Annotated[list[str] | None, Field(description="Memory ids to forget.")] = None,
        key: Annotated[str | None, Field(description="Forget the memory (and with hard=true, all versions) under this key.")] = None,
        query: Annotated[str | None, Field(description="Forget memories that closely match this text (high bar; listed in the reply).")] = None,
        kinds: Annotated[list[Kind] | None, Field(description="Only these kinds.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with one of these tags.")] = None,
        older_than_days: Annotated[float | None, Field(description="Only memories created more than this many days ago.")] = None,
        hard: Annotated[bool, Field(description="Purge the text from the database and history too (cannot be undone).")] = False,
        dry_run: Annotated[bool, Field(description="Only list what would be forgotten.")] = False,
        project: RecallProject = None,
    ) -> ForgetResult:
        # An explicit project narrows forget to that project alone (recall would add global).
        scope = resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=project is None)
        args = ForgetArgs(ids=ids or [], key=key, query=query, kinds=list(kinds) if kinds else None, tags=tags,
                          older_than_days=older_than_days, hard=hard, dry_run=dry_run)
        return await forget_handler(runtime(ctx), scope, args)


def build_server(settings: Settings) -> MCPServer:
    """The memvault MCP server for ``settings`` (not yet running)."""
    mcp = MCPServer(
        name="memvault",
        title="memvault",
        description="Long-term memory for assistants: remember, recall, forget.",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=make_lifespan(settings),
        log_level="WARNING",
    )
    register_memory_tools(mcp)
    register_doc_tools(mcp)
    register_profile_tools(mcp)
    return mcp
