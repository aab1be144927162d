"""Newline-delimited JSON-RPC over a byte stream (a Unix socket), for the owner and its forwarders.

MCP's stdio framing is one JSON message per line. ``LineReader`` and ``LineWriter`` give
a socket the shape the SDK's ``stdio_server(stdin, stdout)`` reads and writes (an async
iterator of text lines; ``write`` + ``flush``), so a connection to the owner is served by
the SDK exactly as stdio is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest message accepted on a connection (bytes). Tool arguments are bounded far below
this (the largest, a task state, at 64 KB by default); a longer line ends the connection."""


class LineReader:
    """Lines (text, without the newline) read from a byte stream; UTF-8, bad bytes replaced."""

    def __init__(self, stream: ByteReceiveStream) -> None:
        self._buf = BufferedByteReceiveStream(stream)

    async def readline(self) -> bytes | None:
        """The next line's bytes without the newline, or None at the end of the stream."""
        try:
            return await self._buf.receive_until(b"\n", MAX_LINE_BYTES)
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while (line := await self.readline()) is not None:
            yield line.decode("utf-8", errors="replace")


class LineWriter:
    """Text written to a byte stream as UTF-8; ``flush`` is a no-op (every write is sent)."""

    def __init__(self, stream: ByteSendStream) -> None:
        self._stream = stream

    async def write(self, text: str) -> None:
        """Send ``text`` (the caller adds the newline, as the SDK's stdio writer does)."""
        await self._stream.send(text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing to do: ``write`` has sent the bytes already."""
