"""Shared fixtures: real ``memvault serve`` processes driven by the MCP SDK's stdio client.

The converted embedding model is cached once per test session (``model_cache``) and
shared by every server through ``MEMVAULT_MODEL_CACHE_DIR``; each test gets its own
data dir (real SQLite file, real Qdrant Edge shard).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ListRootsResult, Root

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One converted model folder for the whole test session."""
    return tmp_path_factory.mktemp("models")


def server_env(data_dir: Path, model_cache: Path, **settings: Any) -> dict[str, str]:
    """Environment for a spawned server: only what it needs, plus MEMVAULT_* settings."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update({
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
        "ORT_DISABLE_TELEMETRY": "1",
        "HF_HUB_OFFLINE": "1",
    })
    for k, v in settings.items():
        env[f"MEMVAULT_{k.upper()}"] = str(v)
    return env


@asynccontextmanager
async def memvault_client(data_dir: Path, model_cache: Path, *, roots: list[str] | None = None,
                          **settings: Any) -> AsyncIterator[Client]:
    """A connected MCP client session on a fresh ``memvault serve`` process.

    ``roots``: file URIs the client offers as MCP roots (None = no roots capability).
    ``settings``: extra MEMVAULT_* values (user_id="bob", clock_offset_s=86400, ...).
    """
    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--log-level", "WARNING"],
                                   env=server_env(data_dir, model_cache, **settings))
    kwargs: dict[str, Any] = {"read_timeout_seconds": 180}
    if roots is not None:
        async def list_roots(_ctx) -> ListRootsResult:
            return ListRootsResult(roots=[Root(uri=r) for r in roots])
        kwargs["list_roots_callback"] = list_roots
    async with Client(params, **kwargs) as client:
        yield client


def db_rows(data_dir: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of a read-only query on a server's SQLite file (the truth the tests check)."""
    con = sqlite3.connect(data_dir / "memvault.db")
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool; return its structured result; fail the test on a tool error."""
    res = await client.call_tool(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert not res.is_error, f"{tool} failed: {text}"
    assert res.structured_content is not None, f"{tool} returned no structured content: {text}"
    return res.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return the error text the model would read."""
    res = await client.call_tool(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert res.is_error, f"{tool} should have failed, got {json.dumps(res.structured_content)[:300]}"
    return text
