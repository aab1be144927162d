"""Streamable HTTP: `memvault serve --http` as a real process, bearer tokens mapped to users.

All traffic goes to 127.0.0.1; the off-loopback case is refused before anything binds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data_dir: Path, model_cache: Path, **settings: Any) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"})
    env.update({f"MEMVAULT_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def _tokens_file(tmp_path: Path, mapping: dict[str, str], mode: int = 0o600) -> Path:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(mapping))
    path.chmod(mode)
    return path


@contextlib.contextmanager
def _serving(root: Path, model_cache: Path, user_cache: Path | None = None) -> Iterator[tuple[str, Path]]:
    """A `memvault serve --http` on 127.0.0.1 with two users' tokens, started in ``root`` and
    allowed to index ``root/docs``; yields (url, data dir); stopped after the block.
    ``user_cache``: its per-user cache (default: the test's own, ``XDG_CACHE_HOME``)."""
    import hashlib

    tokens = _tokens_file(root, {"alice-secret-token": "alice",
                                 "sha256:" + hashlib.sha256(b"bob-secret-token").hexdigest(): "bob"})
    port = _free_port()
    data = root / "d"
    (root / "docs").mkdir()
    env = _env(data, model_cache, http_tokens_file=tokens, docs_allowed_dirs=json.dumps([str(root / "docs")]))
    if user_cache is not None:
        env["XDG_CACHE_HOME"] = str(user_cache)
    proc = subprocess.Popen([MEMVAULT, "serve", "--http", "--port", str(port), "--log-level", "WARNING"],
                            env=env, cwd=root,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError as exc:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ''
                raise AssertionError(f"serve --http exited: {err}") from exc
            time.sleep(0.1)
    try:
        yield url, data
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def http_server(tmp_path: Path, model_cache: Path) -> Iterator[tuple[str, Path]]:
    """A server of its own for a test that stores or reads (``_serving`` in ``tmp_path``)."""
    with _serving(tmp_path, model_cache) as served:
        yield served


@pytest.fixture(scope="module")
def http_gate(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[tuple[str, Path]]:
    """One server shared by the tests of what it refuses before any tool runs (a token, its
    headers, the origin): they store nothing and read nothing, so one start serves them all
    instead of one start each. Its per-user cache is its own folder."""
    root = tmp_path_factory.mktemp("http-gate")
    (root / "user-cache").mkdir(mode=0o700)
    with _serving(root, model_cache, root / "user-cache") as served:
        yield served


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120)


async def _call(c: Client, tool: str, **args: Any) -> dict[str, Any]:
    res = await c.call_tool(tool, args)
    assert not res.is_error, " ".join(getattr(x, "text", "") for x in res.content)
    assert res.structured_content is not None
    return res.structured_content


async def test_two_tokens_are_two_users_who_never_see_each_other(http_server):
    url, _ = http_server
    async with _client(url, "alice-secret-token") as alice:
        stored = await _call(alice, "remember", content="Alice's team deploys on Tuesdays", force=True)
        assert stored["scope"]["user_id"] == "alice"
    async with _client(url, "bob-secret-token") as bob:  # listed in the file as sha256:<hex>
        got = await _call(bob, "recall", query="when does the team deploy")
        assert got["scope"]["user_id"] == "bob"
        assert got["memories"] == []
        await _call(bob, "remember", content="Bob's team deploys on Fridays", force=True)
    async with _client(url, "alice-secret-token") as alice:
        got = await _call(alice, "recall", query="when does the team deploy")
        assert [m["content"] for m in got["memories"]] == ["Alice's team deploys on Tuesdays"]


async def test_a_missing_or_wrong_token_gets_401_and_nothing_else(http_gate):
    url, _ = http_gate
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic YWxpY2U6eA=="}):
            r = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == "Bearer"
            assert "memvault" not in r.text and "remember" not in r.text and "alice" not in r.text


async def test_more_than_one_authorization_header_is_refused_with_400(http_gate):
    """A proxy that checks the first header and a server that reads the last would disagree on the user."""
    url, _ = http_gate
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
    accept = ("Accept", "application/json, text/event-stream")
    async with httpx2.AsyncClient(timeout=30) as http:
        for pair in (["Bearer alice-secret-token", "Bearer bob-secret-token"],
                     ["Bearer wrong", "Bearer alice-secret-token"], ["Bearer alice-secret-token"] * 2):
            r = await http.post(url, json=hello, headers=[accept, *[("Authorization", a) for a in pair]])
            assert r.status_code == 400, (pair, r.status_code)
            assert "more than one Authorization header" in r.json()["error"]
            assert "alice" not in r.text and "memvault" not in r.text
        r = await http.post(url, json=hello, headers=[accept, ("Authorization", "Bearer alice-secret-token")])
        assert r.status_code == 200 and "memvault" in r.text, (r.status_code, r.text)


async def test_documents_indexed_over_http_belong_to_the_user_who_indexed_them(http_server, tmp_path, model_cache):
    """Global documents indexed by alice over HTTP are found by alice alone (path included); a
    collection indexed on the server's machine (`memvault index`) is shared by every user."""
    url, data = http_server
    own = tmp_path / "docs" / "alice"
    own.mkdir()
    (own / "review.md").write_text("# Review\n\nAlice's salary review with her manager is on 3 March.\n")
    shared = tmp_path / "docs" / "handbook"
    shared.mkdir()
    (shared / "wifi.md").write_text("# Office\n\nThe office wifi network is called kiln-guest.\n")
    review, wifi = "when is the salary review", "what is the office wifi network called"
    async with _client(url, "alice-secret-token") as alice:
        done = await _call(alice, "index_docs", paths=[str(own)], project="")
        assert done["added"] == 1 and done["scope"]["project"] == ""
        found = await _call(alice, "search_docs", query=review, project="")
        # cited from the server's folder (its project folder), not as an absolute path
        assert [r["path"] for r in found["results"]][:1] == ["docs/alice/review.md"]
        assert found["results"][0]["project"] == ""
    cli = await anyio.run_process([MEMVAULT, "index", str(shared), "--project", ""], check=False, cwd=tmp_path,
                                  env=_env(data, model_cache))
    assert cli.returncode == 0, cli.stderr.decode()
    async with _client(url, "bob-secret-token") as bob:
        theirs = await _call(bob, "search_docs", query=review, project="")
        assert not any("review" in r["path"] or "salary" in r["text"] for r in theirs["results"]), theirs
        assert str(own) not in json.dumps(theirs)
        everyone = await _call(bob, "search_docs", query=wifi, project="")
        assert [r["path"] for r in everyone["results"]][:1] == ["docs/handbook/wifi.md"], everyone
    async with _client(url, "alice-secret-token") as alice:
        assert [r["path"] for r in (await _call(alice, "search_docs", query=wifi, project=""))["results"]][:1] == \
            ["docs/handbook/wifi.md"]


async def test_a_foreign_origin_is_refused(http_gate):
    url, _ = http_gate
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        r = await http.post(url, json=body, headers={"Authorization": "Bearer alice-secret-token",
                                                      "Origin": "http://evil.example",
                                                      "Accept": "application/json, text/event-stream"})
    assert r.status_code in (400, 403), r.status_code
    assert "remember" not in r.text


def test_off_loopback_without_tokens_refuses_to_start(tmp_path, model_cache):
    proc = subprocess.run([MEMVAULT, "serve", "--http", "--host", "0.0.0.0", "--port", str(_free_port())],
                          env=_env(tmp_path / "d", model_cache), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "refusing to serve HTTP on 0.0.0.0 without tokens" in proc.stderr
    assert "MEMVAULT_HTTP_TOKENS_FILE" in proc.stderr


def test_a_tokens_file_others_can_read_is_refused(tmp_path, model_cache):
    tokens = _tokens_file(tmp_path, {"t": "alice"}, mode=0o644)
    proc = subprocess.run([MEMVAULT, "serve", "--http", "--port", str(_free_port())],
                          env=_env(tmp_path / "d", model_cache, http_tokens_file=tokens),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"chmod 600 {tokens}" in proc.stderr


async def test_stdio_clients_join_the_http_server_as_their_owner(http_server, model_cache):
    url, data = http_server
    from mcp.client.stdio import StdioServerParameters

    async with _client(url, "alice-secret-token") as alice:
        await _call(alice, "remember", content="The HTTP server and stdio clients share one store", force=True,
                    project="")
    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--log-level", "WARNING"],
                                   env=_env(data, model_cache, user_id="alice"))
    with anyio.fail_after(120):
        async with Client(params, read_timeout_seconds=120) as c:
            got = await _call(c, "recall", query="do the HTTP server and stdio clients share a store", project="")
    assert got["memories"][0]["content"] == "The HTTP server and stdio clients share one store"
