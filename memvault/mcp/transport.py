"""JSON-RPC lines served to the SDK: no request goes unanswered.

``line_streams`` turns a source of text lines and a ``write`` (an owner's connection,
``memvault.process.lines``; the process's own stdin/stdout, ``memvault.mcp.stdio``) into the
message streams the SDK serves, as the SDK's ``stdio_server`` does, with two
differences: a request the SDK's parser cannot read (a lone surrogate, JSON nested too
deeply, the wrong shape), which the SDK drops and leaves its client waiting on, gets a
JSON-RPC error that says why (``memvault.mcp.unreadable``); and a reply that UTF-8 cannot
carry (a lone surrogate in a result) is sent with those characters replaced instead of
ending the connection.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from memvault.mcp.unreadable import replies_to_unreadable

log = logging.getLogger(__name__)


MessageStreams = tuple[Any, Any]
"""``(read_stream, write_stream)`` as the SDK's ``Server.run`` / ``serve_dual_era_loop`` take them."""


@asynccontextmanager
async def line_streams(lines: AsyncIterable[str], write: Callable[[str], Awaitable[None]]
                       ) -> AsyncIterator[MessageStreams]:
    """The SDK's message streams over JSON-RPC text lines (module docstring).

    ``lines``: the client's messages, one per item, without the newline. ``write``: sends
    one line (the newline included) to the client; called by one task at a time. The
    block ends when the server is done; reading stops at the end of ``lines``.

    A client that went away (``write`` raises OSError or anyio's broken / closed stream
    errors) ends nothing but its own connection: its remaining replies are dropped, with
    one INFO line, and the server sees its input end.
    """
    read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
    write_send, write_recv = create_context_streams[SessionMessage](0)
    out_lock = anyio.Lock()
    gone = False
    reading = anyio.CancelScope()

    async def send_line(text: str) -> None:
        nonlocal gone
        async with out_lock:
            if gone:
                return
            try:
                await write(text + "\n")
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                gone = True
                reading.cancel()
                log.info("the client went away before its reply was sent (%s); its remaining replies are dropped",
                         type(exc).__name__)

    async def reader() -> None:
        async with read_send:
            async for line in lines:
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:
                    replies = replies_to_unreadable(line, _parser_says(exc))
                    log.warning("unreadable message (%d chars): %s", len(line),
                                f"answered {replies[0][:300]}" if replies else
                                f"no request id in it, not answered: {line[:120]!r}")
                    for reply in replies:
                        await send_line(reply)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                await send_line(_encode(session_message.message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        tg.start_soon(_run_in, reading, reader)
        try:
            yield read_recv, write_send
        finally:
            reading.cancel()  # the server is done: stop reading, let the writer send what is left
            write_send.close()


async def _run_in(scope: anyio.CancelScope, fn: Callable[[], Awaitable[None]]) -> None:
    with scope:
        await fn()


def _parser_says(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            return str(errors()[0].get("msg", ""))
        except Exception:
            return ""
    return str(exc)


def _encode(message: Any) -> str:
    """``message`` as one JSON line; text that UTF-8 cannot carry (lone surrogates) becomes U+FFFD."""
    try:
        return str(message.model_dump_json(by_alias=True, exclude_unset=True))
    except Exception:  # a lone surrogate in a result: send the rest rather than end the connection
        data = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(_scrub(data), ensure_ascii=False, default=str)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value
