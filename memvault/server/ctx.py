"""What every MCP wrapper reads from the request context: the runtime and the client's name."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from memvault.tools.runtime import Runtime


def runtime(ctx: Context) -> Runtime:
    """The process's Runtime (the lifespan context built by ``server.lifespan``)."""
    return ctx.request_context.lifespan_context


def client_name(ctx: Context) -> str | None:
    """The client's self-reported name (e.g. ``claude-code``), used as a memory's default source."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)
