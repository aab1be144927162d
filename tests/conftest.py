"""Shared fixtures: the real memvault server driven by the MCP SDK's client.

Most server tests talk to an in-process server (``mcp_client``): the real
``build_server`` with its real tools, SQLite file and Qdrant Edge shard, reached through
the SDK's in-memory client, with the embedding model loaded once for the whole session
(``shared_embedder``). A real ``memvault serve`` process (``memvault_client``) is kept for
the tests where the process itself is the point (kill -9, two processes on one store,
stdio, the CLI); they are marked ``slow``.

Every test that needs the embedding model (it asks for ``model_cache``, directly or
through another fixture) is marked ``slow`` at collection, so ``pytest -m "not slow"``
runs the pure and unit tests only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memvault.config import Settings

# The MCP SDK, the server and the model are imported where they are used, so that the
# unit-test run (-m "not slow") does not spend seconds importing them.
if TYPE_CHECKING:
    from mcp.client.client import Client
    from mcp.client.session import ListRootsFnT

    from memvault.embedding.embedder import Embedder

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
CLIENT_NAME = "memvault-tests"
"""The name the in-process test client reports (a memory's default ``source``)."""

# Settings of the test process itself, not of memvault: kept when MEMVAULT_* is cleared.
_TEST_KNOBS = {"MEMVAULT_REFERENCE_TOKENIZER", "MEMVAULT_CONFORMANCE_BIN"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "model_in_user_cache: the test's per-user cache holds the session's converted model, so the "
        "memvault commands it runs find it ready instead of converting it again (tests about the conversion "
        "itself go without)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that needs the embedding model (it uses ``model_cache``, or its
    per-user cache holds the converted model)."""
    for item in items:
        if "model_cache" in getattr(item, "fixturenames", ()) or item.get_closest_marker("model_in_user_cache"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def _no_memvault_env() -> Iterator[None]:
    """``Settings()`` reads MEMVAULT_* variables: the developer's own configuration (a data
    dir, a Qdrant URL, ...) must not reach the tests. Cleared for the whole session."""
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("MEMVAULT_") and name not in _TEST_KNOBS:
                mp.delenv(name)
        yield


@pytest.fixture(autouse=True)
def _own_user_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has its own per-user cache (``XDG_CACHE_HOME``, passed on to the processes it
    starts): a test that names no model cache converts into it, never into the developer's.

    A test marked ``model_in_user_cache`` finds the session's converted model there (its
    ``memvault/models`` is a link to ``model_cache``): the commands it runs prepare the model
    first, which would otherwise be a conversion (seconds of CPU) per test."""
    home = tmp_path_factory.mktemp("user-cache")
    if request.node.get_closest_marker("model_in_user_cache"):
        request.getfixturevalue("shared_embedder")  # converted into model_cache, tokenizer included
        (home / "memvault").mkdir(mode=0o700)
        (home / "memvault" / "models").symlink_to(request.getfixturevalue("model_cache"), target_is_directory=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One converted model folder for the whole test session, shared by pytest-xdist's workers
    (the conversion runs once, under its own file lock; a second worker waits for it)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "models"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def shared_embedder(model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The embedding model, loaded once for the session (converted into ``model_cache`` the
    first time); every in-process server of the session uses this one instance."""
    from memvault.service.runtime import default_embedder

    data_dir = tmp_path_factory.mktemp("embedder-data")
    return default_embedder(Settings(data_dir=data_dir, model_cache_dir=model_cache))


@pytest.fixture(scope="session")
def memo_model(shared_embedder: Embedder) -> Embedder:
    """The session's model remembering what it embedded (``tests.memo``): a text embedded
    once in the worker is not run through the model again; its vector is the one the model
    gave it then. The in-process servers (``mcp_client``) and the benchmark floors use it:
    many tests store and ask the same texts, and a floor ranks a set with positions of the
    texts it stored. Tests of the embedder itself, and tests whose assertions depend on how
    long a model run takes (the indexing stages that overlap it), use ``shared_embedder``."""
    from tests.memo import memo_embedder

    return memo_embedder(shared_embedder)


def roots_callback(roots: list[str]) -> ListRootsFnT:
    """A client's ``roots/list`` answer offering ``roots`` (file URIs)."""
    from mcp_types import ListRootsResult, Root

    async def list_roots(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=r) for r in roots])
    return list_roots


@asynccontextmanager
async def inproc_client(data_dir: Path, embedder: Embedder, model_cache: Path, *, roots: list[str] | None = None,
                        client_name: str = CLIENT_NAME, mode: str = "auto", cwd: Path = Path("/"),
                        clock_offset_s: float = 0.0, **settings: Any) -> AsyncIterator[Client]:
    """A connected MCP client on a fresh in-process memvault server for ``data_dir``.

    The server is the real one (``build_server``: tools, SQLite, Qdrant Edge, start-up
    housekeeping) with ``embedder`` as its model; it runs until the block exits, then
    closes its stores, so a later client on the same ``data_dir`` is a restart.
    ``roots``: file URIs the client offers as MCP roots (None = no roots capability).
    ``client_name``: the name the client reports. ``mode``: the SDK's connect mode
    ("auto" = the 2026-07-28 protocol, "legacy" = the initialize handshake).
    ``clock_offset_s``: seconds the server's clock is ahead of the system's (a test moves
    time with it: ``Clock(clock_offset_s)``). ``settings``: Settings fields (user_id="bob",
    ...). The server counts as started in ``cwd``, by default ``/`` (where Claude Desktop starts its servers:
    no project folder), so a client without roots writes to the settings' project or the
    global scope.
    """
    from mcp.client.client import Client
    from mcp_types import Implementation

    from memvault.clock import Clock
    from memvault.mcp.app import build_server

    server = build_server(Settings(data_dir=data_dir, model_cache_dir=model_cache, **settings),
                          load_embedder=lambda _settings: embedder, cwd=cwd, clock=Clock(clock_offset_s))
    kwargs: dict[str, Any] = {"client_info": Implementation(name=client_name, version="0"), "mode": mode}
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    async with Client(server, **kwargs) as client:
        yield client


McpClient = Callable[..., "AbstractAsyncContextManager[Client]"]
"""``mcp_client(data_dir=None, *, roots=None, client_name=CLIENT_NAME, mode="auto", clock_offset_s=0, **settings)``."""


@pytest.fixture
def mcp_client(tmp_path: Path, memo_model: Embedder, model_cache: Path) -> McpClient:
    """Opens in-process clients (``inproc_client``) with the session's model (``memo_model``:
    a text the worker embedded before gets the vector the model gave it then).

    ``async with mcp_client(data_dir, roots=[...], user_id="bob") as c:``; ``data_dir``
    defaults to ``tmp_path / "d"``. Call it again on the same data dir for a restart.
    """
    def connect(data_dir: Path | None = None, **kwargs: Any) -> AbstractAsyncContextManager[Client]:
        return inproc_client(data_dir or tmp_path / "d", memo_model, model_cache, **kwargs)
    return connect


@pytest.fixture(scope="session")
def standin() -> Embedder:
    """The deterministic stand-in embedder (``tests.standin``), one per session: only for
    tests whose assertions cannot depend on similarity. Needs no model (not ``slow``)."""
    from tests.standin import standin_embedder

    return standin_embedder()


@pytest.fixture
def standin_client(tmp_path: Path, standin: Embedder) -> McpClient:
    """As ``mcp_client``, with the stand-in embedder instead of the model: for tests whose
    assertions cannot depend on similarity (listings, refused arguments, access rules,
    history and restore, tasks, transfer). Every tool keeps end-to-end tests on the real
    model through ``mcp_client``."""
    def connect(data_dir: Path | None = None, **kwargs: Any) -> AbstractAsyncContextManager[Client]:
        return inproc_client(data_dir or tmp_path / "d", standin, tmp_path / "no-models", **kwargs)
    return connect


def server_env(data_dir: Path, model_cache: Path, **settings: Any) -> dict[str, str]:
    """Environment for a spawned server: only what it needs, plus MEMVAULT_* settings.

    Single-process mode (``MEMVAULT_OWNER=false``) unless ``owner=True`` is given: these
    processes are tested for themselves (kill -9, the store lock, the CLI); the owner and
    its forwarders have their own tests.
    """
    # PYTHONPATH: a spawned server runs the code under test (a worktree), not the installed one.
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env.update({
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
        "MEMVAULT_OWNER": "false",
        "ORT_DISABLE_TELEMETRY": "1",
        "HF_HUB_OFFLINE": "1",
    })
    for k, v in settings.items():
        env[f"MEMVAULT_{k.upper()}"] = str(v)
    return env


@asynccontextmanager
async def memvault_client(data_dir: Path, model_cache: Path, *, roots: list[str] | None = None,
                          client_name: str = CLIENT_NAME, mode: str = "auto", **settings: Any
                          ) -> AsyncIterator[Client]:
    """A connected MCP client session on a fresh ``memvault serve`` process (stdio).

    For tests of the process itself; tests of the tools use ``mcp_client``. The process
    loads the model from ``model_cache`` (ask for ``shared_embedder`` first so it is
    converted once). ``roots``, ``client_name``, ``mode``: as ``inproc_client``.
    ``settings``: extra MEMVAULT_* values (user_id="bob", capacity_per_scope=500, ...).
    """
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--log-level", "WARNING"],
                                   env=server_env(data_dir, model_cache, **settings), cwd="/")
    kwargs: dict[str, Any] = {"read_timeout_seconds": 180, "mode": mode,
                              "client_info": Implementation(name=client_name, version="0")}
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    async with Client(params, **kwargs) as client:
        yield client


def stored_bytes(path: Path) -> bytes:
    """A file's bytes without its trailing NULs, for tests that search a data dir for text
    that must not be there. The vector index preallocates its files (32 MB each, nearly
    all NUL); a searched string never ends in NUL, so it occurs in what is left exactly
    where it occurs in the whole file, and a search reads a few hundred kB instead of
    hundreds of MB (one search per string: seconds per test)."""
    return path.read_bytes().rstrip(b"\0")


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


async def recall_orders(client: Client, store: Sequence[str], questions: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``remember`` each of ``store`` in the global scope (force), then ``recall`` each question
    with k = the store's size: (the ids in store order, question -> recalled ids best first)."""
    ids = [(await call(client, "remember", content=m, project="", force=True))["id"] for m in store]
    orders = {}
    for q in questions:
        got = await call(client, "recall", query=q, k=len(store))
        orders[q] = [m["id"] for m in got["memories"]]
    return ids, orders


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return the error text the model would read."""
    res = await client.call_tool(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert res.is_error, f"{tool} should have failed, got {json.dumps(res.structured_content)[:300]}"
    return text


def owner_pid(data_dir: Path) -> int | None:
    """The pid in the data dir's owner status file (``owner.json``), or None when there is none."""
    from memvault.process.owner_files import owner_files

    try:
        return int(json.loads(owner_files(data_dir).info.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return False
    return True


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh data dir path (not created) for process tests; kills an owner left behind in it."""
    d = tmp_path / "d"
    yield d
    pid = owner_pid(d)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGKILL)
