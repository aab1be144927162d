"""A session hook's question to the running owner: "the context block for this folder", over its socket.

Standard library only (no anyio, pydantic or MCP SDK: a hook's start-up time counts).
One line out (``memvault.mcp.handshake``: ``{"memvault": "context", ...}``), one line
back, closed. The owner answers from its open store (``memvault.service.glance``, the
same code ``memvault context`` runs itself); when no owner listens, or it does not answer
within the timeout (e.g. it is still starting), the caller reads the store itself.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from memvault import __version__

_SHORT_SOCKET_PATH = 100  # owner_files._MAX_SOCKET_PATH; tests/test_hooks_context.py checks they agree

__all__ = ["context_from_owner", "socket_path", "MAX_ANSWER_BYTES"]

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


def context_from_owner(data_dir: Path, user_id: str, cwd: Path, project: str | None, max_tokens: int, *,
                       timeout_s: float) -> str | None:
    """The owner's context block for ``user_id`` working in ``cwd`` (``""``: nothing to show), or None when
    no owner of ``data_dir`` answered within ``timeout_s`` seconds or it refused (another
    version, a store it could not open). Never raises."""
    try:
        path = socket_path(data_dir)
        if not path.exists():
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(path))
            hello = {"memvault": "context", "version": __version__, "user_id": user_id, "cwd": str(cwd),
                     "project": project, "pid": os.getpid(), "max_tokens": max_tokens}
            s.sendall(json.dumps(hello).encode("utf-8") + b"\n")
            buf = b""
            while not buf.endswith(b"\n") and len(buf) < MAX_ANSWER_BYTES:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        reply = json.loads(buf)
    except (OSError, ValueError):
        return None
    if not isinstance(reply, dict) or reply.get("ok") is not True or not isinstance(reply.get("text"), str):
        return None
    return reply["text"]
