"""MCP wrappers of the profile and working-memory tools, resources and prompt.

Tools ``get_profile``, ``set_task_state``, ``get_task_state``; resource
``memvault://profile`` (Markdown); resource template ``memvault://tasks/{task_id}``
(JSON); prompt ``recall_context(topic)``. Thin, like ``memvault.mcp.tools.memory``: resolve the scope,
call the handler in ``memvault.service.profile.profile`` / ``memvault.service.profile.tasks``.

Scope of resources and the prompt: the SDK fills ``Resolve(...)`` parameters of tools
only. Resources and prompts run the same resolver (``client_roots``) through the SDK's
``resolve_arguments``, so they ask the client for its roots the way tools do (an
input-required round on 2026-07-28 connections, a mid-call request before) and get the
same scope as tools (``memvault.mcp.scope``): client roots, else the server's start folder,
else the ``project`` setting, else global.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.resolve import (
    Resolve,
    build_resolver_plans,
    resolve_arguments,
)
from mcp_types import InputRequiredResult, ToolAnnotations
from pydantic import Field

from memvault.mcp.ctx import Ctx, client_name, runtime
from memvault.mcp.errors import reported
from memvault.mcp.scope import Roots, client_roots, resolve_scope
from memvault.service.errors import MemvaultError
from memvault.service.memory.models import Scope
from memvault.service.profile.profile import CONTEXT_BUDGET_CHARS, context_block, profile_markdown
from memvault.service.profile.profile import get_profile as profile_handler
from memvault.service.profile.task_models import GetTaskResult, ProfileResult, SetTaskResult
from memvault.service.profile.tasks import SetTaskArgs
from memvault.service.profile.tasks import get_task_state as get_task_handler
from memvault.service.profile.tasks import set_task_state as set_task_handler
from memvault.service.validation import clean_label
from memvault.vocabulary import TASK_STATUSES, TaskStatus

log = logging.getLogger(__name__)

PROFILE_URI = "memvault://profile"
TASK_URI = "memvault://tasks/{task_id}"

Project = Annotated[
    str | None,
    Field(description="Omit for the current project; '' for the user's global scope."),
]




# The tools' roots resolver, planned once for use outside tools (resources, prompt).
_ROOTS_PARAMS = {"roots": (Resolve(client_roots), False)}
_ROOTS_PLANS = build_resolver_plans(_ROOTS_PARAMS, {"project"})


async def _scope_or_ask(ctx: Ctx) -> Scope | InputRequiredResult:
    """Scope of a resource read or prompt, or the input-required round that asks for the roots."""
    settings = runtime(ctx).settings
    got = await resolve_arguments(_ROOTS_PARAMS, _ROOTS_PLANS, {"project": None}, ctx)
    if isinstance(got, InputRequiredResult):
        return got
    return await resolve_scope(ctx, settings, None, got["roots"])


async def _profile_markdown(ctx: Ctx) -> str | InputRequiredResult:
    rt = runtime(ctx)
    scope = await _scope_or_ask(ctx)
    if isinstance(scope, InputRequiredResult):
        return scope
    profile = await profile_handler(rt, scope)
    return profile_markdown(profile, CONTEXT_BUDGET_CHARS)


async def read_profile(ctx: Ctx) -> str | InputRequiredResult:
    """The ``memvault://profile`` resource of the caller's scope, as Markdown (or the roots question).

    Served by ``MemvaultServer.read_resource``: the SDK hands static resources no
    Context, and the profile needs the runtime and the caller's scope.
    """
    return await _profile_markdown(ctx)


def register_profile_tools(mcp: MCPServer) -> None:
    """Register get_profile / set_task_state / get_task_state, the two resources and the prompt."""

    @mcp.tool(
        title="Get profile",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def get_profile(ctx: Ctx, roots: Roots, project: Project = None) -> ProfileResult:
        """The user's profile for this project: keyed preferences (project values override global ones;
        each says which won), the most important facts, open tasks and memory counts. Call it at the
        start of a session. Write to it with remember(..., key="pref.language")."""
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots)
        return await profile_handler(runtime(ctx), scope)

    @mcp.tool(
        title="Set task state",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    @reported
    async def set_task_state(
        task_id: Annotated[str, Field(description="Stable id of the task, e.g. 'migrate-billing'.")],
        ctx: Ctx,
        roots: Roots,
        state: Annotated[dict[str, Any] | None, Field(description="New state: replaces the whole JSON object, e.g. {\"plan\": [...], \"current_step\": 2}.")] = None,
        patch: Annotated[dict[str, Any] | None, Field(description="JSON Merge Patch (RFC 7396) applied to the state: members set, null removes a member. Not with state.")] = None,
        title: Annotated[str | None, Field(description="Short title; needed once, when the task is created.")] = None,
        status: Annotated[TaskStatus | None, Field(description=f"{' | '.join(TASK_STATUSES)}; omit to keep.")] = None,
        expected_version: Annotated[int | None, Field(description="Write only if the task is at this version (0 = must not exist); a mismatch fails with the current version.")] = None,
        ttl_days: Annotated[float | None, Field(description="Days without an update before this open task expires; omit for the default (7).")] = None,
        outcome: Annotated[str | None, Field(description="With status done/abandoned: how it ended. Kept as an episode memory that later recalls find.")] = None,
        project: Project = None,
    ) -> SetTaskResult:
        """Save the working state of a multi-step task (plan, current step, findings) so that this or a
        later session can resume it. Task state is not memory: it never shows in recall. Each write adds
        one version. Finishing with an
        outcome leaves one episode memory ("Task ... Approach ... Outcome ...")."""
        rt = runtime(ctx)
        scope = await resolve_scope(ctx, rt.settings, project, roots)
        args = SetTaskArgs(task_id=task_id, state=state, patch=patch, title=title, status=status,
                           expected_version=expected_version, ttl_days=ttl_days, outcome=outcome,
                           actor=clean_label(client_name(ctx)))
        return await set_task_handler(rt, scope, args)

    @mcp.tool(
        title="Get task state",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def get_task_state(
        ctx: Ctx,
        roots: Roots,
        task_id: Annotated[str | None, Field(description="The task to read; omit to list the open tasks, newest first.")] = None,
        include_done: Annotated[bool, Field(description="When listing, include done and abandoned tasks.")] = False,
        include_history: Annotated[bool, Field(description="With task_id: also return the earlier versions, newest first.")] = False,
        project: Project = None,
    ) -> GetTaskResult:
        """Read one task's state (to resume it) or list the open tasks of this project. Bounded."""
        scope = await resolve_scope(ctx, runtime(ctx).settings, project, roots)
        return await get_task_handler(runtime(ctx), scope, task_id, include_done=include_done,
                                      include_history=include_history)

    @mcp.resource(PROFILE_URI, name="profile", title="User profile", mime_type="text/markdown",
                  description="Stable preferences (keyed memories), top facts and open tasks of the current "
                              "scope, as Markdown. Derived from memory; bounded.")
    def profile_resource() -> str:  # MemvaultServer.read_resource answers every read made in a session
        raise ResourceError("memvault://profile is read through an MCP session")

    @mcp.resource(TASK_URI, name="task", title="Task state", mime_type="application/json",
                  description="One task of the current scope: title, status, version, state (JSON).")
    async def task_resource(task_id: str, ctx: Ctx) -> str | InputRequiredResult:
        scope = await _scope_or_ask(ctx)
        if isinstance(scope, InputRequiredResult):
            return scope
        try:
            got = await get_task_handler(runtime(ctx), scope, task_id)
        except MemvaultError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps(got.model_dump(mode="json", exclude={"tasks", "history"}), ensure_ascii=False, indent=1)

    @mcp.prompt(name="recall_context", title="Recall context",
                description="Profile + the memories most relevant to a topic + open tasks, as one bounded "
                            "block to put in front of a conversation.")
    async def recall_context(
        topic: Annotated[str, Field(description="What the conversation is about, e.g. 'billing migration'.")],
        ctx: Ctx,
    ) -> str | InputRequiredResult:
        scope = await _scope_or_ask(ctx)
        if isinstance(scope, InputRequiredResult):
            return scope
        return await context_block(runtime(ctx), scope, topic)
