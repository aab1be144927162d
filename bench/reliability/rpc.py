"""A raw JSON-RPC client of ``memvault serve`` over stdio: any bytes on a line, replies matched by id.

The MCP SDK's client validates what it sends, so it cannot send a lone surrogate, a NaN,
invalid UTF-8, a 100,000-deep array or a line that is not JSON at all; this client
writes whatever line it is given and reads the server's lines back. It speaks just
enough MCP to be a client: the ``initialize`` handshake (no capabilities, so the server
asks it nothing; any request the server sends anyway is answered "method not found")
and ``ping``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

PROTOCOL_VERSION = "2025-06-18"
MAX_LINE = 512 * 1024 * 1024


class RawClient:
    """One spawned server and the lines exchanged with it.

    ``async with RawClient(argv, env, cwd, log) as c``: spawns, reads in the background,
    and at the end closes stdin and waits (kills after 10 s). ``request`` sends one
    JSON-RPC request and waits for its reply (None on timeout or when the process died).
    """

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self.argv, self.env, self.cwd, self.log = argv, env, cwd, log
        self.proc: Process | None = None
        self._ids = itertools.count(1)
        self._replies: dict[Any, dict[str, Any]] = {}
        self._waiting: dict[Any, anyio.Event] = {}
        self.unmatched: list[dict[str, Any]] = []  # replies whose id was never asked (e.g. parse errors, id null)
        self.bad_lines: list[bytes] = []  # lines from the server that are not JSON (must stay empty)
        self.eof = anyio.Event()
        self._tg: Any = None
        self._stderr: Any = None

    async def __aenter__(self) -> RawClient:
        self._stderr = open(self.log, "ab")  # noqa: ASYNC230, SIM115 -- once at start; closed in __aexit__
        self.proc = await anyio.open_process(self.argv, env=self.env, cwd=str(self.cwd), stderr=self._stderr)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.proc is not None
        with contextlib.suppress(Exception):
            await self.proc.stdin.aclose()  # type: ignore[union-attr]
        with anyio.move_on_after(10):
            await self.proc.wait()
        if self.proc.returncode is None:
            self.proc.kill()
            with anyio.move_on_after(5):
                await self.proc.wait()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        self._stderr.close()

    @property
    def alive(self) -> bool:
        """The spawned process runs and its stdout is open."""
        return self.proc is not None and self.proc.returncode is None and not self.eof.is_set()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        buf = BufferedByteReceiveStream(self.proc.stdout)
        try:
            while True:
                line = await buf.receive_until(b"\n", MAX_LINE)
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    self.bad_lines.append(line[:500])
                    continue
                if not isinstance(msg, dict):
                    self.bad_lines.append(line[:500])
                    continue
                if "method" in msg:
                    if "id" in msg:  # a request of the server's: we offer nothing
                        await self._send_obj({"jsonrpc": "2.0", "id": msg["id"],
                                              "error": {"code": -32601, "message": "not supported by this client"}})
                    continue
                mid = msg.get("id")
                key = json.dumps(mid)
                if key in self._waiting:
                    self._replies[key] = msg
                    self._waiting[key].set()
                else:
                    self.unmatched.append(msg)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.eof.set()
            for ev in self._waiting.values():
                ev.set()

    async def _send_obj(self, obj: dict[str, Any]) -> None:
        await self.send_line(json.dumps(obj).encode())

    async def send_line(self, line: bytes) -> bool:
        """Write ``line`` plus a newline; False when the process no longer reads."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            await self.proc.stdin.send(line + b"\n")
            return True
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return False

    def next_id(self) -> int:
        """A fresh request id."""
        return next(self._ids) + 1_000_000

    def expect(self, rid: Any) -> anyio.Event:
        """Register interest in the reply with id ``rid``; the event is set when it (or the end) comes."""
        key = json.dumps(rid)
        ev = self._waiting[key] = anyio.Event()
        return ev

    def take(self, rid: Any) -> dict[str, Any] | None:
        """The reply with id ``rid`` if it came (and stop waiting for it)."""
        key = json.dumps(rid)
        self._waiting.pop(key, None)
        return self._replies.pop(key, None)

    async def exchange(self, line: bytes, rid: Any, timeout_s: float) -> dict[str, Any] | None:
        """Send the raw ``line`` (a request whose id is ``rid``) and wait for the reply with that id.

        None when no reply came within ``timeout_s`` or the server's stdout closed.
        """
        key = json.dumps(rid)
        ev = self._waiting[key] = anyio.Event()
        try:
            if not await self.send_line(line):
                return None
            with anyio.move_on_after(timeout_s):
                await ev.wait()
            return self._replies.pop(key, None)
        finally:
            self._waiting.pop(key, None)

    async def request(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 60.0
                      ) -> dict[str, Any] | None:
        """One well-formed request; its reply message or None (timeout, process gone)."""
        rid = self.next_id()
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            obj["params"] = params
        return await self.exchange(json.dumps(obj).encode(), rid, timeout_s)

    async def initialize(self, timeout_s: float = 120.0) -> dict[str, Any]:
        """The initialize handshake; returns the server's result. Raises RuntimeError when it fails."""
        r = await self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                              "clientInfo": {"name": "memvault-hostile", "version": "0"}}, timeout_s)
        if not r or "result" not in r:
            raise RuntimeError(f"initialize failed: {r}")
        await self._send_obj({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]
