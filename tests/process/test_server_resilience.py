"""Crash safety and store ownership.

SQLite is the truth and Qdrant an index rebuilt from it: a kill -9 after an
acknowledged write loses nothing, a lost index folder is rebuilt at start, and a
second process on the same store gets a clear message instead of corrupting it.
Where the process is the point (kill -9, two processes, the ``reindex`` command) the
tests run real ``memvault serve`` / ``memvault`` processes; the rest use the in-process
server on the same data dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import MEMVAULT, call, call_error, memvault_client, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def server_pids(data_dir: Path) -> list[int]:
    """PIDs of `memvault serve` processes started with this data dir (Linux /proc)."""
    needle = f"MEMVAULT_DATA_DIR={data_dir}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0") and b"serve" in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the server through /proc")
async def test_kill_9_after_acknowledged_write_loses_nothing(tmp_path, model_cache, mcp_client):
    d = tmp_path / "d"
    ids = []
    with contextlib.suppress(Exception):
        async with memvault_client(d, model_cache) as c:
            for text in ("The release train leaves every second Thursday",
                         "发布列车每隔一周的星期四出发", "Hotfixes skip the release train"):
                ids.append((await call(c, "remember", content=text, kind="procedure"))["id"])
            pids = server_pids(d)
            assert len(pids) == 1
            os.kill(pids[0], signal.SIGKILL)  # no flush, no close
    assert len(ids) == 3
    assert server_pids(d) == []
    async with mcp_client(d) as c:  # the next start (in-process: what it reads is on disk)
        got = await call(c, "recall", query="release train schedule", k=5)
        assert set(ids) <= {m["id"] for m in got["memories"]}


async def test_lost_index_is_rebuilt_from_sqlite(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        a = await call(c, "remember", content="The mobile app talks to the backend over gRPC", kind="fact")
    shutil.rmtree(d / "vectors")
    async with mcp_client(d) as c:
        got = await call(c, "recall", query="how does the mobile app reach the backend?", k=3)
        assert got["memories"][0]["id"] == a["id"]


async def test_second_process_on_same_store_gets_clear_message(tmp_path, model_cache, shared_embedder):
    d = tmp_path / "d"
    owner_ready, release, owner_gone = anyio.Event(), anyio.Event(), anyio.Event()

    async def owner() -> None:
        async with memvault_client(d, model_cache) as first:
            await call(first, "remember", content="The first server owns this store", kind="fact")
            owner_ready.set()
            await release.wait()
            got = await call(first, "recall", query="who owns the store")  # unharmed by the other one
            assert [m["content"] for m in got["memories"]] == ["The first server owns this store"]
        owner_gone.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(owner)
        await owner_ready.wait()
        async with memvault_client(d, model_cache) as waiting:
            err = await call_error(waiting, "recall", query="who owns the store")
            assert f"The vector store in {d / 'vectors'}" in err and "open in another process" in err, err
            assert "MEMVAULT_DATA_DIR" in err  # and what to do about it
            release.set()
            await owner_gone.wait()
            # once the owner exits, the refused server recovers without a restart
            got = await call(waiting, "recall", query="who owns the store")
            assert got["memories"][0]["content"] == "The first server owns this store"


async def test_reindex_command_rebuilds_the_index(tmp_path, model_cache, mcp_client):
    d = tmp_path / "d"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kiln.md").write_text("# Kilns\n\nA stoneware glaze matures at cone 10 in a reduction kiln.\n")
    async with mcp_client(d, roots=[docs.as_uri()]) as c:
        mid = (await call(c, "remember", content="Nightly builds are published to the internal registry",
                          kind="fact"))["id"]
        assert (await call(c, "index_docs", paths=["."]))["chunks_total"] == 1
    (docs / "kiln.md").unlink()  # documents are re-embedded from the chunk text SQLite keeps
    out = await anyio.run_process([MEMVAULT, "reindex"], env=server_env(d, model_cache), check=False)
    assert out.returncode == 0, out.stderr.decode()
    assert "re-embedded 1 memories and 1 document chunks" in out.stdout.decode()
    async with mcp_client(d, roots=[docs.as_uri()]) as c:
        got = await call(c, "recall", query="where do nightly builds go?")
        assert got["memories"][0]["id"] == mid
        got = await call(c, "search_docs", query="stoneware glaze cone 10")
        assert [r["path"] for r in got["results"]] == ["kiln.md"]
