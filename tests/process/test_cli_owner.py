"""``memvault status``, ``memvault stop`` and ``memvault stats``: real processes, a real owner.

status and stop talk to the owner a real `memvault serve` forwarder started; stats reads
a store written through the in-process server.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import alive, call, owner_pid
from tests.process.test_owner import MEMVAULT, _env, forwarded_client, remember

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the owner listens on a Unix socket")


def run(args: list[str], data_dir: Path, model_cache: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMVAULT, *args], env=_env(data_dir, model_cache, **settings), capture_output=True,
                          text=True, timeout=120, cwd="/")


@pytest.mark.anyio
@pytest.mark.slow
async def test_status_shows_the_owner_and_stop_flushes_it_and_clients_go_on(data_dir, model_cache, tmp_path):
    none = await anyio.to_thread.run_sync(run, ["status"], data_dir, model_cache)
    assert none.returncode == 0 and "none running" in none.stdout and str(data_dir) in none.stdout
    assert json.loads((await anyio.to_thread.run_sync(run, ["status", "--json"], data_dir, model_cache)).stdout) \
        == {"running": False, "data_dir": str(data_dir)}
    async with forwarded_client(data_dir, model_cache, cwd=tmp_path, owner_idle_s=120) as c:
        first = await remember(c, "The release train leaves every second Tuesday")
        pid = owner_pid(data_dir)
        assert pid is not None
        shown = await anyio.to_thread.run_sync(lambda: run(["status"], data_dir, model_cache, owner_idle_s="120"))
        assert shown.returncode == 0, shown.stderr
        out = shown.stdout
        assert f"owner        pid {pid}, memvault " in out and f"data dir     {data_dir}" in out
        assert "model        intfloat/multilingual-e5-small: ready" in out
        assert "connections  1 now" in out and f"in {tmp_path}" in out and "since" in out
        as_json = json.loads((await anyio.to_thread.run_sync(
            run, ["status", "--json"], data_dir, model_cache)).stdout)
        assert as_json["running"] is True and as_json["pid"] == pid and as_json["connections"] == 1
        assert as_json["differs"] == ["owner_idle_s"]  # this shell's 3 s against the owner's 120 s

        stopped = await anyio.to_thread.run_sync(run, ["stop"], data_dir, model_cache)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the memvault owner (pid {pid})" in stopped.stdout and "1 connected client" in stopped.stdout
        assert not alive(pid)  # stop returns once the owner is gone
        # the client goes on with a new owner, which finds what the old one flushed
        got = await call(c, "recall", query="when does the release train leave?")
        assert [m["id"] for m in got["memories"]][:1] == [first["id"]]
        new = owner_pid(data_dir)
        assert new is not None and new != pid
    log = (data_dir / "owner.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    again = await anyio.to_thread.run_sync(run, ["stop"], data_dir, model_cache)
    assert again.returncode == 0
    assert "no memvault owner runs" in again.stdout or "stopped the memvault owner" in again.stdout


@pytest.mark.anyio
async def test_stats_prints_a_table_and_json_for_scripts(tmp_path, mcp_client, model_cache):
    d = tmp_path / "d"
    async with mcp_client(d, project="github.com/acme/shop") as c:
        for text in ("The shop deploys on Fridays", "The shop uses Postgres 16"):
            await call(c, "remember", content=text, kind="fact", force=True)
        await call(c, "remember", content="Prefer short answers", kind="preference", force=True, project="")
    table = run(["stats"], d, model_cache)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == f"data dir  {d}"
    assert lines[1].split() == ["user", "project", "active", "total", "active", "kinds"]
    rows = {tuple(line.split()[:2]): line.split() for line in lines[3:]}
    assert rows[("local", "(global)")][2:] == ["1", "1", "preference", "1"]
    assert rows[("local", "shop")][2:5] == ["(github.com/acme/shop)", "2", "2"]
    assert lines[-1].split() == ["all", "3", "3"]
    data = json.loads(run(["stats", "--json"], d, model_cache).stdout)
    assert data["data_dir"] == str(d)
    assert {(g["project"], g["kind"], g["count"]) for g in data["groups"]} == {
        ("", "preference", 1), ("github.com/acme/shop", "fact", 2)}
    empty = run(["stats"], tmp_path / "none", model_cache)
    assert empty.returncode == 0 and "no memories stored yet" in empty.stdout
