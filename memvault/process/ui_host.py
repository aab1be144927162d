"""The owner's side of ``memvault ui``: the page's HTTP listener, started on the first request.

``memvault ui`` connects to the data dir's owner (starting one as a stdio client would)
and sends the handshake ``{"memvault": "ui", ...}``; the owner answers
``{"ok": true, "url": "http://127.0.0.1:<port>/<secret>/"}``, starting the listener if it
is not running yet: 127.0.0.1 only, an ephemeral port, a secret of 256 random bits made
for this owner's life (``memvault.web.guard`` says what it keeps out). The page's
requests count as activity: the owner does not exit while the page is in use, and
exits its idle time after the last request (and the last MCP client).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from memvault.config import Settings
from memvault.process.forwarder import HANDSHAKE_TIMEOUT_S, OwnerUnavailable, connect_or_start
from memvault.process.handshake import HandshakeError, Hello
from memvault.process.owner_files import owner_files
from memvault.service.runtime import Runtime
from memvault.web.app import PageContext, build_app
from memvault.web.guard import Guard

log = logging.getLogger(__name__)


class UiHost:
    """The page's listener in the owner: ``url`` starts it once and returns its address.

    ``runtime``: the owner's runtime, or a sentence when its store cannot be used;
    ``status``: the owner's status (health view); ``touch``: called on each page request.
    """

    def __init__(self, settings: Settings, runtime: Callable[[], Runtime | str], status: Callable[[], dict[str, Any]],
                 touch: Callable[[], None]) -> None:
        self.settings = settings
        self.runtime = runtime
        self.status = status
        self.touch = touch
        self._url: str | None = None
        self._lock = anyio.Lock()

    async def url(self, tg: TaskGroup) -> str:
        """The page's URL, starting the listener in ``tg`` on the first call (raises OSError when
        no loopback port can be bound)."""
        async with self._lock:
            if self._url is None:
                self._url = await self._start(tg)
            return self._url

    async def _start(self, tg: TaskGroup) -> str:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        secret = secrets.token_urlsafe(32)
        ctx = PageContext(runtime=self.runtime, user_id=self.settings.server.user_id, owner_status=self.status)
        app = Guard(build_app(ctx, f"/{secret}"), secret, port, on_request=self.touch)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                                               server_header=False))
        tg.start_soon(server.serve, [sock])
        log.info("memvault ui: serving the page on http://127.0.0.1:%d/ (secret path)", port)
        return f"http://127.0.0.1:{port}/{secret}/"


async def page_url(settings: Settings) -> str:
    """Ask the data dir's owner for the page's URL, starting the owner when none runs.

    The owner answers the ``ui`` handshake with the usual ``ok`` line, then one line
    ``{"ok": true, "url": ...}`` (or ``{"ok": false, "error": ...}``), and closes. Raises
    OwnerUnavailable (no owner could be started: the message names its log) or
    HandshakeError (the owner refused: another memvault version holds the data dir, or
    the listener could not start).
    """
    hello = Hello.of(settings, os.getcwd(), os.getpid(), memvault="ui")
    link = await connect_or_start(settings, hello)
    try:
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            line = await link.reader.readline()
    finally:
        await link.stream.aclose()
    if line is None:
        raise OwnerUnavailable("the memvault owner closed the connection before giving the page's address; "
                               f"its log is {owner_files(settings.storage.data_dir).log}")
    reply = json.loads(line)
    if not reply.get("ok"):
        raise HandshakeError(str(reply.get("error") or "the owner did not start the page"))
    return str(reply["url"])
