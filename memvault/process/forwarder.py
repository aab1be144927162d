"""``memvault serve`` as a thin forwarder: one stdio client relayed to the data dir's owner.

The client sees the server it always saw: every line it writes (requests, notifications,
its answers to the server's own requests such as ``roots/list``, cancellations) goes to
the owner as is, and every line the owner writes comes back as is. The forwarder reads
just enough of each line to know which requests are still unanswered, so that when the
owner dies (kill -9, a crash) it can start a new one, replay the client's ``initialize``,
retry once each unanswered read-only request, and answer each unanswered write with an
error that says its outcome is unknown (never applying it twice).

The relay is bytes in, bytes out over a Unix socket (``memvault.process.lines`` framing);
the owner serves each connection with the SDK's stdio machinery, so nothing is
re-encoded on the way and every MCP feature (and any later revision's) passes through.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import SocketStream

from memvault.config import Settings
from memvault.mcp.stdio import FdWriter, cancel_on_signals, serve_stdio, stdin_lines
from memvault.process.handshake import HandshakeError, Hello
from memvault.process.lines import LineReader
from memvault.process.owner_files import OwnerFiles, owner_files
from memvault.service.datadir import prepare_data_dir
from memvault.service.errors import StoreUnavailable

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
OWNER_START_TIMEOUT_S = 30.0
"""How long a forwarder waits for the owner it started to listen, seconds: a cold start
(model load, index open, start-up checks) takes a few seconds; 30 leaves room for a busy machine."""

# Requests that change nothing: retried once on a new owner when the old one died.
READ_ONLY_METHODS = frozenset({
    "ping", "tools/list", "resources/list", "resources/templates/list", "resources/read",
    "prompts/list", "prompts/get", "completion/complete",
})
READ_ONLY_TOOLS = frozenset({"recall", "search_docs", "get_profile", "get_task_state"})


class OwnerUnavailable(Exception):
    """No owner could be reached or started; the message says why and where its log is."""


@dataclass
class Link:
    """A handshaken connection to the owner."""

    stream: SocketStream
    reader: LineReader
    owner_pid: int


async def connect(files: OwnerFiles, hello: Hello) -> Link:
    """Connect to the running owner and shake hands.

    Raises OSError when nothing listens, OwnerUnavailable when the owner closes at once
    (also while the hello is being sent),
    HandshakeError when it refuses (e.g. another memvault version).
    """
    stream = await anyio.connect_unix(files.socket)
    try:
        await stream.send(hello.line())
        reader = LineReader(stream)
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            line = await reader.readline()
        if line is None:
            raise OwnerUnavailable("the owner closed the connection during the handshake")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise HandshakeError(str(reply.get("error") or "the owner refused the connection"))
        return Link(stream=stream, reader=reader, owner_pid=int(reply.get("pid") or 0))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
        # an owner that is exiting (killed, or the loser of a start race) accepted and closed
        await stream.aclose()
        raise OwnerUnavailable("the owner closed the connection during the handshake") from exc
    except BaseException:
        await stream.aclose()
        raise


async def owner_status(files: OwnerFiles, settings: Settings | None = None) -> dict[str, Any] | None:
    """The running owner's status (pid, version, since, connections, idle_s, clients, ...), or None
    when none listens. With ``settings`` (the asker's), the answer's ``differs`` names the
    asker's owner-wide settings whose values differ from the owner's.

    Raises HandshakeError when the owner refuses (another memvault version: the message
    names both).
    """
    try:
        stream = await anyio.connect_unix(files.socket)
    except OSError:
        return None
    async with stream:
        hello = Hello.of(settings, None, os.getpid(), memvault="status") if settings is not None else \
            Hello(user_id="", cwd=None, project=None, pid=os.getpid(), memvault="status")
        await stream.send(hello.line())
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            line = await LineReader(stream).readline()
    if line is None:
        return None
    reply = json.loads(line)
    if not reply.get("ok"):
        raise HandshakeError(str(reply.get("error")))
    return dict(reply)


def spawn_owner(settings: Settings, files: OwnerFiles) -> subprocess.Popen[bytes]:
    """Start ``memvault serve --owner`` for this data dir, detached, its stderr in ``owner.log``."""
    fd = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "memvault", "serve", "--owner", "--data-dir", str(settings.storage.data_dir)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd, cwd=settings.storage.data_dir,
            start_new_session=True, close_fds=True,
        )
    finally:
        os.close(fd)


def _owner_lock_free(files: OwnerFiles) -> bool:
    """Whether no process holds the data dir's owner lock (tried and let go at once)."""
    try:
        fd = os.open(files.lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


@asynccontextmanager
async def _start_lock(files: OwnerFiles) -> AsyncIterator[None]:
    """Held while one forwarder starts the owner, so clients started together start one owner."""
    fd = os.open(files.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await anyio.sleep(0.02)
        yield
    finally:
        os.close(fd)


async def connect_or_start(settings: Settings, hello: Hello) -> Link:
    """Connect to the data dir's owner, starting one when none runs.

    Raises OwnerUnavailable when no owner listens within ``OWNER_START_TIMEOUT_S`` (or the
    started one failed), HandshakeError when the owner refuses this forwarder.
    """
    files = owner_files(settings.storage.data_dir)
    try:
        return await connect(files, hello)
    except (OSError, OwnerUnavailable):
        pass
    settings.storage.data_dir.mkdir(parents=True, exist_ok=True)
    async with _start_lock(files):
        try:
            return await connect(files, hello)  # started by another forwarder meanwhile
        except (OSError, OwnerUnavailable):
            pass
        proc = spawn_owner(settings, files)
        with anyio.move_on_after(OWNER_START_TIMEOUT_S):
            while True:
                try:
                    return await connect(files, hello)
                except (OSError, OwnerUnavailable):
                    code = proc.poll()
                    if code not in (None, 0):
                        raise OwnerUnavailable(f"the memvault owner process exited with code {code}; "
                                               f"its log is {files.log}") from None
                    if code == 0 and _owner_lock_free(files):
                        # It found the lock held by an owner that was stopping (`memvault stop`,
                        # a signal) and still flushing; that one has let go now.
                        proc = spawn_owner(settings, files)
                    await anyio.sleep(0.02)
    raise OwnerUnavailable(f"no memvault owner listened on {files.socket} within "
                           f"{OWNER_START_TIMEOUT_S:g} s; its log is {files.log}")


@dataclass
class _Pending:
    line: bytes
    read_only: bool
    tool_call: bool
    retried: bool = False


def _id_key(msg_id: Any) -> str:
    return json.dumps(msg_id)


# From this protocol revision on, results carry ``resultType`` (and the SDK's client insists).
RESULT_TYPE_SINCE = "2026-07-28"


def _unknown_outcome(msg_id: Any, tool_call: bool, protocol: str | None) -> bytes:
    text = ("memvault's owner process stopped while this call ran, so it may or may not have been applied. "
            "It was not repeated: check with recall (or get_task_state) before calling it again.")
    if tool_call:
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if protocol is None or protocol >= RESULT_TYPE_SINCE:  # None: no initialize, a per-request era
            result["resultType"] = "complete"
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    else:
        reply = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": text}}
    return json.dumps(reply).encode() + b"\n"


def _error_reply(msg_id: Any, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": text}}).encode() + b"\n"


class Forwarder:
    """Relays one stdio client to the owner and survives the owner's death (module docstring)."""

    def __init__(self, settings: Settings, hello: Hello) -> None:
        self.settings = settings
        self.hello = hello
        self.link: Link | None = None
        self.pending: dict[str, _Pending] = {}
        self.init_line: bytes | None = None  # the client's initialize, once the owner accepted it
        self.init_id: str | None = None
        self.initialized_line: bytes | None = None
        self.protocol: str | None = None  # as the owner answered the client's initialize
        self.send_lock = anyio.Lock()
        self.out_lock = anyio.Lock()
        self.replays = 0
        self._init_candidate: bytes | None = None
        self.refused: str | None = None
        sys.stdout.flush()
        self._stdout = FdWriter(sys.stdout.fileno())  # the loop writes a pipe itself: no thread hand-off

    async def run(self) -> int:
        """Relay until the client closes stdin (or SIGINT / SIGTERM); 0, or 1 when no owner could be used.

        Without an owner (another version holds the data dir, the owner failed to start)
        the client is still served, by a server in this process that lists the tools and
        answers every call with the reason (``serve_unavailable``).
        """
        problem: str | None
        try:
            self.link = await connect_or_start(self.settings, self.hello)
        except HandshakeError as exc:
            problem = str(exc)
        except (OwnerUnavailable, OSError) as exc:
            problem = f"memvault could not start its owner process: {exc}"
        else:
            problem = None
        if problem is not None:
            log.error("%s", problem)
            await serve_unavailable(problem)
            return 1
        assert self.link is not None
        log.info("serve: relaying to the owner (pid %d)", self.link.owner_pid)
        async with anyio.create_task_group() as tg:
            await tg.start(cancel_on_signals, tg.cancel_scope)
            tg.start_soon(self._pump_owner)
            await self._pump_client()
            tg.cancel_scope.cancel()
        if self.link is not None:
            await self.link.stream.aclose()
        return 1 if self.refused else 0

    async def _write_out(self, data: bytes) -> None:
        async with self.out_lock:
            await self._stdout.write(data)

    async def _pump_client(self) -> None:
        async for line in stdin_lines(sys.stdin.fileno()):
            if not line.strip():
                continue
            if not line.endswith(b"\n"):
                line += b"\n"
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):  # the owner answers what it cannot read
                msg = None
            if isinstance(msg, dict) and "method" in msg and "id" in msg and self.refused is not None:
                await self._write_out(_error_reply(msg["id"], self.refused))
                continue
            async with self.send_lock:
                if isinstance(msg, dict) and "method" in msg:
                    self._note_request(msg, line)
                if self.link is None:
                    continue  # the owner is being replaced: pending requests are handled then
                try:
                    await self.link.stream.send(line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass  # the owner died; _pump_owner sees the end of its stream and recovers

    def _note_request(self, msg: dict[str, Any], line: bytes) -> None:
        method = msg["method"]
        if method == "initialize":
            # Kept for a replay only once the owner accepts it: a client may try the
            # handshake after a per-request (2026-07-28) connection is open, and replaying
            # that refused initialize would open the new connection in the wrong era.
            self.init_id, self._init_candidate = _id_key(msg.get("id")), line
        elif method == "notifications/initialized":
            self.initialized_line = line
        if "id" not in msg or method == "initialize":
            return
        raw_params = msg.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        tool_call = method == "tools/call"
        read_only = method in READ_ONLY_METHODS or (tool_call and params.get("name") in READ_ONLY_TOOLS)
        self.pending[_id_key(msg["id"])] = _Pending(line=line, read_only=read_only, tool_call=tool_call)

    async def _pump_owner(self) -> None:
        while True:
            assert self.link is not None
            line = await self.link.reader.readline()
            if line is None:
                await self._recover()
                if self.link is None:
                    return
                continue
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                msg = None
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                key = _id_key(msg["id"])
                self.pending.pop(key, None)
                result = msg.get("result")
                if key == self.init_id and isinstance(result, dict):  # the handshake era: replay it later
                    self.init_line, self.protocol = self._init_candidate, str(result.get("protocolVersion"))
            await self._write_out(line + b"\n")

    async def _recover(self) -> None:
        """The owner's stream ended: start a new owner, replay the handshake, settle pending requests."""
        async with self.send_lock:
            old = self.link
            self.link = None
            if old is not None:
                await old.stream.aclose()
            log.warning("the memvault owner went away; starting a new one")
            try:
                link = await connect_or_start(self.settings, self.hello)
                if self.init_line is not None:
                    await self._replay_initialize(link)
            except (OwnerUnavailable, HandshakeError, OSError) as exc:
                self.refused = f"memvault lost its owner process and could not start another: {exc}"
                log.error("%s", self.refused)
                for key in list(self.pending):
                    del self.pending[key]
                    await self._write_out(_error_reply(json.loads(key), self.refused))
                return
            self.link = link
            for key, p in list(self.pending.items()):
                if p.read_only and not p.retried:
                    p.retried = True
                    await link.stream.send(p.line)
                else:
                    del self.pending[key]
                    await self._write_out(_unknown_outcome(json.loads(key), p.tool_call, self.protocol))

    async def _replay_initialize(self, link: Link) -> None:
        """Open the new owner connection as the client opened the old one; its answers stay here."""
        assert self.init_line is not None
        self.replays += 1
        init = json.loads(self.init_line)
        init["id"] = f"memvault-replay-{self.replays}"
        await link.stream.send(json.dumps(init).encode() + b"\n")
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            while True:
                line = await link.reader.readline()
                if line is None:
                    raise OwnerUnavailable("the new owner closed the connection during initialize")
                reply = json.loads(line)
                if reply.get("id") == init["id"]:
                    break
        if self.initialized_line is not None:
            await link.stream.send(self.initialized_line)


async def serve_unavailable(problem: str) -> None:
    """Serve the stdio client in this process with a server that answers every call with ``problem``."""
    from memvault.mcp.app import build_unavailable_server  # the SDK's server: only on this path

    await serve_stdio(build_unavailable_server(problem))


def run_forwarder(settings: Settings) -> int:
    """Entry of ``memvault serve`` in owner mode: relay stdin/stdout to the owner until stdin closes.

    A data dir that cannot be used (a file, read-only) starts no owner: the client is
    served by ``serve_unavailable`` with what is wrong (returns 1).
    """
    try:
        prepare_data_dir(settings.storage.data_dir, settings.db_path)
    except StoreUnavailable as exc:
        log.error("%s", exc)
        anyio.run(serve_unavailable, str(exc))
        return 1
    hello = Hello.of(settings, os.getcwd(), os.getpid())
    return anyio.run(Forwarder(settings, hello).run)
