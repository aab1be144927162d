"""The process's own stdin and stdout as an MCP connection, and stopping on SIGINT / SIGTERM.

``memvault serve --no-owner`` (and a server that only reports a start-up problem) serves
its client here; the forwarder reads its client's lines through ``stdin_lines`` too.

- While serving, fd 1 points at stderr and fd 0 at the null device, so that stray output
  of a library (or a child process) never corrupts the protocol; the wire is a private
  duplicate of each (the SDK's stdio transport does the same).
- Where stdin and stdout are pipes or sockets (as an MCP client spawns a server), they are
  read and written by the event loop itself, non-blocking: a message costs no thread
  hand-off (each is a wake-up of another thread, milliseconds on a loaded machine), and
  nothing is left blocked in a read when a signal asks the process to stop. Anything
  else (a file, a terminal) is read by a daemon thread, which never keeps the process
  alive after a signal either (a worker thread of the event loop would, until stdin
  closed), and written by a worker thread.
- SIGINT and SIGTERM end serving at once: the server's lifespan closes the stores (the
  vector index is flushed) and the process exits.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
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


def pollable(fd: int) -> bool:
    """True when ``fd`` is a pipe or a socket on a POSIX system: the event loop can wait for it
    (epoll / kqueue; a regular file or a Windows pipe cannot be waited for that way)."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _split_lines(buf: bytearray, start: int) -> list[bytes]:
    """Whole lines (newline kept) taken off the front of ``buf``; ``start``: where new bytes begin."""
    out: list[bytes] = []
    nl = buf.find(b"\n", start)
    while nl >= 0:
        out.append(bytes(buf[:nl + 1]))
        del buf[:nl + 1]
        nl = buf.find(b"\n")
    return out


async def stdin_lines(fd: int) -> AsyncIterator[bytes]:
    """Lines (bytes, newline kept) read from ``fd`` until its end; the last may lack the newline.

    A pipe or socket (``pollable``) is made non-blocking and read by the event loop; anything
    else by a daemon thread, which reads the descriptor itself (``os.read``), not through a
    Python file object: a daemon thread blocked inside a buffered reader's lock makes the
    interpreter abort at exit.
    """
    if pollable(fd):
        os.set_blocking(fd, False)
        buf = bytearray()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            except OSError:  # the client's end failed: as the end of input
                break
            if not chunk:
                break
            start = len(buf)
            buf += chunk
            for line in _split_lines(buf, start):
                yield line
        if buf:
            yield bytes(buf)
        return

    send, receive = anyio.create_memory_object_stream[bytes](1)
    token = anyio.lowlevel.current_token()

    def pump() -> None:
        buf = bytearray()
        try:
            while chunk := os.read(fd, 1 << 16):
                start = len(buf)
                buf += chunk
                for line in _split_lines(buf, start):
                    anyio.from_thread.run(send.send, line, token=token)
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


class FdWriter:
    """Bytes written whole to ``fd``, one ``write`` at a time: by the event loop itself,
    non-blocking, where ``fd`` is a pipe or socket (``pollable``: it waits for room when the
    reader is slow), else by a worker thread. Raises OSError (BrokenPipeError: the reader
    went away) as ``os.write`` does."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.polled = pollable(fd)
        if self.polled:
            os.set_blocking(fd, False)
        self._lock = anyio.Lock()

    async def write(self, data: bytes) -> None:
        async with self._lock:
            view = memoryview(data)
            while view:
                if self.polled:
                    try:
                        n = os.write(self.fd, view)
                    except BlockingIOError:
                        await anyio.wait_writable(self.fd)
                        continue
                else:
                    n = await anyio.to_thread.run_sync(os.write, self.fd, view)
                view = view[n:]


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
        wire_out.flush()
        out = FdWriter(wire_out.fileno())

        async def write(text: str) -> None:
            await out.write(text.encode("utf-8", "replace"))

        async def lines() -> AsyncIterator[str]:
            async for raw in stdin_lines(wire_in):
                yield raw.rstrip(b"\r\n").decode("utf-8", "replace")

        async with anyio.create_task_group() as tg:
            await tg.start(cancel_on_signals, tg.cancel_scope)
            async with line_streams(lines(), write) as (read_stream, write_stream):
                await low.run(read_stream, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()
