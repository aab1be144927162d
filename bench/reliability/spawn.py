"""Starting, finding and killing ``memvault serve`` processes of one data dir (Linux /proc).

The reliability runs drive real processes as a client would: the MCP SDK's stdio
client (``sdk_client``) spawns ``memvault serve``, which in the default owner mode is a
forwarder that relays to the data dir's one owner process (``memvault serve --owner``,
detached, pid in ``owner.json``); with ``--no-owner`` the spawned process serves alone.
``store_processes`` finds every one of them for a data dir, whoever started it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
_BASE_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH")  # PYTHONPATH: the servers run the code the bench runs
#: The SDK client's connect mode: the initialize handshake, as bench.speed and bench.owner use.
CONNECT_MODE = "legacy"


def server_env(data_dir: Path, model_cache: Path, *, user: str = "local", owner: bool = True,
               owner_idle_s: float = 30.0, **settings: Any) -> dict[str, str]:
    """Environment of a spawned ``memvault serve``: the base variables plus MEMVAULT_* settings.

    ``owner``: MEMVAULT_OWNER (forward to the shared owner, or serve alone);
    ``settings``: further MEMVAULT_<NAME> values (``capacity_per_scope=500`` -> MEMVAULT_CAPACITY_PER_SCOPE).
    """
    env = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
    env.update({k: os.environ[k] for k in ("MEMVAULT_EMBEDDING_MODEL", "MEMVAULT_MODEL_PATH") if k in os.environ})
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "MEMVAULT_USER_ID": user, "MEMVAULT_OWNER": "true" if owner else "false",
                "MEMVAULT_OWNER_IDLE_S": f"{owner_idle_s:g}", "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"})
    env.update({f"MEMVAULT_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def sdk_client(env: dict[str, str], *, cwd: Path, no_owner: bool = False, roots: Sequence[Path] | None = None,
               client_name: str = "memvault-reliability", timeout_s: float = 300.0) -> Any:
    """The MCP SDK's stdio client of ``memvault serve`` (not entered: ``async with`` spawns and connects).

    ``cwd``: the folder the server starts in (outside any git work tree for the global
    scope); ``roots``: folders offered as the client's MCP roots (None: no roots capability).
    """
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    args = ["serve", *(["--no-owner"] if no_owner else []), "--log-level", "WARNING"]
    params = StdioServerParameters(command=MEMVAULT, args=args, env=env, cwd=str(cwd))
    kwargs: dict[str, Any] = {"read_timeout_seconds": timeout_s, "mode": CONNECT_MODE,
                              "client_info": Implementation(name=client_name, version="0")}
    if roots is not None:
        kwargs["list_roots_callback"] = _roots_callback(roots)
    return Client(params, **kwargs)


def _roots_callback(roots: Sequence[Path]) -> Any:
    from mcp_types import ListRootsResult, Root

    uris = [p.resolve().as_uri() for p in roots]

    async def list_roots(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=u) for u in uris])

    return list_roots


def http_client(url: str, token: str, *, roots: Sequence[Path] | None = None, client_name: str = "memvault-reliability",
                timeout_s: float = 300.0) -> Any:
    """The MCP SDK's streamable-HTTP client of ``memvault serve --http`` at ``url``, sending
    ``Authorization: Bearer <token>`` (not entered: ``async with`` connects)."""
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s)
    kwargs: dict[str, Any] = {"read_timeout_seconds": timeout_s, "client_info": Implementation(name=client_name,
                                                                                               version="0")}
    if roots is not None:
        kwargs["list_roots_callback"] = _roots_callback(roots)
    return Client(streamable_http_client(url, http_client=http), **kwargs)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_port(port: int, timeout_s: float = 120.0) -> None:
    """Wait until 127.0.0.1:``port`` accepts a connection; raises TimeoutError after ``timeout_s``."""
    with anyio.fail_after(timeout_s):
        while True:
            try:
                s = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.1)
                continue
            await s.aclose()
            return


def result_text(res: Any) -> str:
    """The text blocks of a tool result / prompt / resource, joined."""
    parts = []
    for c in getattr(res, "content", None) or getattr(res, "contents", None) or []:
        parts.append(getattr(c, "text", "") or "")
    for m in getattr(res, "messages", None) or []:
        parts.append(getattr(m.content, "text", "") or "")
    return " ".join(parts)


# ---------------------------------------------------------------------------- /proc


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def running(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    stat = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace")
    return bool(stat) and stat.rsplit(")", 1)[1].split()[0] != "Z"


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of ``pid`` in clock ticks (0 when it is gone)."""
    stat = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace")
    if not stat:
        return 0
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cmdline(pid: int) -> list[str]:
    """The command line of ``pid`` (empty when it is gone)."""
    return [a.decode(errors="replace") for a in _read(Path(f"/proc/{pid}/cmdline")).split(b"\0") if a]


def store_processes(data_dir: Path) -> dict[int, str]:
    """Live ``memvault serve`` processes of ``data_dir``: pid -> ``"owner"``, ``"direct"`` or ``"forwarder"``.

    A process belongs to the data dir when its environment says MEMVAULT_DATA_DIR=<dir>
    or its command line has ``--data-dir <dir>`` (the owner a forwarder starts).
    """
    want = str(data_dir)
    env_needle = f"MEMVAULT_DATA_DIR={want}".encode()
    out: dict[int, str] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or not running(int(p.name)):
            continue
        args = cmdline(int(p.name))
        if "serve" not in args or not any("memvault" in a for a in args):
            continue
        by_arg = "--data-dir" in args and args.index("--data-dir") + 1 < len(args) and \
            args[args.index("--data-dir") + 1] == want
        if not by_arg and env_needle not in _read(p / "environ").split(b"\0"):
            continue
        out[int(p.name)] = "owner" if "--owner" in args else "direct" if "--no-owner" in args else "forwarder"
    return out


def owner_pid_now(data_dir: Path) -> int | None:
    """The pid in ``owner.json`` if that process runs ``serve --owner`` now, else None."""
    from memvault.process.owner_files import owner_files

    try:
        pid = int(json.loads(owner_files(data_dir).info.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None
    return pid if running(pid) and "--owner" in cmdline(pid) else None


async def wait_owner(data_dir: Path, timeout_s: float = 60.0) -> int:
    """The running owner's pid, waiting up to ``timeout_s``; raises RuntimeError naming the owner's log."""
    from memvault.process.owner_files import owner_files

    with anyio.move_on_after(timeout_s):
        while (pid := owner_pid_now(data_dir)) is None:  # noqa: ASYNC110 -- polls /proc, nothing to await
            await anyio.sleep(0.05)
        return pid
    raise RuntimeError(f"no owner running for {data_dir} after {timeout_s:g} s; see {owner_files(data_dir).log}")


def kill9(pids: Sequence[int], *, freeze_first: Sequence[int] = ()) -> list[int]:
    """SIGKILL ``pids``; the ``freeze_first`` ones are SIGSTOPped before anything is killed and
    SIGKILLed last (so they cannot react to the others' death). Returns the pids signalled."""
    done = []
    for pid in freeze_first:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    for pid in [*pids, *freeze_first]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            done.append(pid)
    return done


async def wait_gone(pids: Sequence[int], timeout_s: float = 30.0) -> bool:
    """True once none of ``pids`` runs (zombies count as gone), False after ``timeout_s``."""
    with anyio.move_on_after(timeout_s):
        while any(running(p) for p in pids):  # noqa: ASYNC110 -- polls /proc, nothing to await
            await anyio.sleep(0.05)
        return True
    return False


async def stop_store(data_dir: Path, timeout_s: float = 30.0) -> dict[str, str]:
    """Stop every process of ``data_dir``: SIGTERM (the owner flushes and exits), SIGKILL after ``timeout_s``.

    Returns pid -> ``"stopped"`` or ``"killed"`` (as strings, for the JSON record).
    """
    procs = store_processes(data_dir)
    for pid in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    out = {}
    await wait_gone(list(procs), timeout_s)
    for pid in procs:
        if running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            out[str(pid)] = "killed"
        else:
            out[str(pid)] = "stopped"
    await wait_gone(list(procs), 5.0)
    return out
