"""Telling a client that its call waits for the model, within a second of the call.

The server answers ``initialize`` at once and loads (on a first start: prepares) the
embedding model in the background (``memvault.service.runtime``). A tool call that
arrives meanwhile waits for it; clients with short tool timeouts give up on a silent
wait. ``while_loading`` watches a call: if after ``NOTICE_AFTER_S`` the start-up is still
not done, it logs one line on stderr and sends a progress notification (when the client
sent a ``progressToken``; the SDK sends none otherwise), repeated every ``REPEAT_S`` until
the model is ready. No MCP log message: logging is deprecated from 2026-07-28, and a
client that set no log level did not ask for one.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from memvault.service.runtime import Runtime

log = logging.getLogger(__name__)

NOTICE_AFTER_S = 0.5
"""A call still waiting for the model this long after it arrived is told so, seconds."""
REPEAT_S = 2.0
"""How often a waiting call's progress is sent again, seconds (keeps clients that reset their timeout on progress)."""


def waiting_message(tool: str, rt: Runtime) -> str:
    """What a waiting call's client reads."""
    if rt.model_state() == "preparing":
        return (f"{tool} waits for memvault's embedding model, which is being prepared once for this machine "
                "(a few seconds on a first start); the call continues by itself when it is ready")
    return f"{tool} waits for memvault's embedding model to load; the call continues by itself when it is ready"


@asynccontextmanager
async def while_loading(ctx: Any, tool: str) -> AsyncIterator[None]:
    """Run the block; if the process's runtime is still starting ``NOTICE_AFTER_S`` later, tell
    the client (module docstring). ``ctx``: the tool's SDK Context. Never raises for a notice
    that cannot be sent."""
    rt = getattr(getattr(ctx, "request_context", None), "lifespan_context", None)
    if not isinstance(rt, Runtime) or rt.started_done():
        yield
        return

    async def notice() -> None:
        await anyio.sleep(NOTICE_AFTER_S)
        start = time.monotonic()
        said = False
        while not rt.started_done():
            message = waiting_message(tool, rt)
            if not said:
                log.info("%s", message)
                said = True
            with contextlib.suppress(Exception):
                await ctx.report_progress(time.monotonic() - start, None, message)
            with anyio.move_on_after(REPEAT_S):
                await rt.wait_started()

    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(notice)
        try:
            yield
        except Exception as exc:  # raised after the group, as is: a task group would wrap it in a group
            failed = exc
        finally:
            tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
