"""One tool call through the data dir's owner process, as a short-lived MCP client of its socket.

For writes from outside an MCP session (a client hook storing "remember that …"): the
owner serialises them with every connected client's writes and keeps its vector index
in step, which a second process writing to the store could not. When no owner runs,
one is started, exactly as ``memvault serve`` starts it (``forwarder.connect_or_start``).

The connection says which user, working directory and project setting it speaks for
(``memvault.process.handshake``), so the owner resolves the call's project from ``cwd`` as
it does for a client's ``memvault serve`` started there. Then plain MCP, one JSON
message per line: ``initialize``, ``notifications/initialized``, ``tools/call``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from memvault import __version__
from memvault.config import Settings
from memvault.process.forwarder import Link, connect_or_start
from memvault.process.handshake import Hello

__all__ = ["ToolCallFailed", "OwnerSession", "owner_session", "call_tool_via_owner", "run_tool_call", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = "2025-11-25"
"""The MCP revision this client opens its connection with (an ``initialize`` handshake)."""


class ToolCallFailed(Exception):
    """The owner answered the call with an error; the message is the owner's sentence."""


async def _send(link: Link, message: dict[str, Any]) -> None:
    await link.stream.send(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


async def _answer(link: Link, msg_id: int) -> dict[str, Any]:
    """The owner's answer to request ``msg_id``; server requests meanwhile are refused, notifications skipped."""
    while True:
        line = await link.reader.readline()
        if line is None:
            raise ToolCallFailed("the memvault owner closed the connection before answering")
        msg = json.loads(line)
        if not isinstance(msg, dict):
            continue
        if "method" in msg:
            if "id" in msg:  # this client declared no capabilities: nothing to answer with
                await _send(link, {"jsonrpc": "2.0", "id": msg["id"],
                                   "error": {"code": -32601, "message": "not supported by this client"}})
            continue
        if msg.get("id") == msg_id:
            if "error" in msg:
                raise ToolCallFailed(str(msg["error"].get("message") or msg["error"]))
            result = msg.get("result")
            return result if isinstance(result, dict) else {}


class OwnerSession:
    """An initialised MCP connection to the owner; ``await session.call(tool, arguments)`` per call."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self._next_id = 2

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's structured result; raises ToolCallFailed with the owner's sentence on a tool error."""
        msg_id = self._next_id
        self._next_id += 1
        await _send(self._link, {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}})
        result = await _answer(self._link, msg_id)
        if result.get("isError"):
            texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
            raise ToolCallFailed(" ".join(t for t in texts if t) or f"{tool} failed")
        structured = result.get("structuredContent")
        if not isinstance(structured, dict):
            raise ToolCallFailed(f"{tool} returned no structured result")
        return structured


@asynccontextmanager
async def owner_session(settings: Settings, cwd: Path, *, client_name: str) -> AsyncIterator[OwnerSession]:
    """A connection to the owner of ``settings``' data dir, speaking for ``cwd`` (its project as for a
    server started there), initialised as ``client_name`` (a memory's default ``source``).

    Starts the owner when none runs. Raises forwarder.OwnerUnavailable / HandshakeError /
    OSError when no owner can be reached; the caller bounds the time (``anyio.fail_after``).
    """
    hello = Hello.of(settings, str(cwd), os.getpid())
    link = await connect_or_start(settings, hello)
    async with link.stream:
        await _send(link, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": client_name, "version": __version__}}})
        await _answer(link, 1)
        await _send(link, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield OwnerSession(link)


async def call_tool_via_owner(settings: Settings, cwd: Path, tool: str, arguments: dict[str, Any], *,
                              client_name: str) -> dict[str, Any]:
    """One call of ``tool`` on its own ``owner_session``; returns its structured result.

    Raises ToolCallFailed with the owner's sentence when the tool answers with an error,
    and what ``owner_session`` raises.
    """
    async with owner_session(settings, cwd, client_name=client_name) as session:
        return await session.call(tool, arguments)


def run_tool_call(settings: Settings, cwd: Path, tool: str, arguments: dict[str, Any], *, client_name: str,
                  timeout_s: float) -> dict[str, Any]:
    """``call_tool_via_owner`` from blocking code, given at most ``timeout_s`` seconds (TimeoutError past it)."""
    async def run() -> dict[str, Any]:
        with anyio.fail_after(timeout_s):
            return await call_tool_via_owner(settings, cwd, tool, arguments, client_name=client_name)

    return anyio.run(run)
