"""Streamable HTTP for remote and team use: bearer tokens mapped to users, DNS-rebinding checks.

``memvault serve --http [--host 127.0.0.1] [--port 8765]`` serves MCP at ``/mcp``. On
loopback it needs no token (every request acts for ``MEMVAULT_USER_ID``); bound anywhere
else it refuses to start without a tokens file. The tokens file (``MEMVAULT_HTTP_TOKENS_FILE``,
mode 0600) is a JSON object whose keys are tokens, or ``sha256:<hex>`` of a token, and
whose values are user ids: one server serves several people who never see each other,
since the user of every request comes from its own token. A missing or wrong token gets
401 with nothing about the store in the body. A request with more than one
``Authorization`` header gets 400: a proxy that checks the first and a server that reads
the last would disagree on who is asking. Host and Origin headers are checked against
the bound address (the SDK's DNS-rebinding protection).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from memvault.service.errors import InvalidArgument

MCP_PATH = "/mcp"
USER_STATE = "memvault_user"
"""Key in the ASGI scope's ``state`` (``request.state.memvault_user``) naming the request's user."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(path: Path) -> dict[str, str]:
    """``{sha256 hex of a token: user id}`` from a tokens file (module docstring).

    Raises InvalidArgument naming the file when it is readable by others (not 0600), is
    not a JSON object of non-empty strings, or names a malformed ``sha256:`` digest.
    """
    try:
        mode = path.stat().st_mode
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path} is readable by other users (mode "
                              f"{stat.S_IMODE(mode):o}); make it private: chmod 600 {path}")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path} must be a non-empty JSON object "
                              '{"<token or sha256:hex>": "<user id>"}')
    out: dict[str, str] = {}
    for key, user in data.items():
        if not isinstance(user, str) or not user.strip() or not key:
            raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path}: every value must be a user id (a non-empty "
                                  "string) and every key a token")
        if key.startswith("sha256:"):
            digest = key[len("sha256:"):].lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise InvalidArgument(f"MEMVAULT_HTTP_TOKENS_FILE {path}: {key[:20]}… is not sha256:<64 hex digits>")
        else:
            digest = _digest(key)
        out[digest] = user.strip()
    return out


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """Host and Origin checks for a server bound to ``host:port`` (browsers on other sites are refused)."""
    names = {host, "localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {host}
    hosts = sorted({f"{n}:{port}" for n in names} | names)
    origins = sorted({f"http://{n}:{port}" for n in names} | {f"https://{n}:{port}" for n in names})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


class BearerAuth:
    """ASGI middleware: every request needs ``Authorization: Bearer <token>`` of a known user.

    ``tokens``: ``{sha256 hex: user}`` (``load_tokens``); None lets every request through
    as ``default_user`` (loopback without a tokens file). The user is put in the request's
    ``state`` under ``USER_STATE``.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], tokens: dict[str, str] | None,
                 default_user: str) -> None:
        self.app = app
        self.tokens = tokens
        self.default_user = default_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if sum(1 for name, _ in scope.get("headers") or [] if name.lower() == b"authorization") > 1:
            await _refuse(send, 400, b'{"error": "bad request: more than one Authorization header; send exactly '
                                     b'one (Authorization: Bearer <token>)"}')
            return
        user = self.default_user if self.tokens is None else self._user(scope)
        if user is None:
            await _refuse(send, 401, b'{"error": "unauthorized: send Authorization: Bearer <token>"}',
                          [(b"www-authenticate", b"Bearer")])
            return
        scope.setdefault("state", {})[USER_STATE] = user
        await self.app(scope, receive, send)

    def _user(self, scope: Scope) -> str | None:
        assert self.tokens is not None
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        kind, _, token = header.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            return None
        digest = _digest(token.strip())
        for known, user in self.tokens.items():
            if hmac.compare_digest(known, digest):
                return user
        return None


async def _refuse(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer ``status`` with the JSON ``body`` (the request goes no further)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or []),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def request_user(request: Any) -> str | None:
    """The user that ``BearerAuth`` put on an HTTP request, or None (not an HTTP request)."""
    state = getattr(request, "state", None)
    return getattr(state, USER_STATE, None) if state is not None else None
