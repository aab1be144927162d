"""The process's own stdin and stdout as an MCP connection, and stopping on SIGINT / SIGTERM.

``memvault serve --no-owner`` (and a server that only reports a start-up problem) serves
its client here; the forwarder reads its client's lines through ``stdin_lines`` too.

- While serving, fd 1 points at stderr and fd 0 at the null device, so that stray output
  of a library (or a child process) never corrupts the protocol; the wire is a private
  duplicate of each (the SDK's stdio transport does the same).
- stdin is read by a daemon thread: a read blocked on a client that keeps its end open
  never keeps the process alive after a signal asked it to stop (a worker thread of the
  event loop would, until stdin closed).
- SIGINT and SIGTERM end serving at once: the server's lifespan closes the stores (the
  vector index is flushed) and the process exits.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, BinaryIO]]:
    """``(wire_in_fd, wire_out)``: the client's ends of stdin/stdout, with fds 0 and 1 diverted meanwhile.

    Where the descriptors cannot be duplicated, fd 0 and the process's stdout buffer are
    used as they are.
    """
    try:
        wire_in, wire_out_fd = os.dup(0), os.dup(1)
        saved_in, saved_out = os.dup(0), os.dup(1)
    except OSError:
        yield 0, sys.stdout.buffer
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    wire_out = os.fdopen(wire_out_fd, "wb")
    try:
        yield wire_in, wire_out
    finally:
        try:
            wire_out.close()
        except OSError:
            pass
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
        # wire_in stays open: the reader thread may still block on it.


async def stdin_lines(fd: int) -> AsyncIterator[bytes]:
    """Lines (bytes, newline kept) read from ``fd`` until its end, by a daemon thread.

    The thread reads the descriptor itself (``os.read``), not through a Python file
    object: a daemon thread blocked inside a buffered reader's lock makes the
    interpreter abort at exit.
    """
    send, receive = anyio.create_memory_object_stream[bytes](1)
    token = anyio.lowlevel.current_token()

    def pump() -> None:
        buf = bytearray()
        try:
            while chunk := os.read(fd, 1 << 16):
                start = len(buf)
                buf += chunk
                nl = buf.find(b"\n", start)
                while nl >= 0:
                    line = bytes(buf[:nl + 1])
                    del buf[:nl + 1]
                    anyio.from_thread.run(send.send, line, token=token)
                    nl = buf.find(b"\n")
            if buf:
                anyio.from_thread.run(send.send, bytes(buf), token=token)
        except Exception:  # the loop is gone (serving ended) or stdin failed: stop reading
            pass
        finally:
            try:
                anyio.from_thread.run_sync(send.close, token=token)
            except Exception:
                pass

    threading.Thread(target=pump, name="memvault-stdin", daemon=True).start()
    async with receive:
        async for line in receive:
            yield line


async def cancel_on_signals(scope: anyio.CancelScope, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """Cancel ``scope`` on the first SIGINT or SIGTERM (start with ``tg.start``: listening once it returns).

    Where the event loop cannot receive signals (Windows), the default handling stays.
    """
    try:
        receiver = anyio.open_signal_receiver(*STOP_SIGNALS)
        signals = receiver.__enter__()
    except NotImplementedError:
        task_status.started()
        await anyio.sleep_forever()
        return
    try:
        task_status.started()
        async for signum in signals:
            log.info("%s: stopping", signal.Signals(signum).name)
            scope.cancel()
            return
    finally:
        receiver.__exit__(None, None, None)


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` (a ``MemvaultServer``) to the client on stdin/stdout until stdin closes or a signal.

    Every request gets an answer, also one the SDK cannot parse (``line_streams``).
    """
    from memvault.mcp.transport import line_streams  # the SDK: not imported by a forwarder that relays

    low = server._lowlevel_server
    with claimed_stdio() as (wire_in, wire_out):
        out = anyio.wrap_file(wire_out)

        async def write(text: str) -> None:
            await out.write(text.encode("utf-8", "replace"))
            await out.flush()

        async def lines() -> AsyncIterator[str]:
            async for raw in stdin_lines(wire_in):
                yield raw.rstrip(b"\r\n").decode("utf-8", "replace")

        async with anyio.create_task_group() as tg:
            await tg.start(cancel_on_signals, tg.cancel_scope)
            async with line_streams(lines(), write) as (read_stream, write_stream):
                await low.run(read_stream, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()
