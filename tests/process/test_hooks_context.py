"""``memvault context`` and ``memvault hook session-start``: a real process reading a real data dir.

The memories are written through the real server (in-process, the session's model);
then the CLI runs as the client's hook would run it, in its own process, and its stdout
is what the session would be given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memvault.policy.session_context import estimate_tokens
from tests.conftest import McpClient, call

pytestmark = pytest.mark.anyio

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def git_repo(folder: Path, remote: str | None = None) -> Path:
    """A git work tree at ``folder`` (with ``remote`` as origin when given)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


def run_cli(args: list[str], data_dir: Path | None, stdin: str | None = None, **env: str
            ) -> subprocess.CompletedProcess[str]:
    environ = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    if data_dir is not None:
        environ["MEMVAULT_DATA_DIR"] = str(data_dir)
    environ.update(env)
    return subprocess.run([MEMVAULT, *args], input=stdin, capture_output=True, text=True, env=environ, timeout=60)


async def fill(mcp_client: McpClient, data_dir: Path, repo: Path) -> dict[str, Any]:
    """Memories and tasks of project ``repo`` and of the global scope, written through the server."""
    async with mcp_client(data_dir, roots=[repo.as_uri()]) as c:
        await call(c, "remember", content="The shop deploys to production every Friday at 16:00 UTC.",
                   kind="decision", importance=0.9)
        await call(c, "remember", content="Checkout tests need the Stripe sandbox running on port 12111.",
                   kind="procedure", importance=0.7)
        await call(c, "remember", content="pnpm", key="pref.package_manager", kind="preference")
        await call(c, "remember", content="The user prefers short answers without bullet lists.",
                   kind="preference", project="", importance=0.8)
        await call(c, "remember", content="The user's main editor is Helix.", kind="fact", project="",
                   importance=0.6)
        await call(c, "set_task_state", task_id="fix-refunds", title="Fix partial refunds",
                   state={"plan": ["reproduce", "write failing test", "fix rounding"], "current_step": 2})
        await call(c, "set_task_state", task_id="finished-one", title="Old work", state={"x": 1},
                   status="done", outcome="Shipped.")
        # another agent's client must not be given a private memory: the hooks show shared ones only
        await call(c, "remember", content="The draft of the pricing memo is kept in the scratch folder.",
                   kind="fact", importance=1.0, visibility="private")
        await call(c, "remember", content="A private pnpm note", key="pref.private_note", kind="preference",
                   visibility="private", project="")
        # another project's memory must not show in this one's block
        await call(c, "remember", content="The blog uses Hugo and deploys from main.", kind="fact",
                   project="github.com/acme/blog", importance=1.0)
        return await call(c, "get_profile")


async def test_context_shows_profile_tasks_and_memories_of_the_folders_project(mcp_client, tmp_path):
    data_dir = tmp_path / "d"
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    profile = await fill(mcp_client, data_dir, repo)
    assert profile["scope"]["project"] == "github.com/acme/shop"

    (repo / "src").mkdir()
    res = run_cli(["context", "--cwd", str(repo / "src")], data_dir)  # a sub-folder: the same project
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("# memvault: remembered from earlier sessions (project shop)")
    assert "## Preferences\n- pref.package_manager: pnpm" in out
    assert "`fix-refunds` Fix partial refunds [active, " in out and "now: step 2 of 3: write failing test" in out
    tasks_part = out.split("## Open tasks\n", 1)[1].split("\n## ", 1)[0]
    assert "Old work" not in tasks_part  # a finished task is no open task (its episode is a memory)
    project_part = out.split("## This project\n", 1)[1].split("\n## ", 1)[0]
    # ranked by importance x recency: the decision (0.9) before the procedure (0.7)
    assert project_part.index("every Friday at 16:00 UTC") < project_part.index("Stripe sandbox")
    global_part = out.split("## Global\n", 1)[1]
    assert "short answers without bullet lists. (preference, " in global_part
    assert "main editor is Helix" in global_part
    assert "Hugo" not in out
    assert "pricing memo" not in out and "pref.private_note" not in out
    assert res.stderr == ""


async def test_context_is_bounded_by_max_tokens(mcp_client, tmp_path):
    data_dir = tmp_path / "d"
    repo = git_repo(tmp_path / "shop", "https://github.com/acme/shop")
    async with mcp_client(data_dir, roots=[repo.as_uri()]) as c:
        for i in range(40):
            await call(c, "remember", content=f"Service {i} of the shop listens on port {8000 + i} and logs to "
                       f"/var/log/shop/service-{i}.log; its owner is team {i % 7}.", force=True)
    for budget in (120, 400):
        res = run_cli(["context", "--cwd", str(repo), "--max-tokens", str(budget)], data_dir)
        assert res.returncode == 0, res.stderr
        assert 0 < estimate_tokens(res.stdout) <= budget
        assert res.stdout.count("\n- ") >= 1
    default = run_cli(["context", "--cwd", str(repo)], data_dir).stdout
    assert estimate_tokens(default) <= 2000
    assert default.count("\n- ") > res.stdout.count("\n- ")


async def test_session_start_hook_reads_the_folder_from_stdin(mcp_client, tmp_path):
    data_dir = tmp_path / "d"
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    await fill(mcp_client, data_dir, repo)
    hook_input = json.dumps({"session_id": "abc", "cwd": str(repo), "hook_event_name": "SessionStart",
                             "source": "startup", "transcript_path": "/nowhere.jsonl"})
    res = run_cli(["hook", "session-start"], data_dir, stdin=hook_input, MEMVAULT_SOME_SECRET_TOKEN="s3cr3t-value")
    assert res.returncode == 0, res.stderr
    assert "(project shop)" in res.stdout and "every Friday" in res.stdout
    assert "s3cr3t-value" not in res.stdout and str(data_dir) not in res.stdout  # no environment, no paths


async def test_a_folder_outside_git_is_its_own_project_and_root_is_global(mcp_client, tmp_path):
    data_dir = tmp_path / "d"
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    await fill(mcp_client, data_dir, repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    out = run_cli(["context", "--cwd", str(plain)], data_dir).stdout
    assert "(project plain)" in out
    assert "main editor is Helix" in out and "every Friday" not in out and "fix-refunds" not in out
    out = run_cli(["context", "--cwd", "/"], data_dir).stdout
    assert "(no project: global memories)" in out and "every Friday" not in out
    # the configured project stands in before a plain folder, as it does for the server
    out = run_cli(["context", "--cwd", str(plain)], data_dir, MEMVAULT_PROJECT="github.com/acme/blog").stdout
    assert "(project blog)" in out and "Hugo" in out


@pytest.mark.parametrize("case", ["no data dir", "empty data dir", "not a database", "data dir is a file"])
def test_without_a_usable_store_it_prints_nothing_and_exits_0(tmp_path, case):
    data_dir = tmp_path / "d"
    if case != "no data dir":
        data_dir.mkdir()
    if case == "not a database":
        (data_dir / "memvault.db").write_bytes(b"this is not sqlite" * 100)
    if case == "data dir is a file":
        data_dir.rmdir()
        data_dir.write_text("x")
    for args, stdin in ((["context", "--cwd", str(tmp_path)], None),
                        (["hook", "session-start"], json.dumps({"cwd": str(tmp_path)}))):
        res = run_cli(args, data_dir, stdin=stdin)
        assert res.returncode == 0
        assert res.stdout == ""
    assert not (tmp_path / "d" / "memvault.db").exists() or case == "not a database"  # nothing created


def test_garbage_on_stdin_prints_nothing(tmp_path):
    res = run_cli(["hook", "session-start"], tmp_path / "d", stdin="{not json")
    assert (res.returncode, res.stdout) == (0, "")


@pytest.mark.parametrize("env", [
    {},
    {"MEMVAULT_DATA_DIR": "~/mv-data", "MEMVAULT_USER_ID": "bob", "MEMVAULT_PROJECT": "github.com/acme/blog"},
    {"XDG_DATA_HOME": "/srv/xdg", "MEMVAULT_HALF_LIFE_DAYS": "7.5"},  # the platform's folder; a former setting
    {"memvault_data_dir": "/srv/mv", "Memvault_User_Id": "carol"},  # names are case-insensitive
    {"MEMVAULT_PROJECT": ""},
])
def test_hook_settings_read_what_the_server_reads(env, monkeypatch):
    from memvault.cli.hook_config import HookSettings
    from memvault.config import load_settings

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    hook = HookSettings.read(argparse.Namespace())
    full = load_settings()
    assert hook.data_dir == full.storage.data_dir and hook.db_path == full.db_path
    assert hook.user_id == full.server.user_id
    assert hook.project == (full.server.project or None)
    flags = HookSettings.read(argparse.Namespace(data_dir="/flag", user="dave", project="p"))
    assert (flags.data_dir, flags.user_id, flags.project) == (Path("/flag"), "dave", "p")


@pytest.mark.parametrize("name", ["d", "x" * 120])
def test_the_hooks_socket_path_is_the_owners(tmp_path, name):
    from memvault.process.context_client import socket_path
    from memvault.process.owner_files import owner_files

    assert socket_path(tmp_path / name) == owner_files(tmp_path / name).socket
