"""The hooks' questions to the running owner over its socket: "the context block for this
folder" (session hook) and "remember this" (prompt hook).

Standard library only (no anyio, pydantic or MCP SDK: a hook's start-up time counts).
One line out (``memvault.process.handshake``: ``{"memvault": "context" | "remember", ...}``),
one line back, closed. The owner answers from its open store (the context block:
``memvault.service.profile.glance``, the same code ``memvault context`` runs itself; a remember:
the ``remember`` service with all its policies). When no owner listens, or it does not
answer within the timeout (e.g. it is still starting), the caller reads the store itself
(context); a remember request is sent once (``hand_over`` says whether it reached the
owner, which then stores it even when it answers too late) and one no owner received
goes to a process that starts one (``memvault hook remember-pending``).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from memvault import __version__

_SHORT_SOCKET_PATH = 100  # owner_files._MAX_SOCKET_PATH; tests/process/test_hooks_context.py checks they agree

__all__ = ["context_from_owner", "hand_over", "socket_path", "MAX_ANSWER_BYTES",
           "ANSWERED", "REFUSED", "SENT", "UNSENT"]

ANSWERED = "answered"
"""``hand_over``: the owner did the request and said how (its answer comes with it)."""
REFUSED = "refused"
"""``hand_over``: the owner read the request and did not do it (``ok: false``: e.g. its store is not open)."""
SENT = "sent"
"""``hand_over``: the request reached the owner's socket, no answer came in time: the owner does it
when it goes on (a paused or busy owner); asking again could do it twice."""
UNSENT = "unsent"
"""``hand_over``: the request never reached an owner (none runs, or it did not accept in time)."""

MAX_ANSWER_BYTES = 1024 * 1024
"""Longest answer read (bytes); a block is bounded far below this by its token budget."""


def socket_path(data_dir: Path) -> Path:
    """``owner_files(data_dir).socket``, without importing ``owner_files`` (dataclasses, tempfile, hashlib:
    tens of milliseconds of a hook's start) for the usual short path."""
    sock = data_dir.resolve() / "owner.sock"
    if len(os.fsencode(sock)) > _SHORT_SOCKET_PATH:
        from memvault.process.owner_files import owner_files

        return owner_files(data_dir).socket
    return sock


def _ask(data_dir: Path, hello: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    """Send ``hello`` (one JSON line) to the owner of ``data_dir``; its one-line JSON answer when it
    says ``ok: true``, else None (no owner, no answer within ``timeout_s`` seconds, a refusal).
    Never raises."""
    try:
        path = socket_path(data_dir)
        if not path.exists():
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(path))
            s.sendall(json.dumps({**hello, "version": __version__, "pid": os.getpid()}).encode("utf-8") + b"\n")
            buf = b""
            while not buf.endswith(b"\n") and len(buf) < MAX_ANSWER_BYTES:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        reply = json.loads(buf)
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) and reply.get("ok") is True else None


def _line(hello: dict[str, Any]) -> bytes:
    return json.dumps({**hello, "version": __version__, "pid": os.getpid()}).encode("utf-8") + b"\n"


def hand_over(data_dir: Path, hellos: list[dict[str, Any]], deadline: float) -> list[tuple[str, dict[str, Any] | None]]:
    """Send each request line of ``hellos`` to the owner of ``data_dir`` on its own connection, all
    first, then wait for their answers until ``deadline`` (``time.monotonic()``).

    For each, in order: ``(ANSWERED, answer)``, ``(REFUSED, answer)``, ``(SENT, None)`` or
    ``(UNSENT, None)`` (see those names). A request counts as sent once its whole line was
    written to the socket: the owner reads it even after this side has closed. Never raises;
    never waits past ``deadline``.
    """
    import time

    out: list[tuple[str, dict[str, Any] | None]] = [(UNSENT, None)] * len(hellos)
    socks: list[socket.socket | None] = [None] * len(hellos)
    try:
        path = socket_path(data_dir)
        if not path.exists():
            return out
        for i, hello in enumerate(hellos):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(left)
                s.connect(str(path))
                s.sendall(_line(hello))
            except OSError:
                s.close()
                break  # an owner that does not accept now will not accept the next one either
            socks[i], out[i] = s, (SENT, None)
        for i, conn in enumerate(socks):
            if conn is None:
                continue
            buf = b""
            try:
                while not buf.endswith(b"\n") and len(buf) < MAX_ANSWER_BYTES:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    conn.settimeout(left)
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
            except OSError:
                continue
            try:
                reply = json.loads(buf) if buf.endswith(b"\n") else None
            except ValueError:
                reply = None
            if isinstance(reply, dict):
                out[i] = (ANSWERED if reply.get("ok") is True else REFUSED, reply)
    except OSError:
        pass  # the socket's folder unreadable: what was sent stays sent
    finally:
        for conn in socks:
            if conn is not None:
                conn.close()
    return out


def context_from_owner(data_dir: Path, user_id: str, cwd: Path, project: str | None, max_tokens: int, *,
                       timeout_s: float) -> str | None:
    """The owner's context block for ``user_id`` working in ``cwd`` (``""``: nothing to show), or None when
    no owner of ``data_dir`` answered within ``timeout_s`` seconds or it refused (another
    version, a store it could not open). Never raises."""
    reply = _ask(data_dir, {"memvault": "context", "user_id": user_id, "cwd": str(cwd), "project": project,
                            "max_tokens": max_tokens}, timeout_s)
    return reply["text"] if reply is not None and isinstance(reply.get("text"), str) else None
