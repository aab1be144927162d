"""``memvault consolidate``: the command itself, as a process (the tool has its own tests)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import MEMVAULT, call, db_rows, server_env

pytestmark = [pytest.mark.slow]

TEXTS = ["The user prefers pnpm", "The user uses pnpm for every project", "The user switched the monorepo to pnpm",
         "The API server listens on port 8080", "The API server listens on port 8081"]


def run(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MEMVAULT, "consolidate", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.anyio
async def test_cli_lists_then_applies_the_merges(tmp_path, mcp_client, model_cache):
    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        ids = [(await call(c, "remember", content=t, importance=0.6))["id"] for t in TEXTS]
    env = server_env(d, model_cache)
    before = db_rows(d, "SELECT * FROM memories ORDER BY id")

    dry = run(tmp_path, env, "--project", "shop")
    assert dry.returncode == 0, dry.stderr
    assert "would merge 3 memories" in dry.stdout and "1 of 1 merges proposed in project shop" in dry.stdout
    assert all(i in dry.stdout for i in ids[:3]) and not any(i in dry.stdout for i in ids[3:])
    assert db_rows(d, "SELECT * FROM memories ORDER BY id") == before

    bad = run(tmp_path, env, "--project", "shop", "--limit", "0")
    assert bad.returncode == 1 and "limit must be an integer from 1 to 100, got 0" in bad.stderr

    done = run(tmp_path, env, "--project", "shop", "--apply", "--json")
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    [p] = res["proposals"]
    assert res["applied"] is True and sorted(p["member_ids"]) == sorted(ids[:3])
    statuses = dict(db_rows(d, "SELECT id, status FROM memories"))
    assert [statuses[i] for i in ids] == ["superseded"] * 3 + ["active"] * 2 and statuses[p["merged_id"]] == "active"
    assert db_rows(d, "SELECT actor FROM memory_history WHERE memory_id=?", (p["merged_id"],)) == [("memvault-cli",)]


@pytest.mark.anyio
async def test_cli_refuses_while_an_owner_holds_the_data_dir(tmp_path, mcp_client, model_cache):
    from memvault.process.owner import owner_lock
    from memvault.process.owner_files import owner_files

    d = tmp_path / "d"
    async with mcp_client(d, project="shop") as c:
        await call(c, "remember", content=TEXTS[0], importance=0.6)
    before = db_rows(d, "SELECT * FROM memories ORDER BY id")
    with owner_lock(owner_files(d)):  # this process stands in for a running owner
        got = run(tmp_path, server_env(d, model_cache), "--project", "shop", "--apply")
    assert got.returncode == 1 and got.stdout == ""
    assert "consolidate opens the vector index, which the owner holds" in got.stderr
    assert "run consolidate again. Nothing was written." in got.stderr
    assert db_rows(d, "SELECT * FROM memories ORDER BY id") == before
