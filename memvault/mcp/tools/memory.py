"""MCP wrappers of the memory tools: ``remember``, ``recall``, ``forget``.

Each tool is thin: it resolves the scope from the connection (``memvault.mcp.scope``),
then calls the service in ``memvault.service`` that applies the policies. Tool
descriptions are written for the model that reads them.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from memvault.mcp.arguments import KindArg
from memvault.mcp.ctx import Ctx, client_name, runtime
from memvault.mcp.errors import reported
from memvault.mcp.scope import Roots, resolve_scope
from memvault.service.memory.forget import ForgetArgs
from memvault.service.memory.forget import forget as forget_handler
from memvault.service.memory.models import ForgetResult, RecallResult, RememberResult
from memvault.service.memory.recall import RecallArgs
from memvault.service.memory.recall import recall as recall_handler
from memvault.service.memory.remember import RememberArgs
from memvault.service.memory.remember import remember as remember_handler
from memvault.service.validation import clean_label
from memvault.vocabulary import Visibility

RecallProject = Annotated[
    str | None,
    Field(description="Project to read; omit for the current project, '' for the user's global scope only."),
]


REMEMBER_DESCRIPTION = (
    "Store a memory for later sessions. The reply says stored, reinforced (already known), "
    "superseded (replaced an older one) or declined (and why)."
)

VISIBILITY_DESCRIPTION = "shared: every client of this user reads it; private: only this agent (its own key slots)."

RECALL_DESCRIPTION = (
    "Find relevant memories from earlier sessions (current project + global by default), best first, "
    "each with its id, kind, scores and dates. Long contents are cut; the reply is bounded. Returned "
    "memories count as accessed (which keeps them fresh); nothing else changes."
)

FORGET_DESCRIPTION = (
    "Forget memories chosen by selectors (combined with AND; at least one). Soft by default (kept in "
    "history); hard=true erases them. Use dry_run=true to preview. A list given as [] is refused."
)


def register_memory_tools(mcp: MCPServer) -> None:
    """Register remember / recall / forget on ``mcp``."""

    @mcp.tool(
        title="Remember",
        description=REMEMBER_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def remember(
        content: Annotated[str, Field(description="One self-contained statement worth keeping, e.g. 'The user prefers pnpm over npm'.")],
        ctx: Ctx,
        roots: Roots,
        kind: Annotated[KindArg, Field(description="episode and note expire by default (180 / 90 days); the others are kept.")] = "fact",
        key: Annotated[str | None, Field(description="Stable slot, e.g. 'pref.package_manager'; a new value with the same key replaces the old.")] = None,
        tags: Annotated[list[str] | None, Field(description="Short labels for filtering (at most 20; case-insensitive); omitted or [] = none.")] = None,
        importance: Annotated[float | None, Field(description="0..1; omit to let memvault score it.")] = None,
        ttl_days: Annotated[float | None, Field(description="Days until it expires (at least 0.0007, one minute); omit for the kind's default.")] = None,
        supersedes: Annotated[list[str] | None, Field(description="Ids of memories this one replaces; omitted or [] = none.")] = None,
        project: Annotated[str | None, Field(description="Omit for the current project; '' for the user's global scope.")] = None,
        source: Annotated[str | None, Field(description="Where it came from (file, session, client); defaults to the client's name.")] = None,
        force: Annotated[bool, Field(description="Store even if scored unimportant (never overrides the secret check).")] = False,
        visibility: Annotated[Visibility, Field(description=VISIBILITY_DESCRIPTION)] = "shared",
    ) -> RememberResult:
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots)
        args = RememberArgs(content=content, kind=kind, key=key, tags=tags or [], importance=importance,
                            ttl_days=ttl_days, supersedes=supersedes or [], source=source or clean_label(client_name(ctx)),
                            force=force, visibility=visibility)
        return await remember_handler(runtime(ctx), scope, args)

    @mcp.tool(
        title="Recall",
        description=RECALL_DESCRIPTION,
        # Not read-only: it records each returned memory's access (recency ranking reads it).
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    @reported
    async def recall(
        query: Annotated[str, Field(description="What to look for, in any language; identifiers and error codes work too.")],
        ctx: Ctx,
        roots: Roots,
        k: Annotated[int, Field(description="How many memories to return (1-50).")] = 5,
        kinds: Annotated[list[KindArg] | None, Field(description="Only these kinds; omit for all (an empty list is refused).")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with at least one of these tags; omit for any (an empty list is refused).")] = None,
        since: Annotated[str | None, Field(description="ISO 8601 date or time (UTC unless an offset is given): created at or after, e.g. 2026-11-29 or 2026-11-29T14:20Z.")] = None,
        until: Annotated[str | None, Field(description="ISO 8601 date or time (UTC unless an offset is given): created at or before; 2026-11-29 includes that whole day.")] = None,
        project: RecallProject = None,
        include_global: Annotated[bool, Field(description="Also read the user's global scope.")] = True,
        min_relevance: Annotated[float | None, Field(description="Leave out memories whose relevance (0-1) is below this; omit for the default (0: none).")] = None,
    ) -> RecallResult:
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=include_global)
        args = RecallArgs(query=query, k=k, kinds=None if kinds is None else list(kinds), tags=tags, since=since,
                          until=until, min_relevance=min_relevance)
        return await recall_handler(runtime(ctx), scope, args)

    @mcp.tool(
        title="Forget",
        description=FORGET_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    @reported
    async def forget(
        ctx: Ctx,
        roots: Roots,
        ids: Annotated[list[str] | None, Field(description="Memory ids to forget; omit to select by the other arguments (an empty list is refused).")] = None,
        key: Annotated[str | None, Field(description="Forget the memory (and with hard=true, all versions) under this key.")] = None,
        query: Annotated[str | None, Field(description="Forget memories that closely match this text (high bar; listed in the reply).")] = None,
        kinds: Annotated[list[KindArg] | None, Field(description="Only these kinds; omit for all (an empty list is refused).")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with one of these tags; omit for any (an empty list is refused).")] = None,
        older_than_days: Annotated[float | None, Field(description="Only memories created more than this many days ago (0.5 = 12 hours).")] = None,
        hard: Annotated[bool, Field(description="Purge the text from the database and history too (cannot be undone).")] = False,
        dry_run: Annotated[bool, Field(description="Only list what would be forgotten.")] = False,
        project: RecallProject = None,
    ) -> ForgetResult:
        # An explicit project narrows forget to that project alone (recall would add global).
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots, include_global=project is None)
        args = ForgetArgs(ids=ids, key=key, query=query, kinds=None if kinds is None else list(kinds), tags=tags,
                          older_than_days=older_than_days, hard=hard, dry_run=dry_run)
        return await forget_handler(runtime(ctx), scope, args)
