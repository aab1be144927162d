"""stdin / stdout over pipes: read and written by the event loop itself, whole and in order."""

from __future__ import annotations

import os
import threading

import anyio
import pytest

from memvault.mcp.stdio import FdWriter, pollable, stdin_lines

pytestmark = pytest.mark.anyio


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


async def test_lines_from_a_pipe_are_read_by_the_loop_with_no_thread() -> None:
    r, w = os.pipe()
    got: list[bytes] = []

    async def read() -> None:
        async for line in stdin_lines(r):
            got.append(line)
            assert "memvault-stdin" not in _threads()  # the thread that reads anything else

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            # A message cut across writes, two in one write, a last one without its newline.
            for part in (b'{"id": 1, "method": "pi', b'ng"}\n{"id": 2}\n', b"x" * 200_000 + b"\n", b'{"id": 3}'):
                await anyio.to_thread.run_sync(os.write, w, part)  # blocks until the loop has read enough
                await anyio.sleep(0.01)
            os.close(w)
            w = -1
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    assert got == [b'{"id": 1, "method": "ping"}\n', b'{"id": 2}\n', b"x" * 200_000 + b"\n", b'{"id": 3}']


async def test_a_reply_larger_than_the_pipe_is_written_whole_while_the_reader_is_slow() -> None:
    r, w = os.pipe()
    assert pollable(w)
    out = FdWriter(w)
    data = bytes(range(256)) * 4096  # 1 MiB: many times a pipe's buffer
    received = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(r, 8192):
            received.extend(chunk)

    try:
        reader = threading.Thread(target=slow_reader)
        reader.start()
        await out.write(data)
        await out.write(b"end\n")
        os.close(w)
        w = -1
        await anyio.to_thread.run_sync(reader.join)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    assert bytes(received) == data + b"end\n"


async def test_a_reader_gone_is_a_broken_pipe() -> None:
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(BrokenPipeError):
            await FdWriter(w).write(b"hello\n")
    finally:
        os.close(w)


async def test_a_regular_file_is_written_by_a_worker_thread(tmp_path) -> None:
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        assert not pollable(fd)
        await FdWriter(fd).write(b"a line\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"a line\n"
