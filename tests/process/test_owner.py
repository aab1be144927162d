"""Several clients on one data dir: real `memvault serve` forwarders and the owner they share.

Each client is the SDK's stdio client spawning `memvault serve` (owner mode, the default)
with its own workspace root; the first one starts the owner. These are process tests by
nature (spawn, kill -9, idle exit), so they are slow and run real processes throughout.
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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ListRootsResult, Root

from memvault.process.handshake import Hello
from memvault.process.owner_files import owner_files
from tests.conftest import alive, owner_pid

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the owner listens on a Unix socket")]

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def _env(data_dir: Path, model_cache: Path, **settings: Any) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1", "MEMVAULT_OWNER_IDLE_S": "3"})
    env.update({f"MEMVAULT_{k.upper()}": str(v) for k, v in settings.items()})
    return env


@asynccontextmanager
async def forwarded_client(data_dir: Path, model_cache: Path, root: Path | None = None, cwd: Path | None = None,
                           **settings: Any) -> AsyncIterator[Client]:
    """An MCP client on a `memvault serve` forwarder; ``root`` is its one workspace root,
    ``cwd`` the folder it starts in (default: this process's)."""
    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--log-level", "INFO"],
                                   env=_env(data_dir, model_cache, **settings), cwd=cwd)
    kwargs: dict[str, Any] = {"read_timeout_seconds": 180}
    if root is not None:
        async def list_roots(_ctx: Any) -> ListRootsResult:
            return ListRootsResult(roots=[Root(uri=root.as_uri())])
        kwargs["list_roots_callback"] = list_roots
    async with Client(params, **kwargs) as client:
        yield client


def owners_started(data_dir: Path) -> int:
    """How many owner processes took the data dir (one 'serving' line each in owner.log)."""
    log = owner_files(data_dir).log
    return log.read_text().count("memvault owner") if log.exists() else 0


async def remember(c: Client, content: str, **kw: Any) -> dict[str, Any]:
    res = await c.call_tool("remember", {"content": content, "force": True, **kw})
    text = " ".join(getattr(x, "text", "") for x in res.content)
    assert not res.is_error, text
    assert res.structured_content is not None
    return res.structured_content


async def recall(c: Client, query: str, **kw: Any) -> dict[str, Any]:
    res = await c.call_tool("recall", {"query": query, "k": 50, **kw})
    assert not res.is_error, " ".join(getattr(x, "text", "") for x in res.content)
    assert res.structured_content is not None
    return res.structured_content


async def test_three_clients_share_one_owner_and_keep_their_projects(data_dir, model_cache, tmp_path):
    roots = [tmp_path / f"ws{i}" for i in range(3)]
    for r in roots:
        r.mkdir()
    errors: list[str] = []
    seen: dict[int, dict[str, Any]] = {}

    async def one(i: int) -> None:
        async with forwarded_client(data_dir, model_cache, roots[i]) as c:
            for j in range(5):
                try:
                    await remember(c, f"Service {i} listens on port {8000 + 10 * i + j}")
                    await remember(c, f"Shared fact {i}-{j}: the team standup is at {9 + j}:{10 * i:02d}",
                                   project="")
                except AssertionError as exc:
                    errors.append(str(exc))
            await anyio.sleep(0.5)  # let the others finish writing before the reads
            seen[i] = {"ports": await recall(c, "which port does the service listen on"),
                       "shared": await recall(c, "when is the team standup", project="")}

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(one, i)
    assert errors == []
    assert owners_started(data_dir) == 1
    ids = [seen[i]["ports"]["scope"]["project"] for i in range(3)]
    assert len(set(ids)) == 3 and all(p.startswith("local:ws") for p in ids), ids  # each its own root
    for i in range(3):
        mine = seen[i]["ports"]
        assert mine["scope"]["source"] == "roots"
        projects = {m["project"] for m in mine["memories"]}
        assert projects <= {ids[i], ""}, f"client {i} read another client's project: {projects}"
        assert sum(m["project"] == ids[i] for m in mine["memories"]) == 5
        shared = {m["content"] for m in seen[i]["shared"]["memories"]}
        assert len(shared) == 15, f"client {i} sees {len(shared)} of the 15 global writes"


async def test_clients_started_together_start_one_owner(data_dir, model_cache):
    pids: list[int | None] = []

    async def one() -> None:
        async with forwarded_client(data_dir, model_cache) as c:
            await c.list_tools()
            pids.append(owner_pid(data_dir))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    assert owners_started(data_dir) == 1
    assert len(set(pids)) == 1 and pids[0] is not None


async def test_owner_killed_mid_run_loses_nothing_and_applies_nothing_twice(data_dir, model_cache):
    acknowledged: list[str] = []
    unknown: list[str] = []
    async with forwarded_client(data_dir, model_cache) as c:
        for i in range(6):
            acknowledged.append((await remember(c, f"Deployment {i} used build number {1000 + i}"))["id"])
        first = owner_pid(data_dir)
        assert first is not None
        os.kill(first, signal.SIGKILL)  # no flush, no close
        # the next calls go to a new owner, started by this client's forwarder
        for i in range(6, 12):
            res = await c.call_tool("remember", {"content": f"Deployment {i} used build number {1000 + i}",
                                                 "force": True})
            text = " ".join(getattr(x, "text", "") for x in res.content)
            if res.is_error:  # only a call in flight when the owner died may end like this
                assert "may or may not have been applied" in text
                unknown.append(f"Deployment {i}")
            else:
                assert res.structured_content is not None
                acknowledged.append(res.structured_content["id"])
        got = await recall(c, "which build number did the deployment use")
        second = owner_pid(data_dir)
    assert second is not None and second != first
    assert len(unknown) <= 1
    assert set(acknowledged) <= {m["id"] for m in got["memories"]}
    con = sqlite3.connect(data_dir / "memvault.db")
    try:
        rows = con.execute("SELECT content, COUNT(*) FROM memories WHERE status = 'active' GROUP BY content").fetchall()
    finally:
        con.close()
    assert all(n == 1 for _, n in rows), f"a write was applied twice: {rows}"
    assert len(rows) >= len(acknowledged)


async def test_a_read_in_flight_when_the_owner_dies_is_retried(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache) as c:
        await remember(c, "The staging database is called pg-stage-7")
        pid = owner_pid(data_dir)
        assert pid is not None
        async with anyio.create_task_group() as tg:
            results: list[dict[str, Any]] = []

            async def read() -> None:
                results.append(await recall(c, "what is the staging database called"))

            tg.start_soon(read)
            await anyio.sleep(0.01)
            os.kill(pid, signal.SIGKILL)
        assert results and results[0]["memories"][0]["content"] == "The staging database is called pg-stage-7"


async def test_owner_exits_after_its_idle_time(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache, owner_idle_s=1) as c:
        await c.list_tools()
        pid = owner_pid(data_dir)
        assert pid is not None
    deadline = time.monotonic() + 60
    while alive(pid) and time.monotonic() < deadline:  # noqa: ASYNC110 - polling another process, no event to wait on
        await anyio.sleep(0.2)
    assert not alive(pid), "the owner kept running with no client"
    files = owner_files(data_dir)
    assert not files.socket.exists() and not files.info.exists()


async def test_owner_files_are_private(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache) as c:
        await c.list_tools()
        files = owner_files(data_dir)
        assert files.socket.stat().st_mode & 0o777 == 0o600
        assert files.info.stat().st_mode & 0o777 == 0o600
        assert data_dir.stat().st_mode & 0o777 == 0o700


async def test_another_version_is_refused_with_both_versions_named(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache) as c:
        await c.list_tools()
        stream = await anyio.connect_unix(owner_files(data_dir).socket)
        async with stream:
            hello = Hello(user_id="local", cwd=None, project=None, pid=os.getpid(), version="0.0.1")
            await stream.send(hello.line())
            reply = json.loads(await stream.receive())
    assert reply["ok"] is False
    assert "memvault 0.0.1" in reply["error"] and "Two versions never write one store" in reply["error"]


async def test_no_owner_serves_in_its_own_process(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache, owner="false") as c:
        await remember(c, "The nightly job runs at 02:00 UTC")
        assert owner_pid(data_dir) is None
        got = await recall(c, "when does the nightly job run")
    assert got["memories"][0]["content"] == "The nightly job runs at 02:00 UTC"


def _doctor(data_dir: Path, model_cache: Path, **settings: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMVAULT, "doctor"], env=_env(data_dir, model_cache, **settings), capture_output=True,
                          text=True,
                          timeout=300, cwd=data_dir.parent)


async def test_doctor_shows_the_owner_and_a_stale_socket_with_its_fix(data_dir, model_cache):
    async with forwarded_client(data_dir, model_cache, owner_idle_s=120) as c:  # no idle exit before the kill
        await remember(c, "The on-call rotation changes every Monday")
        pid = owner_pid(data_dir)
        running = await anyio.to_thread.run_sync(_doctor, data_dir, model_cache)
        assert f"owner         pid {pid}, memvault" in running.stdout and "1 connection(s)" in running.stdout
        assert "no problems found" in running.stdout and running.returncode == 0
    # Killed after its client left (a connected forwarder would start a new owner at once).
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    while alive(pid):  # noqa: ASYNC110 - polling another process, no event to wait on
        await anyio.sleep(0.05)
    dead = await anyio.to_thread.run_sync(_doctor, data_dir, model_cache)
    files = owner_files(data_dir)
    assert dead.returncode == 1
    assert f"stale socket {files.socket}" in dead.stdout and f"rm {files.socket}" in dead.stdout
    assert "1 points for 1 live memories" in dead.stdout


async def test_each_client_brings_its_own_settings_and_is_told_of_the_others(data_dir, model_cache, tmp_path):
    alpha, beta, extra = tmp_path / "alpha", tmp_path / "beta", tmp_path / "extra"
    for folder, text in ((alpha, "The alpha service uses Flask."), (beta, "The beta service uses Django."),
                         (extra, "The shared style guide asks for tabs.")):
        folder.mkdir()
        (folder / "notes.md").write_text(f"# Notes\n\n{text}\n")
    async with forwarded_client(data_dir, model_cache, cwd=alpha) as a:  # started the owner, no roots
        got = await a.call_tool("index_docs", {"paths": ["notes.md"]})
        assert not got.is_error and got.structured_content is not None
        assert got.structured_content["scope"]["project_name"] == "alpha"
        async with forwarded_client(data_dir, model_cache, cwd=beta, user_id="bob", capacity_per_scope=500,
                                    docs_allowed_dirs=json.dumps([str(extra)])) as b:
            # b's allowed folders and user are its own, though a started the owner
            res = await b.call_tool("index_docs", {"paths": [str(extra / "notes.md"), "notes.md"]})
            assert not res.is_error, res.content
            assert res.structured_content is not None and res.structured_content["added"] == 2
            assert res.structured_content["scope"]["user_id"] == "bob"
            refused = await b.call_tool("index_docs", {"paths": [str(alpha / "notes.md")]})
            assert refused.is_error and "outside the allowed" in refused.content[0].text  # type: ignore[union-attr]
            # a never got b's folder
            refused = await a.call_tool("index_docs", {"paths": [str(extra / "notes.md")]})
            assert refused.is_error
            # the owner's settings apply; its log and doctor say which of b's it does not use
            report = await anyio.to_thread.run_sync(lambda: _doctor(data_dir, model_cache, capacity_per_scope="500"))
            assert "the owner runs with other values than these: MEMVAULT_CAPACITY_PER_SCOPE (owner 50000, client 500)" \
                in report.stdout, report.stdout
            assert "has other values, not used: MEMVAULT_CAPACITY_PER_SCOPE" in report.stdout
            assert "MEMVAULT_DOCS_ALLOWED_DIRS" not in report.stdout  # per client: no difference
    log = owner_files(data_dir).log.read_text()
    assert "does not use: MEMVAULT_CAPACITY_PER_SCOPE (owner 50000, client 500)" in log and "memvault stop" in log
    assert "MEMVAULT_USER_ID" not in log


async def test_memvault_index_goes_through_a_running_owner(data_dir, model_cache, tmp_path):
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "ops.md").write_text("# Operations\n\n## Backups\n\nThe database is backed up every night at 03:00.\n")
    async with forwarded_client(data_dir, model_cache, ws) as c:
        await c.list_tools()
        proc = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [MEMVAULT, "index", "docs", "--project", "", "--no-progress"], env=_env(data_dir, model_cache),
            cwd=ws, capture_output=True, text=True, timeout=300))
        assert proc.returncode == 0, proc.stderr
        assert "indexing through it" in proc.stderr
        assert proc.stdout.startswith("1 added, 0 changed, 0 unchanged, 0 removed;")
        res = await c.call_tool("search_docs", {"query": "when is the database backed up", "project": ""})
    assert res.structured_content is not None
    hit = res.structured_content["results"][0]
    assert hit["path"] == "docs/ops.md" and "03:00" in hit["text"]


def _raw_lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "leaver", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize("how", ["stdin closed", "kill -9"])
async def test_a_client_leaving_with_requests_in_flight_does_not_end_the_owner(data_dir, model_cache, tmp_path, how):
    """Another client's forwarder goes away while its calls run (its stdin closed at once, or
    the forwarder killed): the owner drops those replies and keeps serving everyone else."""
    async with forwarded_client(data_dir, model_cache) as a:
        kept = await remember(a, "The staging database runs on port 5433.")
        pid = owner_pid(data_dir)
        assert pid is not None
        docs = tmp_path / "docs"
        docs.mkdir()
        for i in range(20):
            (docs / f"n{i}.md").write_text(f"# Note {i}\n\nThe build step {i} compiles the assets.\n" * 20)
        calls = [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                  "params": {"name": name, "arguments": args}}
                 for i, (name, args) in enumerate([("recall", {"query": "staging database port"}),
                                                    ("index_docs", {"paths": [str(docs)]}),
                                                    ("recall", {"query": "build step"})] * 3)]
        env = _env(data_dir, model_cache, docs_allowed_dirs=json.dumps([str(tmp_path)]))
        proc = await anyio.open_process([MEMVAULT, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        if how == "stdin closed":  # everything at once, then gone without reading a reply
            await proc.stdin.send(_raw_lines(INIT, INITIALIZED, *calls))
            await proc.stdin.aclose()
        else:  # initialized, calls running, then killed
            await proc.stdin.send(_raw_lines(INIT))
            first = b""
            with anyio.fail_after(120):
                while b"\n" not in first:
                    first += await proc.stdout.receive()
            assert b'"id":1' in first.replace(b" ", b"")
            await proc.stdin.send(_raw_lines(INITIALIZED, *calls))
            await anyio.sleep(0.5)  # the calls reach the owner
            proc.kill()
        with anyio.fail_after(60):
            await proc.wait()
        await anyio.sleep(3)  # the owner finishes (or drops) the calls it was running
        got = await recall(a, "staging database port")
        assert kept["id"] in [m["id"] for m in got["memories"]]
        assert owner_pid(data_dir) == pid and alive(pid), "the owner was replaced"
    assert owners_started(data_dir) == 1
    log = owner_files(data_dir).log.read_text()
    assert "Traceback" not in log, log[-3000:]

