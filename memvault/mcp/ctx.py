"""What every MCP wrapper reads from the request context: the runtime and the client's name."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from memvault.mcp.lifespan import Unavailable
from memvault.service.errors import NotReady
from memvault.service.runtime import Runtime

Ctx = Context[Runtime]
"""The request context of memvault's tools: its lifespan context is the process's Runtime."""


def runtime(ctx: Ctx) -> Runtime:
    """The process's Runtime (the lifespan context built by ``memvault.mcp.lifespan``).

    Raises NotReady with the problem when the server could not open its store or read
    its settings (its lifespan context is an ``Unavailable``).
    """
    got: Runtime | Unavailable = ctx.request_context.lifespan_context
    if isinstance(got, Unavailable):
        raise NotReady(got.problem)
    return got


def client_name(ctx: Ctx) -> str | None:
    """The client's self-reported name (e.g. ``claude-code``), used as a memory's default source."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)
