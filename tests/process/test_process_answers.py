"""A real `memvault serve` answers every request, starts on bad configuration, and stops on a signal.

Raw JSON-RPC lines go to the process's stdin, in owner mode (a forwarder relaying to the
data dir's owner process) and with --no-owner, because what is tested here is the wire
and the process: lines the MCP library cannot parse (a lone surrogate as a JSON escape,
nesting past its limit, not JSON at all), invalid settings, an unusable data dir, a file
that is not SQLite, SIGINT and SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from memvault.process.owner_files import owner_files
from tests.conftest import MEMVAULT, alive, owner_pid
from tests.process.test_owner import _env as owner_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or sys.platform == "win32",
                                 reason="owner mode and signals as on Linux and macOS")]

MODES = {"owner": [], "no-owner": ["--no-owner"]}
ANSWER_TIMEOUT_S = 120  # a guard against a hang (the model may load first), not a measurement
EXIT_TIMEOUT_S = 10
"""How long a process may take to exit after a signal or the end of its stdin."""

INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def _env(data_dir: Path, model_cache: Path, **settings: Any) -> dict[str, str]:
    """test_owner's environment for a `memvault serve`, with a 2 s owner idle time."""
    return owner_env(data_dir, model_cache, **{"owner_idle_s": 2, **settings})


class RawClient:
    """Writes raw lines to a `memvault serve` process and collects its answers by id."""

    def __init__(self, proc: Process) -> None:
        self.proc = proc
        self.answers: dict[Any, dict[str, Any]] = {}
        self.arrived = anyio.Event()
        self.stderr = bytearray()
        self.ended = False
        self._next = 1000

    async def read_stdout(self) -> None:
        assert self.proc.stdout is not None
        buf = b""
        async for chunk in self.proc.stdout:
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                self.answers[msg.get("id")] = msg
                self.arrived.set()
                self.arrived = anyio.Event()
        self.ended = True
        self.arrived.set()

    async def read_stderr(self) -> None:
        assert self.proc.stderr is not None
        async for chunk in self.proc.stderr:
            self.stderr += chunk

    async def send(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send((line.encode() if isinstance(line, str) else line) + b"\n")

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        with anyio.fail_after(ANSWER_TIMEOUT_S):
            while msg_id not in self.answers:
                assert not self.ended, f"the server closed its stdout without answering {msg_id!r}: {self.stderr[-2000:]!r}"
                await self.arrived.wait()
        return self.answers.pop(msg_id)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(json.dumps(msg))
        return await self.answer(self._next)

    async def initialize(self) -> dict[str, Any]:
        got = await self.request("initialize", INITIALIZE)
        await self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return got

    async def close_stdin_and_wait(self) -> int:
        assert self.proc.stdin is not None
        await self.proc.stdin.aclose()
        with anyio.fail_after(EXIT_TIMEOUT_S):
            return await self.proc.wait()


@asynccontextmanager
async def raw_server(data_dir: Path, model_cache: Path, mode: str, **settings: Any) -> AsyncIterator[RawClient]:
    """A `memvault serve` process in ``mode`` ("owner" or "no-owner"); killed if the test leaves it running."""
    proc = await anyio.open_process([MEMVAULT, "serve", "--log-level", "INFO", *MODES[mode]],
                                    env=_env(data_dir, model_cache, **settings), cwd=data_dir.parent)
    client = RawClient(proc)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read_stdout)
            tg.start_soon(client.read_stderr)
            yield client
            tg.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
            with anyio.CancelScope(shield=True):
                await proc.wait()
        pid = owner_pid(data_dir)
        if pid is not None and alive(pid):  # never leave an owner behind
            os.kill(pid, signal.SIGKILL)


def _text(answer: dict[str, Any]) -> str:
    if "error" in answer:
        return str(answer["error"]["message"])
    return " ".join(c.get("text", "") for c in answer["result"].get("content", []))


def _raw_call(msg_id: int, name: str, arguments_json: str) -> str:
    return (f'{{"jsonrpc":"2.0","id":{msg_id},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments_json}}}}}')


# --------------------------------------------------------------------------- every request is answered

@pytest.mark.parametrize("mode", MODES)
async def test_every_request_is_answered(tmp_path, model_cache, shared_embedder, mode):
    """Lines the MCP library cannot read get a JSON-RPC error with their id and the reason, then
    the server goes on answering (every tool's string arguments, a prompt, a resource)."""
    async with raw_server(tmp_path / "d", model_cache, mode) as c:
        early = await c.request("tools/list")  # before initialize: the SDK said only "Invalid request parameters"
        assert "send initialize" in early["error"]["message"], early
        assert "result" in await c.initialize()
        tools = (await c.request("tools/list"))["result"]["tools"]
        # params of the wrong shape name the field
        for params, said in (({"arguments": {}}, "params.name: Field required"),
                             ({"name": "recall", "arguments": [1]}, "params.arguments: Input should be a valid")):
            got = await c.request("tools/call", params)
            assert got["error"]["code"] == -32602 and said in got["error"]["message"], got
        msg_id = 1
        swept = 0
        for tool in tools:
            props = tool["inputSchema"].get("properties", {})
            strings = [p for p, s in props.items()  # "string", or ["string", "null"] for an optional one
                       if "string" in (s.get("type") if isinstance(s.get("type"), list) else [s.get("type")])]
            for prop in strings:
                msg_id += 1
                await c.send(_raw_call(msg_id, tool["name"], f'{{"{prop}":"abc\\ud800def"}}'))
                got = await c.answer(msg_id)
                assert got["error"]["code"] == -32602, got
                assert f"params.arguments.{prop}" in got["error"]["message"], got
                assert "lone UTF-16 surrogate" in got["error"]["message"], got
                swept += 1
        assert swept >= 15
        # a prompt and a resource, the same way
        await c.send('{"jsonrpc":"2.0","id":"p1","method":"prompts/get","params":{"name":"recall_context",'
                     '"arguments":{"topic":"\\udfff"}}}')
        assert "not valid Unicode" in (await c.answer("p1"))["error"]["message"]
        await c.send('{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"memvault://tasks/\\ud800"}}')
        assert "not valid Unicode" in (await c.answer("r1"))["error"]["message"]
        # nesting past the library's limit, and past the standard library's too
        for depth, msg_id in ((250, 501), (5000, 502)):
            await c.send(_raw_call(msg_id, "recall", '{"query":"x","tags":' + "[" * depth + "]" * depth + "}"))
            got = await c.answer(msg_id)
            assert got["error"]["code"] in (-32602, -32700), got
            assert "levels" in got["error"]["message"] and "flatter" in got["error"]["message"], got
        # not JSON at all: the id is still found (a line with no id to answer is only logged)
        await c.send('{"jsonrpc":"2.0","id":503,"method":"tools/list",,}')
        got = await c.answer(503)
        assert got["error"]["code"] == -32700 and "not valid JSON" in got["error"]["message"], got
        await c.send("this is not json")
        # the wrong shape: method not a string, params not an object, a batch, an empty method
        await c.send('{"jsonrpc":"2.0","id":504,"method":7}')
        assert "not a JSON-RPC 2.0 request" in (await c.answer(504))["error"]["message"]
        await c.send('{"jsonrpc":"2.0","id":505,"method":"tools/list","params":[1]}')
        assert "not a JSON-RPC 2.0 request" in (await c.answer(505))["error"]["message"]
        await c.send('[{"jsonrpc":"2.0","id":506,"method":"tools/list"},{"jsonrpc":"2.0","id":507,"method":"ping"}]')
        assert "batches" in (await c.answer(506))["error"]["message"]
        assert "batches" in (await c.answer(507))["error"]["message"]
        await c.send('{"jsonrpc":"2.0","id":508,"method":"","params":{}}')
        assert "error" in await c.answer(508)
        # a notification that cannot be read is not answered, and nothing else broke
        await c.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\\ud800"}}')
        got = await c.request("tools/call", {"name": "recall", "arguments": {"query": "anything"}})
        assert "result" in got and not got["result"].get("isError"), got
        assert set(c.answers) == set(), f"unexpected answers: {c.answers}"
        assert await c.close_stdin_and_wait() == 0


async def test_every_request_is_answered_over_http(tmp_path, model_cache, shared_embedder):
    """Over streamable HTTP the SDK answers what it cannot parse itself (HTTP 400 and a JSON-RPC
    error, the request not left open); the server goes on answering, and SIGTERM stops it cleanly."""
    import httpx2

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    d = tmp_path / "d"
    proc = await anyio.open_process([MEMVAULT, "serve", "--http", "--port", str(port), "--log-level", "WARNING"],
                                    env=_env(d, model_cache), cwd=tmp_path)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        async with httpx2.AsyncClient(timeout=ANSWER_TIMEOUT_S) as http:
            with anyio.fail_after(ANSWER_TIMEOUT_S):
                while True:
                    try:
                        got = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1,
                                                                          "method": "initialize",
                                                                          "params": INITIALIZE})
                        break
                    except httpx2.ConnectError:
                        await anyio.sleep(0.2)
            assert got.status_code == 200
            headers |= {"mcp-session-id": got.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
            await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for body in (_raw_call(2, "recall", '{"query":"abc\\ud800"}'),
                         _raw_call(3, "recall", '{"query":"x","tags":' + "[" * 300 + "]" * 300 + "}")):
                got = await http.post(url, headers=headers, content=body.encode())
                assert got.status_code == 400, got.text
                assert got.json()["error"]["code"] == -32700, got.text
            got = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
            assert got.status_code == 200 and "remember" in got.text
    finally:
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(EXIT_TIMEOUT_S):
            code = await proc.wait()
    assert code == 0
    assert proc.stderr is not None
    err = b"".join([chunk async for chunk in proc.stderr]).decode()
    assert "Traceback" not in err, err  # nor at shutdown


# --------------------------------------------------------------------------- bad configuration

BAD_SETTINGS = [
    ({"capacity_per_scope": "abc"}, ["MEMVAULT_CAPACITY_PER_SCOPE='abc'", "valid integer"]),
    ({"docs_max_file_bytes": "-3"}, ["MEMVAULT_DOCS_MAX_FILE_BYTES='-3'", "greater than or equal to 1"]),
    ({"user_id": ""}, ["MEMVAULT_USER_ID=''", "at least 1 character"]),
    ({"docs_allowed_dirs": "[not json"}, ["MEMVAULT_DOCS_ALLOWED_DIRS", "must be JSON"]),
]


# Every case through an owner (the default); the first also with --no-owner (the same
# unavailable server, served in the process itself).
BAD_SETTINGS_CASES = [pytest.param(s, said, "owner", id=f"{next(iter(s))}-owner") for s, said in BAD_SETTINGS]
BAD_SETTINGS_CASES.append(pytest.param(*BAD_SETTINGS[0], "no-owner", id=f"{next(iter(BAD_SETTINGS[0][0]))}-no-owner"))


@pytest.mark.parametrize(("settings", "said", "mode"), BAD_SETTINGS_CASES)
async def test_bad_settings_are_told_to_the_client(tmp_path, model_cache, mode, settings, said):
    """The server starts, answers initialize and tools/list, and every call, prompt and read says
    which variable is wrong, its value and what is allowed; stderr has that one line, no traceback."""
    async with raw_server(tmp_path / "d", model_cache, mode, **settings) as c:
        assert "result" in await c.initialize()
        assert {t["name"] for t in (await c.request("tools/list"))["result"]["tools"]} >= {"remember", "recall"}
        got = await c.request("tools/call", {"name": "remember", "arguments": {"content": "x"}})
        assert got["result"]["isError"] is True
        for answer in (got, await c.request("prompts/get", {"name": "recall_context", "arguments": {"topic": "x"}}),
                       await c.request("resources/read", {"uri": "memvault://profile"})):
            text = _text(answer)
            assert all(s in text for s in said), text
        assert await c.close_stdin_and_wait() == 2
    err = c.stderr.decode()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if said[0] in line and " ERROR " in line]
    assert len(lines) == 1, err  # (the SDK adds an INFO line per failed call)
    assert not (tmp_path / "d").exists()  # nothing was opened or started


def test_doctor_and_the_other_commands_name_a_bad_setting(tmp_path, model_cache):
    env = _env(tmp_path / "d", model_cache, capacity_per_scope="abc")
    doctor = subprocess.run([MEMVAULT, "doctor"], env=env, capture_output=True, text=True, timeout=120)
    assert doctor.returncode != 0
    assert "MEMVAULT_CAPACITY_PER_SCOPE='abc'" in doctor.stdout and "valid integer" in doctor.stdout, doctor.stdout
    assert "Traceback" not in doctor.stderr, doctor.stderr
    for command in (["stats"], ["reindex"], ["status"], ["stop"]):
        got = subprocess.run([MEMVAULT, *command], env=env, capture_output=True, text=True, timeout=120)
        assert got.returncode == 2, got
        assert "MEMVAULT_CAPACITY_PER_SCOPE='abc'" in got.stderr and "Traceback" not in got.stderr, got.stderr
        assert len(got.stderr.strip().splitlines()) == 1, got.stderr


# --------------------------------------------------------------------------- an unusable data dir or database

def _unwritable_dir(tmp_path: Path) -> Path:
    """A data dir that cannot be created: under a read-only folder, or for root under /sys."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        return ro / "d"
    target = Path("/sys/memvault-test-data-dir")
    try:
        target.mkdir()
    except OSError:
        return target
    target.rmdir()
    pytest.skip("no folder here that root cannot write")


@pytest.mark.parametrize(("case", "mode"), [("a file", "owner"), ("not writable", "owner"), ("not sqlite", "owner"),
                                            ("not sqlite", "no-owner")])
async def test_an_unusable_store_is_told_to_the_client(tmp_path, model_cache, shared_embedder, mode, case):
    """The server answers initialize; every call says what is wrong and what to do; it exits when
    stdin closes (in owner mode the owner that served the problem exits too)."""
    if case == "a file":
        data_dir = tmp_path / "d"
        data_dir.write_text("not a folder")
        said = [str(data_dir), "is not a folder", "MEMVAULT_DATA_DIR"]
    elif case == "not writable":
        data_dir = _unwritable_dir(tmp_path)
        said = [str(data_dir), "cannot write", "MEMVAULT_DATA_DIR"]
    else:
        data_dir = tmp_path / "d"
        data_dir.mkdir()
        (data_dir / "memvault.db").write_bytes(b"this is not an SQLite database\n" * 200)
        said = [str(data_dir / "memvault.db"), "not a readable memvault database", "mv "]
    async with raw_server(data_dir, model_cache, mode) as c:
        assert "result" in await c.initialize()
        assert (await c.request("tools/list"))["result"]["tools"]
        for name, args in (("recall", {"query": "x"}), ("remember", {"content": "x"}), ("get_profile", {})):
            got = await c.request("tools/call", {"name": name, "arguments": args})
            assert got["result"]["isError"] is True
            assert all(s in _text(got) for s in said), _text(got)
        prompt = await c.request("prompts/get", {"name": "recall_context", "arguments": {"topic": "x"}})
        assert all(s in _text(prompt) for s in said), prompt
        owner = owner_pid(data_dir) if case == "not sqlite" else None
        assert await c.close_stdin_and_wait() in (0, 1)
    assert "Traceback" not in c.stderr.decode(), c.stderr.decode()
    if mode == "owner" and owner is not None:
        with anyio.fail_after(EXIT_TIMEOUT_S):
            while alive(owner):  # noqa: ASYNC110 - another process: nothing to wait on but its pid
                await anyio.sleep(0.1)
        assert "Traceback" not in owner_files(data_dir).log.read_text()


def test_doctor_and_the_other_commands_name_an_unreadable_database(tmp_path, model_cache):
    data_dir = tmp_path / "d"
    data_dir.mkdir()
    (data_dir / "memvault.db").write_bytes(b"garbage " * 1000)
    got = subprocess.run([MEMVAULT, "doctor"], env=_env(data_dir, model_cache), capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 1
    assert "not a readable memvault database" in got.stdout and "PROBLEM" in got.stdout, got.stdout
    assert "Traceback" not in got.stderr, got.stderr
    for command in (["stats"], ["reindex"]):
        got = subprocess.run([MEMVAULT, *command], env=_env(data_dir, model_cache), capture_output=True, text=True,
                             timeout=120)
        assert got.returncode == 1, got
        assert "not a readable memvault database" in got.stderr and "Traceback" not in got.stderr, got.stderr


# --------------------------------------------------------------------------- signals

@pytest.mark.parametrize(("signum", "mode"), [(signal.SIGINT, "owner"), (signal.SIGTERM, "owner"),
                                              (signal.SIGINT, "no-owner")], ids=["SIGINT-owner", "SIGTERM-owner",
                                                                                 "SIGINT-no-owner"])
async def test_a_signal_stops_the_server(tmp_path, model_cache, shared_embedder, mode, signum):
    """The process exits soon after SIGINT or SIGTERM, although its client keeps stdin open (the
    model may still be loading: nothing waits for it)."""
    async with raw_server(tmp_path / "d", model_cache, mode) as c:
        await c.initialize()
        assert "result" in await c.request("tools/list")
        c.proc.send_signal(signum)
        with anyio.fail_after(EXIT_TIMEOUT_S):
            code = await c.proc.wait()
        assert code == 0
    assert "Traceback" not in c.stderr.decode(), c.stderr.decode()


async def test_a_signal_stops_the_owner(tmp_path, model_cache, shared_embedder):
    d = tmp_path / "d"
    async with raw_server(d, model_cache, "owner", owner_idle_s=600) as c:
        await c.initialize()
        assert "result" in await c.request("tools/list")
        pid = owner_pid(d)
        assert pid is not None
        # the client leaves first (its forwarder would start a new owner otherwise); the owner stays
        assert await c.close_stdin_and_wait() == 0
        assert alive(pid)
        os.kill(pid, signal.SIGINT)
        with anyio.fail_after(EXIT_TIMEOUT_S):
            while alive(pid):  # noqa: ASYNC110 - another process: nothing to wait on but its pid
                await anyio.sleep(0.1)
    assert not owner_files(d).socket.exists()
