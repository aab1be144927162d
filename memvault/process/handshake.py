"""The one line a forwarder sends the owner before relaying MCP, and the owner's answer.

Forwarder -> owner, one JSON line:
``{"memvault": "connect", "version": "0.1.0", "user_id": "...", "cwd": "...", "project": null, "pid": 123,
"agent_id": null, "docs_allowed_dirs": ["..."], "settings": {"candidates": 100, ...}}``
(``docs_allowed_dirs`` and the other per-client settings apply to this connection alone;
``settings``: the client's owner-wide settings, compared with the owner's own, see
``memvault.process.client_settings``)
(or ``{"memvault": "status", "version": ..., "settings": {...}}`` to ask for the owner's status
(with ``differs``: the names of the asker's settings that differ from the owner's) and close; or
``{"memvault": "ui", ...}`` to ask for the local web page's address: after the ``ok`` line,
one more line ``{"ok": true, "url": ...}``, and the connection closes;
or ``{"memvault": "context", ..., "max_tokens": 2000}`` from a session hook, answered with
``{"ok": true, "text": "..."}``, the block ``memvault context`` prints, and closed; or
``{"memvault": "remember", ..., "content": "...", "kind": "fact", "scope": "project" | "global", "agent_id": ..., "source": ...}``
from a prompt hook, answered with ``{"ok": true, "status": ..., "reason": ..., "project": ...}``).
Owner -> forwarder, one JSON line: ``{"ok": true, "version": ..., "pid": ...}`` then MCP
lines both ways; or ``{"ok": false, "error": "<sentence for a person>"}`` and the
connection closes. Two versions of memvault never serve one store: the owner refuses a
forwarder whose version differs from its own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memvault import __version__

if TYPE_CHECKING:
    from memvault.config import Settings


class HandshakeError(Exception):
    """The handshake line is not memvault's, or the owner refused the connection (message says why)."""


@dataclass
class Hello:
    """What a forwarder tells the owner about its client (see ``memvault.mcp.connection``)."""

    user_id: str
    cwd: str | None
    project: str | None
    pid: int
    agent_id: str | None = None
    version: str = __version__
    memvault: str = "connect"
    docs_allowed_dirs: list[str] | None = None
    settings: dict[str, Any] | None = None

    @classmethod
    def of(cls, settings: Settings, cwd: str | None, pid: int, memvault: str = "connect") -> Hello:
        """The hello of a client with ``settings``: its per-client settings, and its owner-wide
        ones for the owner to compare (``memvault.process.client_settings``)."""
        from memvault.process.client_settings import allowed_dirs, owner_wide

        return cls(user_id=settings.server.user_id, cwd=cwd, project=settings.server.project, pid=pid,
                   agent_id=settings.server.agent_id, memvault=memvault,
                   docs_allowed_dirs=allowed_dirs(settings), settings=owner_wide(settings))

    def line(self) -> bytes:
        """The JSON line to send, newline included."""
        return (json.dumps(asdict(self)) + "\n").encode()


def parse_hello(line: bytes) -> dict[str, Any]:
    """The forwarder's first line as a dict; raises HandshakeError when it is not a memvault handshake."""
    try:
        got = json.loads(line)
    except ValueError:
        raise HandshakeError("the first line is not JSON; this socket speaks memvault's owner protocol") from None
    if not isinstance(got, dict) or got.get("memvault") not in ("connect", "status", "ui", "context", "remember"):
        raise HandshakeError("the first line is not a memvault handshake")
    return got


def answer(ok: bool, **fields: Any) -> bytes:
    """The owner's answer line: ``{"ok": ok, ...fields}`` plus a newline."""
    return (json.dumps({"ok": ok, **fields}) + "\n").encode()


def version_mismatch(forwarder: str, owner: str, pid: int) -> str:
    """The sentence a forwarder of another version reads (and passes to its client)."""
    return (f"memvault {forwarder} cannot use this data dir now: memvault {owner} (pid {pid}) owns it. "
            "Two versions never write one store. Close the clients that use the other version, or stop "
            f"pid {pid}; it also exits by itself after its idle time with no client.")
