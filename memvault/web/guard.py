"""Who may use the page: the ASGI wrapper that every request of the web face passes first.

The page is served on 127.0.0.1 at an ephemeral port, which every local user and every
web page the browser shows can reach. So:

- every path starts with a per-start secret (``/<secret>/...``, 256 random bits, compared in
  constant time); without it: 403. The secret is in the URL ``memvault ui`` prints, and
  never in a cookie: cookies are shared by every port of a host, so another local
  server the browser visits would receive one;
- the ``Host`` header must be ``127.0.0.1:<port>`` (a DNS-rebinding page comes with its own
  host name): 403 otherwise;
- reads are GET (and HEAD), changes are POST only, with an ``Origin`` of this very page
  (and ``Sec-Fetch-Site``, when sent, ``same-origin``): a form posted from another site
  is refused (403) even if it guessed the secret; other methods: 405;
- answers carry no CORS header, forbid scripts and framing (Content-Security-Policy,
  ``X-Frame-Options``), send no referrer to other sites (``Referrer-Policy: same-origin``: the
  path holds the secret), and are never cached.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                                 b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would make the browser send Origin: null
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
READ_METHODS = ("GET", "HEAD")


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Wraps the page's ASGI app: refuses what the module docstring lists, strips the secret
    from the path (the app sees ``/``, ``/m/<id>``, ...) and adds the security headers.

    ``secret``: the path prefix (URL-safe text); ``port``: the port served (for Host and Origin);
    ``on_request``: called for each request let through (the owner counts it as activity).
    """

    def __init__(self, app: ASGIApp, secret: str, port: int, on_request: Callable[[], None] | None = None) -> None:
        self.app = app
        self.prefix = f"/{secret}"
        self.host = f"127.0.0.1:{port}"
        self.origin = f"http://{self.host}"
        self.on_request = on_request

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host") != self.host:
            return 403, "refused: this page answers only at the address memvault ui printed\n"
        path: str = scope.get("path", "")
        head = path[: len(self.prefix)]
        if not (hmac.compare_digest(head.encode(), self.prefix.encode())
                and path[len(self.prefix): len(self.prefix) + 1] in ("", "/")):
            return 403, "refused: open the page with the address memvault ui printed (it holds this start's secret)\n"
        method = scope.get("method", "GET")
        if method in READ_METHODS:
            return None
        if method != "POST":
            return 405, f"method {method} is not allowed here; the page reads with GET and changes with POST\n"
        if headers.get("origin") != self.origin or headers.get("sec-fetch-site", "same-origin") != "same-origin":
            return 403, "refused: changes are accepted only from this page itself (cross-origin request)\n"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry: HTTP only (lifespan and websockets are not served)."""
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _refuse(send, *refusal)
            return
        if self.on_request is not None:
            self.on_request()
        rest = scope["path"][len(self.prefix):] or "/"
        inner = dict(scope, path=rest, raw_path=rest.encode(), root_path="")

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in SECURITY_HEADERS}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = dict(message, headers=[*kept, *SECURITY_HEADERS])
            await send(message)

        await self.app(inner, receive, send_secured)
