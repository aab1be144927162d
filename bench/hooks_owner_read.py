"""One read through the owner, as lean as a hook could make it: the other read path ``bench.hooks`` measures.

``python bench/hooks_owner_read.py SOCKET CWD USER``: connect to the owner's Unix socket
with the standard library only, shake hands (``memvault.mcp.handshake``), ``initialize``,
call ``get_profile``, print its Markdown text, exit. No pydantic, no MCP SDK, no anyio:
the fastest a hook reading through the owner can start. Exit 1 when the owner does not answer.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from memvault import __version__


def main(sock_path: str, cwd: str, user: str) -> int:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5.0)
    try:
        s.connect(sock_path)
    except OSError:
        return 1
    f = s.makefile("rwb")

    def send(msg: dict) -> None:
        f.write(json.dumps(msg).encode() + b"\n")
        f.flush()

    def answer(msg_id: int) -> dict:
        while True:
            line = f.readline()
            if not line:
                raise SystemExit(1)
            msg = json.loads(line)
            if msg.get("id") == msg_id and "method" not in msg:
                return msg

    send({"memvault": "connect", "version": __version__, "user_id": user, "cwd": cwd, "project": None,
          "pid": os.getpid()})
    if not json.loads(f.readline()).get("ok"):
        return 1
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_profile", "arguments": {}}})
    result = answer(2).get("result") or {}
    text = " ".join(c.get("text", "") for c in result.get("content") or [])
    sys.stdout.write(text[:8000] + "\n")
    return 0 if not result.get("isError") else 1


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
