"""``memvault hook prompt-submit``: explicit memory requests stored through the owner, in real processes.

The hook runs as Claude Code runs it (its JSON on stdin, a fresh process); no owner
runs at first, so the hook starts one, exactly as ``memvault serve`` would. Afterwards
the owner is stopped and a server on the same data dir recalls what was stored.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import __version__
from memvault.policy.secrets import find_secret
from memvault.process.context_client import context_from_owner, socket_path
from tests.conftest import McpClient, alive, call, db_rows, owner_pid
from tests.process.test_hooks_context import git_repo

pytestmark = pytest.mark.anyio

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
TOKEN = "ghp_" + "Zq8Xw2Vb7Nm4Lk9Jh3Gf6Dd1Ss5Aa0Pp7Oo3"


def prompt_hook(prompt: str, cwd: Path, data_dir: Path, model_cache: Path) -> subprocess.CompletedProcess[str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "MEMVAULT_OWNER_IDLE_S": "120", "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"})
    hook_input = {"session_id": "s1", "transcript_path": "/nowhere.jsonl", "cwd": str(cwd),
                  "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    return subprocess.run([MEMVAULT, "hook", "prompt-submit"], input=json.dumps(hook_input), capture_output=True,
                          text=True, env=env, timeout=180)


def session_hook(stdin: str, data_dir: Path) -> str:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env["MEMVAULT_DATA_DIR"] = str(data_dir)
    res = subprocess.run([MEMVAULT, "hook", "session-start"], input=stdin, capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return res.stdout


def stored(data_dir: Path, content: str) -> int:
    """How many memories hold exactly ``content`` (0 before the starting owner has made its database)."""
    if not (data_dir / "memvault.db").is_file():
        return 0
    try:
        return db_rows(data_dir, "SELECT COUNT(*) FROM memories WHERE content = ?", (content,))[0][0]
    except sqlite3.OperationalError:  # the table is not there yet
        return 0


def wait_until(done, timeout_s: float = 180.0) -> None:
    """Poll ``done()`` until it holds (another process is doing the work), failing after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.1)


def owner_status(data_dir: Path) -> dict | None:
    """The running owner's status line (``served``: MCP sessions it served), or None when none answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(socket_path(data_dir)))
            s.sendall(json.dumps({"memvault": "status", "version": __version__}).encode() + b"\n")
            return json.loads(s.makefile("rb").readline())
    except OSError:
        return None


def stop_owner(data_dir: Path) -> None:
    pid = owner_pid(data_dir)
    assert pid is not None, "the hook started no owner"
    os.kill(pid, signal.SIGTERM)  # it flushes its index and exits
    deadline = time.monotonic() + 60
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


async def test_requests_are_stored_through_the_owner_and_secrets_never(mcp_client: McpClient, shared_embedder,
                                                                        model_cache, data_dir, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")

    # no request: nothing printed, no owner started, nothing written
    res = prompt_hook("do you remember when we fixed the refunds? remember to run the tests", repo, data_dir,
                      model_cache)
    assert (res.returncode, res.stdout) == (0, "")
    assert owner_pid(data_dir) is None

    res = prompt_hook("请记住：发布前必须先跑集成测试。然后帮我看看这个报错", repo, data_dir, model_cache)
    assert res.returncode == 0, res.stderr
    # no owner ran: a detached process starts one and stores it; the line says so if it takes longer than the hook
    assert res.stdout in ("memvault: remembered “发布前必须先跑集成测试。” (fact, project shop)\n",
                          "memvault: handed “发布前必须先跑集成测试。” to memvault, which is starting; no answer yet "
                          "(it stores it once started)\n"), res.stdout
    wait_until(lambda: stored(data_dir, "发布前必须先跑集成测试。") == 1)

    assert owner_status(data_dir)["served"] == 1  # the first request opened an MCP session (and started the owner)

    # a preference that names nothing of the project holds everywhere; one that does is the project's
    res = prompt_hook("From now on, answer in English.", repo, data_dir, model_cache)
    assert res.stdout == "memvault: remembered “From now on, answer in English.” (preference, global)\n"
    res = prompt_hook("From now on, keep src/api handlers thin.", repo, data_dir, model_cache)
    assert res.stdout == "memvault: remembered “From now on, keep src/api handlers thin.” (preference, project shop)\n"
    # with the owner up, the hook hands requests over its socket: no MCP session, same policies
    assert owner_status(data_dir)["served"] == 1
    res = prompt_hook("记住：发布前必须先跑集成测试", repo, data_dir, model_cache)  # the same again
    assert res.stdout.startswith("memvault: already remembered “发布前必须先跑集成测试”")

    secret_prompt = f"remember that my GitHub token is {TOKEN}"
    assert find_secret(secret_prompt) is not None
    res = prompt_hook(secret_prompt, repo, data_dir, model_cache)
    assert res.returncode == 0
    assert res.stdout.startswith("memvault: did not remember that: The content contains")
    assert "never stores secrets" in res.stdout
    assert TOKEN not in res.stdout and TOKEN not in res.stderr
    assert res.stdout.count("\n") == 1

    # the session hook asks the running owner; with the owner gone it reads the store itself: the same block
    session_in = json.dumps({"session_id": "s2", "cwd": str(repo), "source": "startup"})
    via_owner = session_hook(session_in, data_dir)
    project_part, global_part = via_owner.split("## This project\n", 1)[1].split("## Global\n", 1)
    assert "- 发布前必须先跑集成测试。 (fact, " in project_part
    assert "- From now on, answer in English. (preference, " in global_part
    assert context_from_owner(data_dir, "local", repo, None, 2000, timeout_s=30) == via_owner

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # a context line without its budget
        s.connect(str(socket_path(data_dir)))
        s.sendall(json.dumps({"memvault": "context", "version": __version__, "cwd": str(repo)}).encode() + b"\n")
        reply = json.loads(s.makefile("rb").readline())
    assert reply == {"ok": False, "error": "a context request needs cwd (a folder) and max_tokens (a whole number)"}

    stop_owner(data_dir)
    assert context_from_owner(data_dir, "local", repo, None, 2000, timeout_s=30) is None
    assert session_hook(session_in, data_dir) == via_owner
    assert db_rows(data_dir, "SELECT COUNT(*) FROM memories WHERE content LIKE ?", (f"%{TOKEN[4:20]}%",)) == [(0,)]
    assert db_rows(data_dir, "SELECT project, kind, source FROM memories WHERE content LIKE '%集成测试%'") == [
        ("github.com/acme/shop", "fact", "prompt hook")]
    assert db_rows(data_dir, "SELECT project FROM memories WHERE content LIKE 'From now on%' ORDER BY content") == [
        ("",), ("github.com/acme/shop",)]
    # both ways write as the same agent with the same source
    assert db_rows(data_dir, "SELECT DISTINCT agent, source, visibility FROM memories") == [
        ("memvault-hook", "prompt hook", "shared")]
    assert owner_status(data_dir) is None  # (stopped above)

    async with mcp_client(data_dir, roots=[repo.as_uri()]) as c:
        found = await call(c, "recall", query="发布之前要做什么测试？")
        assert found["memories"][0]["content"] == "发布前必须先跑集成测试。"
        prefs = await call(c, "recall", query="which language should answers be in", kinds=["preference"])
        assert prefs["memories"][0]["content"] == "From now on, answer in English."


def test_without_a_usable_data_dir_the_hook_says_so_in_one_line_and_exits_0(tmp_path, model_cache):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    res = prompt_hook("remember that the build takes 20 minutes", tmp_path, blocked, model_cache)
    assert res.returncode == 0
    assert res.stdout.startswith("memvault: could not ") and res.stdout.count("\n") == 1


def test_a_paused_owner_never_holds_the_prompt_and_nothing_is_stored_twice(shared_embedder, model_cache, data_dir,
                                                                          tmp_path):
    """With the owner stopped (SIGSTOP), every hook returns within 3 s: the prompt hook says its requests
    were handed over without an answer yet, the session hook reads the store itself; once the owner
    goes on (SIGCONT) each request is stored exactly once."""
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    first = "The staging database is refreshed every Sunday"
    prompt_hook("Remember that the staging database is refreshed every Sunday", repo, data_dir, model_cache)
    wait_until(lambda: stored(data_dir, first) == 1 and owner_status(data_dir) is not None)
    pid = owner_pid(data_dir)
    assert pid is not None
    later = ["Deploys need two approvals.", "The billing service owns the invoices table."]
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        res = prompt_hook("Remember that deploys need two approvals. Also, remember that the billing service owns "
                          "the invoices table.", repo, data_dir, model_cache)
        took = time.monotonic() - t0
        assert res.returncode == 0 and took < 3.0, (took, res.stdout, res.stderr)
        lines = res.stdout.splitlines()
        assert len(lines) == 2, res.stdout
        for line, content in zip(lines, later, strict=True):
            assert line.startswith(f"memvault: handed “{content}” to memvault") and "not answered yet" in line, line
        t0 = time.monotonic()
        session = session_hook(json.dumps({"session_id": "s3", "cwd": str(repo), "source": "startup"}), data_dir)
        assert time.monotonic() - t0 < 3.0
        assert first in session  # read from the store itself
        assert [stored(data_dir, c) for c in later] == [0, 0]  # nothing yet: paused
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: all(stored(data_dir, c) == 1 for c in later))
    time.sleep(2)  # anything that would store them again has had its chance
    assert [stored(data_dir, c) for c in later] == [1, 1]
    assert owner_pid(data_dir) == pid  # the same owner, still serving
    stop_owner(data_dir)
