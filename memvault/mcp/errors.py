"""memvault's errors as the MCP face reports them.

Services raise ``MemvaultError`` subclasses whose text is written for a person; the
``reported`` decorator turns them into ``ToolError`` so the assistant reads that text as
is (the SDK would otherwise hide it behind "Error executing tool ...").
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from memvault.service.errors import MemvaultError

P = ParamSpec("P")
R = TypeVar("R")


def reported(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Wrap an async tool or prompt function: a ``MemvaultError`` becomes ``ToolError(str(exc))``.

    The wrapper keeps ``fn``'s signature and annotations (``functools.wraps``), which the
    SDK reads to build the tool's input schema and to inject the context.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except MemvaultError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper
