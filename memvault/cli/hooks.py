"""Memory in every session: ``memvault context``, ``memvault hook ...`` and ``memvault hooks install|uninstall``.

``memvault context --cwd DIR`` prints what memvault holds for the project of ``DIR``:
preferences, open tasks with their current step, this project's and the user's global
memories, at most ``--max-tokens`` (default 2,000) estimated tokens
(``memvault.service.profile.glance``). ``memvault hook session-start`` does the same for a
Claude Code ``SessionStart`` hook (the folder comes as ``cwd`` in the JSON on stdin; what
it prints goes into the session). ``memvault hook prompt-submit`` is the opt-in
``UserPromptSubmit`` hook: an explicit request in the prompt ("remember that …", "from
now on …", "记住…", "以后…": ``memvault.policy.memory_request``) is stored with
``remember`` through the data dir's owner process, and the hook says in one line whether
it was stored, not stored, or handed over without an answer yet; it returns within
``PROMPT_BUDGET_S`` whatever the owner does (paused, busy, not running), and never hands
one request over twice (``_handed``).

These commands run on every session start (and, opted in, every prompt), so they:

* ask the data dir's running owner for the block over its socket (one line each way,
  standard library only: ``memvault.process.context_client``), and when none answers within
  ``OWNER_TIMEOUT_S``, read the store themselves, read-only (no model; SQLite in WAL mode
  lets them read beside a running owner); import neither pydantic nor the MCP SDK nor
  aiosqlite on that path; the settings they need are read from the same ``MEMVAULT_*``
  variables and flags (``HookSettings``);
* never block or fail the client: when there is no data dir, no database, or anything
  goes wrong, they print nothing on stdout and exit 0 (one line on stderr for an
  unexpected error); every wait is bounded (git 1 s per command, SQLite locks 250 ms,
  the owner ``OWNER_TIMEOUT_S``, the whole command ``CONTEXT_DEADLINE_S``);
* never print anything but stored memories, task titles and steps, and memvault's own
  sentences (no environment, no settings).

``memvault hooks install|uninstall`` writes them into a client's settings (``memvault.cli.hooks_install``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from memvault.cli.clients import memvault_executable
from memvault.cli.deadline import OutOfTime, within
from memvault.cli.hook_config import HookSettings

CONTEXT_DEADLINE_S = 3.0
"""Longest a context hook runs before it gives up silently, seconds (Claude Code waits up to its ``timeout``)."""
OWNER_TIMEOUT_S = 1.0
"""Longest a context hook waits for the owner's answer before it reads the store itself, seconds
(an owner still opening its store has not started answering)."""
PROMPT_BUDGET_S = 2.5
"""Longest the prompt hook waits for the owner to take a prompt's requests, all together, seconds
(from its start; the interpreter's own start comes before): a prompt is never held longer,
whatever the owner does (paused, busy with a long call, still starting)."""
PENDING_SHARE_S = 0.5
"""Of ``PROMPT_BUDGET_S``, what is kept for requests no owner received (seconds): the detached
process that stores them may answer in it when an owner is already up."""
PENDING_DEADLINE_S = 600.0
"""Longest ``memvault hook remember-pending`` waits for an owner to start and store, seconds."""
DEFAULT_MAX_TOKENS = 2000
MAX_STDIN_BYTES = 4 * 1024 * 1024
HOOK_CLIENT_NAME = "memvault-hook"
REMEMBER_SOURCE = "prompt hook"
"""The ``source`` of a memory stored by the prompt hook."""


def _quiet_failure(command: str, exc: BaseException) -> int:
    """One line on stderr for an unexpected failure; nothing on stdout; exit 0 (never fail the client)."""
    if isinstance(exc, OutOfTime):
        sys.stderr.write(f"memvault {command}: gave up after {CONTEXT_DEADLINE_S:g} s\n")
    elif not isinstance(exc, FileNotFoundError):  # no data dir / database yet: nothing to say
        sys.stderr.write(f"memvault {command}: {type(exc).__name__}: {str(exc)[:200]}\n")
    return 0


def _hook_input() -> dict[str, Any]:
    """The hook's JSON object on stdin; ``{}`` when stdin is a terminal, empty or not a JSON object."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return {}
        data = json.loads(sys.stdin.buffer.read(MAX_STDIN_BYTES) or b"{}")
    except (ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


# --------------------------------------------------------------------------- context
def context_block(settings: HookSettings, cwd: Path, max_tokens: int, *, ask_owner: bool = True) -> str:
    """The session block for ``cwd`` (``memvault.service.profile.glance.session_context``); ``""`` when there
    is nothing to show.

    Asked of the running owner first (``memvault.process.context_client``: its store is open,
    and this process then imports nothing more) unless ``ask_owner`` is False, else read
    here, read-only. Raises FileNotFoundError without a database, sqlite3.Error and the
    others ``session_context`` raises.
    """
    if not settings.db_path.is_file():
        raise FileNotFoundError(settings.db_path)
    if ask_owner:
        from memvault.process.context_client import context_from_owner

        text = context_from_owner(settings.data_dir, settings.user_id, cwd, settings.project, max_tokens,
                                  timeout_s=OWNER_TIMEOUT_S)
        if text is not None:
            return text
    from memvault.service.profile.glance import hook_project, session_context

    project = hook_project(cwd, settings.project)
    return session_context(settings.db_path, settings.user_id, project, time.time(), max_tokens=max_tokens)


def _print_context(args: argparse.Namespace, cwd: str | None, command: str) -> int:
    try:
        with within(CONTEXT_DEADLINE_S):
            text = context_block(HookSettings.read(args), Path(cwd or os.getcwd()), args.max_tokens,
                                 ask_owner=not getattr(args, "no_owner", False))
    except BaseException as exc:  # noqa: B036 - a hook never fails its client, not even on Ctrl-C
        return _quiet_failure(command, exc)
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    """``memvault context``: the block for ``--cwd`` on stdout, or nothing; always 0."""
    return _print_context(args, args.cwd, "context")


# --------------------------------------------------------------------------- hooks
def cmd_hook(args: argparse.Namespace) -> int:
    """``memvault hook session-start|prompt-submit``: a Claude Code hook reading its JSON on stdin; always 0."""
    if args.hook == "remember-pending":
        try:
            return cmd_remember_pending(args)
        except BaseException as exc:  # noqa: B036 - detached: nothing to fail, one line on stderr
            return _quiet_failure("hook remember-pending", exc)
    if args.hook == "session-start":
        try:
            with within(CONTEXT_DEADLINE_S):
                data = _hook_input()
        except OutOfTime as exc:
            return _quiet_failure("hook session-start", exc)
        cwd = data.get("cwd")
        return _print_context(args, cwd if isinstance(cwd, str) else None, "hook session-start")
    try:
        return _prompt_submit(args)
    except BaseException as exc:  # noqa: B036 - a hook never fails its client
        return _quiet_failure("hook prompt-submit", exc)


def _prompt_submit(args: argparse.Namespace) -> int:
    """Hand the prompt's requests to the owner and say in one line each what became of them, within
    ``PROMPT_BUDGET_S`` whatever the owner does (see ``_handed``)."""
    from memvault.policy.memory_request import find_memory_requests

    start = time.monotonic()
    with within(CONTEXT_DEADLINE_S):
        data = _hook_input()
    prompt, cwd = data.get("prompt"), data.get("cwd")
    requests = find_memory_requests(prompt) if isinstance(prompt, str) else []
    if not requests:
        return 0
    folder = Path(cwd) if isinstance(cwd, str) and cwd else Path(os.getcwd())
    lines = _handed(args, folder, [(r.content, r.kind, r.scope) for r in requests], start + PROMPT_BUDGET_S)
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0


def _handed(args: argparse.Namespace, folder: Path, requests: list[tuple[str, str, str]],
            deadline: float) -> list[str]:
    """One line per request (content, kind, scope: ``global`` stores in the user's global scope,
    ``project`` in the folder's project), by ``deadline`` (``time.monotonic()``).

    A running owner gets each request over its socket (``context_client.hand_over``): its
    answer gives the line; a request it received but did not answer in time (paused, or
    busy with a long call) is said to be handed over without an answer yet, and is never
    sent again (the owner stores it when it goes on). Requests no owner received (none
    runs, or it refused them) go to a detached ``memvault hook remember-pending`` process,
    which starts an owner if needed and stores them through an MCP session; its lines are
    shown when they come before the deadline, else the request is said to be handed over.
    """
    from memvault.process.context_client import ANSWERED, SENT, hand_over

    try:
        hs = HookSettings.read(args)
    except ValueError as exc:
        sys.stderr.write(f"memvault hook prompt-submit: {exc}\n")
        return ["memvault: could not remember that: memvault's settings are invalid (see stderr)"] * len(requests)
    hellos = [{"memvault": "remember", "user_id": hs.user_id, "cwd": str(folder), "project": hs.project,
               "content": content, "kind": kind, "scope": scope, "agent_id": HOOK_CLIENT_NAME,
               "source": REMEMBER_SOURCE}
              for content, kind, scope in requests]
    outcomes = hand_over(hs.data_dir, hellos, deadline - PENDING_SHARE_S)
    lines: list[str | None] = [None] * len(requests)
    pending = []
    for i, ((content, kind, _), (state, reply)) in enumerate(zip(requests, outcomes, strict=True)):
        if state == ANSWERED and reply is not None and isinstance(reply.get("status"), str):
            lines[i] = _said(content, kind, reply)
        elif state == SENT:
            lines[i] = (f"memvault: handed “{content}” to memvault, which has not answered yet (it is busy or "
                        "paused); it stores it once, when it goes on")
        else:
            pending.append(i)
    if pending:
        got = _remember_pending(args, folder, [requests[i] for i in pending], deadline)
        for i, line in zip(pending, got, strict=True):
            lines[i] = line or (f"memvault: handed “{requests[i][0]}” to memvault, which is starting; no answer "
                                "yet (it stores it once started)")
    return [line or "" for line in lines]


def _remember_pending(args: argparse.Namespace, folder: Path, requests: list[tuple[str, str, str]],
                      deadline: float) -> list[str | None]:
    """Start ``memvault hook remember-pending`` detached (its own session, not the hook's stdout: the
    client waits for nothing of it) with ``requests``; its lines that came by ``deadline``, None
    for the others (still being stored), or one failure line each when it could not start."""
    import select
    import subprocess

    flags = [f for name in ("data_dir", "user", "project") if getattr(args, name, None) is not None
             for f in (f"--{name.replace('_', '-')}", getattr(args, name))]
    try:
        child = subprocess.Popen([*memvault_executable(), "hook", "remember-pending", *flags],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 start_new_session=True, close_fds=True)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps({"cwd": str(folder), "requests": [list(r) for r in requests]}).encode())
        child.stdin.close()
    except OSError as exc:
        sys.stderr.write(f"memvault hook prompt-submit: could not start memvault: {exc}\n")
        return ["memvault: could not remember that: memvault could not be started (see `memvault doctor`)"] \
            * len(requests)
    out: list[str | None] = [None] * len(requests)
    buf = b""
    fd = child.stdout.fileno()
    done = 0
    while done < len(requests):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        *complete, buf = buf.split(b"\n")
        for line in complete:
            if done < len(requests):
                out[done] = line.decode("utf-8", "replace")
                done += 1
    return out


def cmd_remember_pending(args: argparse.Namespace) -> int:
    """``memvault hook remember-pending`` (started by the prompt hook, detached): store the requests
    of the JSON on stdin (``{"cwd": ..., "requests": [[content, kind, scope], ...]}``) through the owner,
    starting it if needed, waiting up to ``PENDING_DEADLINE_S``; one line per request on stdout
    (the hook shows those that come in its time). Always 0."""
    import signal as _signal

    _signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)  # the hook may be gone: the stores still happen
    try:
        data = json.loads(sys.stdin.buffer.read(MAX_STDIN_BYTES) or b"{}")
        folder = Path(data["cwd"])
        requests = [(str(r[0]), str(r[1]), str(r[2]) if len(r) > 2 else "project") for r in data["requests"]]
    except (ValueError, KeyError, TypeError, OSError) as exc:
        sys.stderr.write(f"memvault hook remember-pending: bad input: {exc}\n")
        return 0
    from memvault.config import ConfigError

    try:
        settings = _full_settings(args)
    except ConfigError as exc:
        sys.stderr.write(f"memvault hook remember-pending: {exc}\n")
        _say(["memvault: could not remember that: memvault's settings are invalid (see `memvault doctor`)"]
             * len(requests))
        return 0
    end = time.monotonic() + PENDING_DEADLINE_S  # for all the requests together
    for content, kind, scope in requests:
        left = end - time.monotonic()
        _say([_remember(settings, folder, content, kind, left, scope) if left > 1 else
              "memvault: could not remember that: memvault did not start in time"])
    return 0


def _say(lines: list[str]) -> None:
    """Lines on stdout, flushed; a closed stdout (the hook gave up waiting) is not an error."""
    try:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass


def _said(content: str, kind: str, res: dict[str, Any]) -> str:
    """The one line the hook prints about a remember result (never the content of a refused one)."""
    where = f"project {res.get('project_name')}" if res.get("project") else "global"
    status = res.get("status")
    if status in ("stored", "superseded"):
        return f"memvault: remembered “{content}” ({kind}, {where})"
    if status == "reinforced":
        return f"memvault: already remembered “{content}” ({where}); marked as confirmed again"
    return f"memvault: did not remember that: {res.get('reason') or status}"


def _full_settings(args: argparse.Namespace):
    from memvault.cli.common import settings_of

    return settings_of(args)


def _remember(settings: Any, folder: Path, content: str, kind: str, timeout_s: float, scope: str = "project") -> str:
    """Store one request through the owner (``scope`` ``global``: in the user's global scope); the one
    line the hook prints about it (never the content of a refused one)."""
    from memvault.process.owner_client import ToolCallFailed, run_tool_call

    arguments: dict[str, Any] = {"content": content, "kind": kind, "force": True, "source": REMEMBER_SOURCE}
    if scope == "global":
        arguments["project"] = ""
    try:
        res = run_tool_call(settings, folder, "remember", arguments, client_name=HOOK_CLIENT_NAME,
                            timeout_s=timeout_s)
    except ToolCallFailed as exc:
        return f"memvault: could not remember that: {str(exc)[:300]}"
    except Exception as exc:
        sys.stderr.write(f"memvault hook prompt-submit: {type(exc).__name__}: {str(exc)[:300]}\n")
        return "memvault: could not reach memvault to remember that (see `memvault doctor`)"
    where = res.get("scope") or {}
    return _said(content, kind, {**res, "project": where.get("project"), "project_name": where.get("project_name")})


# --------------------------------------------------------------------------- parser
def _tokens(value: str) -> int:
    n = int(value)
    if n < 60:
        raise argparse.ArgumentTypeError(f"at least 60 tokens (got {n})")
    return n


def main(argv: list[str]) -> int:
    """Run ``context`` / ``hook`` / ``hooks`` with only their own parser (``memvault.cli.entry.main`` hands them
    here before building the whole CLI: a hook's start-up time counts)."""
    p = argparse.ArgumentParser(prog="memvault")
    add_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return int(args.func(args))


def add_parser(sub: Any) -> None:
    """Add ``context``, ``hook`` and ``hooks`` to the ``memvault`` sub-parsers ``sub``."""
    from memvault.cli import hooks_install

    def store_flags(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
        sp.add_argument("--user", help="user id / tenant (env MEMVAULT_USER_ID)")
        sp.add_argument("--project", help="project when the folder is in no git work tree; beats the plain folder "
                        "(env MEMVAULT_PROJECT)")

    sp = sub.add_parser("context", help="print what memvault remembers for a project folder (for session hooks)")
    store_flags(sp)
    sp.add_argument("--cwd", help="the project folder (default: the current folder)")
    sp.add_argument("--max-tokens", type=_tokens, default=DEFAULT_MAX_TOKENS,
                    help=f"longest block, estimated tokens (default {DEFAULT_MAX_TOKENS})")
    sp.add_argument("--no-owner", action="store_true",
                    help="read the store in this process even when the data dir's owner runs")
    sp.set_defaults(func=cmd_context)

    sp = sub.add_parser("hook", help="run as a Claude Code hook (reads the hook's JSON on stdin)")
    sp.add_argument("hook", choices=("session-start", "prompt-submit", "remember-pending"),
                    help="session-start: print the context; prompt-submit: store explicit memory requests; "
                         "remember-pending: (started by prompt-submit) store requests no owner took")
    store_flags(sp)
    sp.add_argument("--max-tokens", type=_tokens, default=DEFAULT_MAX_TOKENS,
                    help=f"session-start: longest block, estimated tokens (default {DEFAULT_MAX_TOKENS})")
    sp.set_defaults(func=cmd_hook)

    hooks_install.add_parser(sub)
