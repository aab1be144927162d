"""``memvault client-config [CLIENT]``: the block to paste into an MCP client's settings.

GUI clients (Claude Desktop, Cursor, VS Code) start servers without the shell's PATH, so
a bare ``memvault`` command fails there with ``spawn memvault ENOENT``. This prints each
client's configuration with the absolute path of the ``memvault`` that is running it (the
console script beside this venv's Python), so what is pasted works from any client.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode")


def server_command() -> list[str]:
    """Absolute command line that starts ``memvault serve`` with this installation.

    The ``memvault`` console script in the directory of ``sys.executable`` (a venv's or
    pipx's ``bin``; the interpreter path is not resolved, so the venv stays the venv);
    when there is none (e.g. run as ``python -m memvault`` from a source tree), this
    interpreter with ``-m memvault``.
    """
    bin_dir = Path(sys.executable).absolute().parent
    for name in ("memvault", "memvault.exe"):
        script = bin_dir / name
        if script.is_file():
            return [str(script), "serve"]
    return [str(Path(sys.executable).absolute()), "-m", "memvault", "serve"]


def memvault_executable() -> list[str]:
    """The absolute command that runs this installation's ``memvault`` (as ``client-config`` names it)."""
    return server_command()[:-1]  # without "serve"


def client_config(client: str, command: list[str]) -> str:
    """The text to paste for ``client`` (one of ``CLIENTS``) to run ``command``.

    JSON for the clients configured by a file, a shell command line for Claude Code.
    Raises ValueError for an unknown client.
    """
    exe, args = command[0], command[1:]
    if client == "claude-code":
        return f"claude mcp add --scope user memvault -- {shlex.join(command)}"
    block: dict[str, Any]
    if client in ("claude-desktop", "cursor"):
        block = {"mcpServers": {"memvault": {"command": exe, "args": args}}}
    elif client == "vscode":
        block = {"servers": {"memvault": {"type": "stdio", "command": exe, "args": args}}}
    else:
        raise ValueError(f"unknown client {client!r}; one of {', '.join(CLIENTS)}")
    return json.dumps(block, indent=2)


_WHERE = {
    "claude-code": "Claude Code — run in a terminal:",
    "claude-desktop": "Claude Desktop — claude_desktop_config.json (Settings → Developer → Edit Config):",
    "cursor": "Cursor — ~/.cursor/mcp.json (all projects) or .cursor/mcp.json:",
    "vscode": "VS Code — .vscode/mcp.json:",
}


def cmd_client_config(args: argparse.Namespace) -> int:
    """Print the configuration of ``args.client`` (all clients when omitted) on stdout."""
    command = server_command()
    if args.client:
        print(client_config(args.client, command))
        return 0
    for client in CLIENTS:
        print(f"{_WHERE[client]}\n{client_config(client, command)}\n")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``client-config`` on the CLI's subparsers ``sub``."""
    sp = sub.add_parser("client-config", help="print the settings block for an MCP client, with this "
                        "installation's absolute path")
    sp.add_argument("client", nargs="?", choices=CLIENTS, help="one client (default: all)")
    sp.set_defaults(func=cmd_client_config)
