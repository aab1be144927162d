"""The hooks' questions to the running owner over its socket: "the context block for this
folder" (session hook) and "remember this" (prompt hook).

Standard library only (no anyio, pydantic or MCP SDK: a hook's start-up time counts).
One line out (``memvault.mcp.handshake``: ``{"memvault": "context" | "remember", ...}``),
one line back, closed. The owner answers from its open store (the context block:
``memvault.service.glance``, the same code ``memvault context`` runs itself; a remember:
the ``remember`` service with all its policies). When no owner listens, or it does not
answer within the timeout (e.g. it is still starting), the caller reads the store itself
(context) or opens an MCP session, which starts an owner (remember).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from memvault import __version__

_SHORT_SOCKET_PATH = 100  # owner_files._MAX_SOCKET_PATH; tests/test_hooks_context.py checks they agree

__all__ = ["context_from_owner", "remember_via_owner", "socket_path", "MAX_ANSWER_BYTES"]

MAX_ANSWER_BYTES = 1024 * 1024
"""Longest answer read (bytes); a block is bounded far below this by its token budget."""


def socket_path(data_dir: Path) -> Path:
    """``owner_files(data_dir).socket``, without importing ``owner_files`` (dataclasses, tempfile, hashlib:
    tens of milliseconds of a hook's start) for the usual short path."""
    sock = data_dir.resolve() / "owner.sock"
    if len(os.fsencode(sock)) > _SHORT_SOCKET_PATH:
        from memvault.mcp.owner_files import owner_files

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


def context_from_owner(data_dir: Path, user_id: str, cwd: Path, project: str | None, max_tokens: int, *,
                       timeout_s: float) -> str | None:
    """The owner's context block for ``user_id`` working in ``cwd`` (``""``: nothing to show), or None when
    no owner of ``data_dir`` answered within ``timeout_s`` seconds or it refused (another
    version, a store it could not open). Never raises."""
    reply = _ask(data_dir, {"memvault": "context", "user_id": user_id, "cwd": str(cwd), "project": project,
                            "max_tokens": max_tokens}, timeout_s)
    return reply["text"] if reply is not None and isinstance(reply.get("text"), str) else None


def remember_via_owner(data_dir: Path, user_id: str, cwd: Path, project: str | None, content: str, kind: str, *,
                       agent_id: str, source: str, timeout_s: float) -> dict[str, Any] | None:
    """``remember`` of ``content`` (``kind``) by the running owner of ``data_dir``, for ``user_id``
    in the project of ``cwd``, written by agent ``agent_id`` with ``source``: the owner's
    answer (``status``, ``reason``, ``project``, ``project_name``), or None when no owner
    answered within ``timeout_s`` seconds or it could not (the caller then opens an MCP
    session, which starts an owner and reports any failure). Never raises."""
    reply = _ask(data_dir, {"memvault": "remember", "user_id": user_id, "cwd": str(cwd), "project": project,
                            "content": content, "kind": kind, "agent_id": agent_id, "source": source}, timeout_s)
    return reply if reply is not None and isinstance(reply.get("status"), str) else None
