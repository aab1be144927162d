"""The owner process of a data dir: one model, one set of stores, every client of the machine.

``memvault serve --owner`` (normally started by the first ``memvault serve`` of a data
dir, detached) takes the data dir's owner lock, opens the runtime once (model, SQLite,
Qdrant Edge, housekeeping), and listens on a Unix socket that only the same OS user can
reach. Each connection starts with one handshake line (``memvault.process.handshake``) that
says which user, working directory, project setting and agent id its client has; the rest is MCP,
one JSON message per line, served by the SDK exactly as stdio is, with that connection
bound (``memvault.mcp.connection``) so that its scope is its own. After
``settings.server.owner_idle_s`` seconds with no connection the owner flushes, closes and exits.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream

from memvault import __version__
from memvault.config import Settings
from memvault.mcp.app import MemvaultServer, build_server
from memvault.mcp.connection import Connection, bound
from memvault.mcp.http import (
    MCP_PATH,
    BearerAuth,
    is_loopback,
    load_tokens,
    transport_security,
)
from memvault.mcp.lifespan import Unavailable, runtime_or_problem
from memvault.mcp.transport import line_streams
from memvault.mcp.workspace import Workspace
from memvault.process import client_settings, hook_requests
from memvault.process.handshake import HandshakeError, answer, parse_hello, version_mismatch
from memvault.process.lines import LineReader, LineWriter
from memvault.process.owner_files import OwnerFiles, owner_files
from memvault.process.ui_host import UiHost
from memvault.service.datadir import prepare_data_dir
from memvault.service.errors import InvalidArgument, StoreUnavailable
from memvault.service.runtime import Runtime

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
UNAVAILABLE_IDLE_S = 1.0
"""Idle time of an owner that could not open its store: it answers its clients with the problem,
then exits as soon as they leave, so that a client started after the fix gets a new owner."""



async def _reply(stream: SocketStream, data: bytes) -> None:
    """Send a one-line answer; a client that has gone (a hook that stopped waiting: what it asked is
    done all the same) is no error and never ends the owner."""
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        log.info("a one-line request's client left before its answer")

class OwnerRunning(Exception):
    """Another owner holds this data dir's lock (the caller exits quietly: that owner serves)."""


@contextmanager
def owner_lock(files: OwnerFiles) -> Iterator[None]:
    """Hold the data dir's owner lock for the block; raises OwnerRunning when another process has it."""
    fd = os.open(files.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OwnerRunning(f"another memvault owner serves {files.lock.parent}") from None
        yield
    finally:
        os.close(fd)  # releases the lock


class Owner:
    """Serves forwarded connections on the data dir's socket until idle (see the module docstring)."""

    def __init__(self, settings: Settings, server: MemvaultServer, files: OwnerFiles,
                 http: HttpEndpoint | None = None) -> None:
        self.settings = settings
        self.http = http
        self.server = server
        self.files = files
        self.connections = 0
        self.served = 0
        self.since = time.time()
        self.idle_since: float | None = time.monotonic()
        self.runtime: Runtime | Unavailable | None = None
        self._http_server: Any = None  # the uvicorn server while serving HTTP
        self._tg: anyio.abc.TaskGroup | None = None  # where the page's listener runs (memvault ui)
        self.ui = UiHost(settings, self._page_runtime, self.status, self._touch)
        self.own_settings = client_settings.owner_wide(settings)
        self.clients: dict[int, tuple[Connection, str | None]] = {}  # id(conn) -> (connection, its cwd)

    def status(self) -> dict[str, Any]:
        """What ``memvault status`` and ``doctor`` show: pid, version, start time (unix s),
        connections, idle seconds, the connected clients (pid, user, folder, settings that
        differ), the data dir, the model's state (``Runtime.model_state``), and (once the index
        is open) ``index``: lines about it (repairs running, disk use, why calls are refused)."""
        idle = None if self.idle_since is None else round(time.monotonic() - self.idle_since, 1)
        clients = [{"pid": c.pid, "user_id": c.user_id, "cwd": cwd, "differs": c.differs}
                   for c, cwd in self.clients.values()]
        if isinstance(self.runtime, Runtime):
            model = self.runtime.model_state()
        elif isinstance(self.runtime, Unavailable):
            model = f"failed: {self.runtime.problem}"
        else:
            model = "loading"
        return {"pid": os.getpid(), "version": __version__, "since": self.since, "connections": self.connections,
                "served": self.served, "idle_s": idle, "idle_exit_s": self.settings.server.owner_idle_s,
                "clients": clients, "data_dir": str(self.settings.storage.data_dir), "model": model,
                "model_name": self.settings.embedding.embedding_model,
                "index": self._index_lines()}

    def _index_lines(self) -> list[str]:
        """What the owner knows of its vector index, one line each (cheap: no engine call)."""
        rt = self.runtime
        if not isinstance(rt, Runtime):
            return []
        lines = [state.describe(name) for name, state in rt.repairing.items()]
        if rt.error is not None:
            lines.append(f"calls that need the index are refused: {rt.error}")
        vectors = rt.vectors
        if vectors is not None:
            try:
                report = vectors.disk_report()
            except OSError as exc:
                report = (False, f"disk use unknown ({exc})")
            if report is not None:
                lines.append(f"disk {report[1]}")
        return lines

    async def run(self) -> None:
        """Listen, serve, and return after the idle time with no connection (or on SIGTERM/SIGINT)."""
        sock = self.files.socket
        sock.unlink(missing_ok=True)  # a stale socket of a dead owner: we hold the lock now
        listener = await anyio.create_unix_listener(sock)
        sock.chmod(0o600)
        self.files.info.write_text(json.dumps({**self.status(), "socket": str(sock)}) + "\n")
        self.files.info.chmod(0o600)
        log.info("memvault owner %s (pid %d) serving %s on %s", __version__, os.getpid(),
                 self.settings.storage.data_dir, sock)
        try:
            async with runtime_or_problem(self.settings) as rt:
                self.runtime = rt
                if self.connections == 0:
                    self.idle_since = time.monotonic()  # idle from now on, not from the start of opening
                async with listener, anyio.create_task_group() as tg:
                    self._tg = tg
                    if self.http is None:
                        tg.start_soon(self._stop_when_idle, tg.cancel_scope)
                    else:  # a server for remote clients: it stays up
                        tg.start_soon(self._serve_http, rt, self.http, tg.cancel_scope)
                    tg.start_soon(self._stop_on_signal, tg.cancel_scope)
                    await listener.serve(self._serve_one, task_group=tg)
        finally:
            sock.unlink(missing_ok=True)
            self.files.info.unlink(missing_ok=True)
            log.info("memvault owner (pid %d) stopped after %d connections", os.getpid(), self.served)

    async def _serve_http(self, rt: Runtime | Unavailable, http: HttpEndpoint, scope: anyio.CancelScope) -> None:
        """Serve streamable HTTP at ``http`` with the same runtime until uvicorn stops (a signal)."""
        import uvicorn

        app = build_server(self.settings, runtime=rt).streamable_http_app(
            transport_security=transport_security(http.host, http.port), host=http.host)
        config = uvicorn.Config(BearerAuth(app, http.tokens, self.settings.server.user_id), host=http.host,
                                port=http.port, log_level="warning", lifespan="on")
        log.info("serving streamable HTTP on http://%s:%d%s (%s)", http.host, http.port, MCP_PATH,
                 "bearer tokens" if http.tokens is not None else "loopback, no token")
        self._http_server = uvicorn.Server(config)
        await self._http_server.serve()
        scope.cancel()

    def _runtime_or_none(self) -> Runtime | None:
        """The open runtime, or None while it opens or when it could not be opened."""
        return self.runtime if isinstance(self.runtime, Runtime) else None

    def _page_runtime(self) -> Runtime | str:
        """The runtime for the page, or why there is none (the store could not be opened)."""
        if isinstance(self.runtime, Unavailable):
            return self.runtime.problem
        return self.runtime if self.runtime is not None else "memvault is still opening its store"

    def _touch(self) -> None:
        """A page request: activity, like a connection (the idle time restarts)."""
        if self.connections == 0:
            self.idle_since = time.monotonic()

    async def _page_url(self) -> bytes:
        """The answer line to a ``ui`` handshake: the page's URL (listener started on the first one)."""
        assert self._tg is not None
        try:
            url = await self.ui.url(self._tg)
        except OSError as exc:
            return answer(False, error=f"memvault could not start the page's listener on 127.0.0.1: {exc}")
        self._touch()
        return answer(True, url=url)

    async def _stop_when_idle(self, scope: anyio.CancelScope) -> None:
        idle_s = self.settings.server.owner_idle_s
        if isinstance(self.runtime, Unavailable):
            idle_s = min(idle_s, UNAVAILABLE_IDLE_S)
        while True:
            await anyio.sleep(min(1.0, idle_s / 4))
            if self.idle_since is not None and time.monotonic() - self.idle_since >= idle_s:
                log.info("no client for %.0f s: flushing and exiting", idle_s)
                scope.cancel()
                return

    async def _stop_on_signal(self, scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("signal %d: flushing and exiting", signum)
                if self._http_server is not None:
                    # uvicorn shuts down gracefully (its lifespan too), then _serve_http ends the
                    # owner; cancelling it mid-shutdown would leave a traceback on stderr.
                    self._http_server.should_exit = True
                else:
                    scope.cancel()
                return

    async def _serve_one(self, stream: SocketStream) -> None:
        """Serve one connection: a one-line request (status, ui, context, remember: answered even when
        its client has gone, the work done all the same) or an MCP session."""
        async with stream:
            reader = LineReader(stream)
            with anyio.move_on_after(HANDSHAKE_TIMEOUT_S):
                first = await reader.readline()
            if first is None:
                return
            try:
                hello = parse_hello(first)
            except HandshakeError as exc:
                await _reply(stream, answer(False, error=str(exc)))
                return
            if hello.get("version") != __version__:
                await _reply(stream, answer(False, error=version_mismatch(str(hello.get("version")), __version__,
                                                                         os.getpid())))
                return
            if hello["memvault"] == "status":
                differs = client_settings.differences(self.own_settings, hello.get("settings"))
                await _reply(stream, answer(True, **self.status(), differs=differs, differs_text=client_settings.describe(
                    differs, self.own_settings, hello.get("settings") or {})))
                return
            if hello["memvault"] == "ui":
                await _reply(stream, answer(True, version=__version__, pid=os.getpid()))
                await _reply(stream, await self._page_url())
                return
            if hello["memvault"] == "context":
                await _reply(stream, await hook_requests.context(self._runtime_or_none(), self.settings, hello))
                return
            if hello["memvault"] == "remember":
                if self.connections == 0:
                    self.idle_since = time.monotonic()  # a write is activity: the idle time starts again
                await _reply(stream, await hook_requests.remember(self._runtime_or_none(), self.settings, hello))
                return
            try:
                await stream.send(answer(True, version=__version__, pid=os.getpid()))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the forwarder went away before its session began
            cwd = hello.get("cwd")
            conn = Connection(user_id=hook_requests.user_of(hello, self.settings),
                              workspace=Workspace(Path(cwd) if cwd else Path("/")),
                              project=hello.get("project"), pid=hello.get("pid"),
                              agent_id=hook_requests.text_or_none(hello.get("agent_id")),
                              docs_allowed_dirs=client_settings.dirs_of(hello.get("docs_allowed_dirs")),
                              differs=client_settings.differences(self.own_settings, hello.get("settings")))
            if conn.differs:
                log.warning("client pid %s (in %s) has settings the owner (pid %d) does not use: %s. The owner's "
                            "apply to every client; to use the new ones, run `memvault stop` and restart the "
                            "clients", conn.pid, cwd, os.getpid(),
                            client_settings.describe(conn.differs, self.own_settings, hello.get("settings") or {}))
            self.clients[id(conn)] = (conn, cwd if isinstance(cwd, str) else None)
            self.connections += 1
            self.served += 1
            self.idle_since = None
            try:
                with bound(conn):
                    async with line_streams(reader, LineWriter(stream).write) as (read_stream, write_stream):
                        assert self.runtime is not None
                        await self.server.serve_streams(read_stream, write_stream, self.runtime)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the forwarder went away mid-message
            except Exception:  # one connection's failure never ends the owner, which serves every client
                log.exception("a connection ended with an error; the owner goes on serving the others")
            finally:
                self.clients.pop(id(conn), None)
                self.connections -= 1
                if self.connections == 0:
                    self.idle_since = time.monotonic()


@dataclass(frozen=True)
class HttpEndpoint:
    """Where the owner also serves streamable HTTP; ``tokens``: ``{sha256: user}`` or None (loopback, no token)."""

    host: str
    port: int
    tokens: dict[str, str] | None


def http_endpoint(settings: Settings, host: str, port: int) -> HttpEndpoint:
    """Check ``--http`` before anything starts: off loopback a tokens file is required.

    Raises InvalidArgument with a sentence for the person starting the server.
    """
    path = settings.server.http_tokens_file
    tokens = load_tokens(path) if path is not None else None
    if tokens is None and not is_loopback(host):
        raise InvalidArgument(f"refusing to serve HTTP on {host} without tokens: anyone who can reach it would "
                              "read and write this memory. Set MEMVAULT_HTTP_TOKENS_FILE to a 0600 JSON file "
                              '{"<token>": "<user id>"}, or bind to 127.0.0.1.')
    return HttpEndpoint(host=host, port=port, tokens=tokens)


def run_owner(settings: Settings, http: HttpEndpoint | None = None) -> int:
    """Entry of ``memvault serve --owner`` (and ``--http``): serve until idle (HTTP: until stopped).

    Returns 0, also when another owner already runs (it serves the forwarders); with
    ``http`` that is an error (1), since the running owner serves no HTTP. 1 with one
    line on stderr when the data dir cannot be used; a database that cannot be opened is
    served as the problem instead (``memvault.mcp.lifespan.Unavailable``).
    """
    try:
        prepare_data_dir(settings.storage.data_dir, settings.db_path)
    except StoreUnavailable as exc:  # nowhere to put the socket and the lock: one line, and exit
        log.error("%s", exc)
        return 1
    files = owner_files(settings.storage.data_dir)
    try:
        with owner_lock(files):
            anyio.run(Owner(settings, build_server(settings), files, http).run)
    except OwnerRunning as exc:
        if http is not None:
            log.error("%s without HTTP; stop it first (memvault doctor shows its pid)", exc)
            return 1
        log.info("%s; this one exits", exc)
    return 0
