"""``memvault client-config``: what a person pastes into a GUI client must start the server there.

GUI clients start servers without the shell's PATH (a minimal one, or none); the printed
command must work so, from any folder.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.cli.clients import CLIENTS, client_config
from tests.conftest import alive, call, owner_pid, server_env

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
REPO = Path(__file__).resolve().parents[2]


def printed(client: str) -> str:
    done = subprocess.run([MEMVAULT, "client-config", client], capture_output=True, text=True, timeout=60,
                          env={"HOME": str(Path.home())}, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "vscode"])
def test_json_clients_get_an_absolute_command_that_exists(client: str) -> None:
    block = json.loads(printed(client))
    server = block["servers" if client == "vscode" else "mcpServers"]["memvault"]
    command = Path(server["command"])
    assert command.is_absolute() and command.is_file(), server
    assert server["args"][-1] == "serve"
    # started the way a GUI client starts it: no PATH, another folder
    version = subprocess.run([str(command), *server["args"][:-1], "--version"], capture_output=True, text=True,
                             env={}, cwd="/", timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("memvault "), version.stderr


def test_claude_code_gets_a_command_line_with_the_absolute_path() -> None:
    words = shlex.split(printed("claude-code"))
    assert words[:6] == ["claude", "mcp", "add", "--scope", "user", "memvault"]
    assert words[6] == "--" and Path(words[7]).is_absolute() and words[-1] == "serve"


@pytest.mark.model_in_user_cache  # the command prepares the model first
def test_every_client_is_printed_without_an_argument() -> None:
    done = subprocess.run([MEMVAULT, "client-config"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.count('"memvault"') == 3 and "claude mcp add" in done.stdout


def test_an_unknown_client_is_refused_with_the_choices() -> None:
    done = subprocess.run([MEMVAULT, "client-config", "emacs"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "vscode" in done.stderr
    with pytest.raises(ValueError, match="one of claude-code"):
        client_config("emacs", ["/x/memvault", "serve"])
    assert set(CLIENTS) == {"claude-code", "claude-desktop", "cursor", "vscode"}


def test_the_example_file_shows_the_absolute_form() -> None:
    example = json.loads((REPO / "mcp.json.example").read_text())
    assert Path(example["mcpServers"]["memvault"]["command"]).is_absolute()


@pytest.mark.anyio
async def test_the_printed_command_serves_mcp_with_a_gui_path(tmp_path: Path, model_cache: Path) -> None:
    """The whole round trip, as a GUI client runs it: the pasted block, a minimal PATH, the
    default owner mode (the forwarder starts the owner process), a write and a read."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    server = json.loads(printed("claude-desktop"))["mcpServers"]["memvault"]
    data_dir = tmp_path / "d"
    # the SDK adds its own PATH when none is given: set the minimal one a GUI app gets
    env = {**server_env(data_dir, model_cache, owner="true", owner_idle_s=2), "PATH": "/usr/bin:/bin"}
    assert Path(sys.executable).parent.as_posix() not in env["PATH"].split(":")
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd="/")
    try:
        async with Client(params, read_timeout_seconds=180) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            wrote = await call(client, "remember", content="The user deploys with Ansible", force=True)
            found = await call(client, "recall", query="how does the user deploy?")
    finally:
        pid = owner_pid(data_dir)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert {"remember", "recall", "forget"} <= names
    assert [m["id"] for m in found["memories"]][:1] == [wrote["id"]]
    assert pid is not None, "the owner process should have served the call"
