"""``memvault hooks install claude-code`` merges the hooks into Claude Code's settings
(``~/.claude/settings.json``, or ``<dir>/.claude/settings.json`` with ``--scope
project``), keeping everything else, after writing a backup beside it
(``settings.json.memvault-backup``); installing twice changes nothing. ``memvault hooks
uninstall claude-code`` takes out exactly memvault's hooks (``policy.hook_settings``);
when that gives back the file as it was before the install, its exact bytes are restored.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from memvault.cli.clients import memvault_executable

SESSION_HOOK_TIMEOUT_S = 10
"""``timeout`` written into the SessionStart hook entry, seconds (Claude Code kills the hook past it)."""
PROMPT_HOOK_TIMEOUT_S = 60
"""``timeout`` written into the UserPromptSubmit hook entry, seconds."""
SESSION_MATCHER = "startup|clear|compact"
"""SessionStart sources the context is given for: a new session, after /clear and after compaction
(a resumed session still holds what it was given at its start)."""
BACKUP_SUFFIX = ".memvault-backup"


def add_parser(sub: Any) -> None:
    """Add ``hooks`` (install / uninstall) to the ``memvault`` sub-parsers ``sub``."""
    sp = sub.add_parser("hooks", help="install or remove memvault's hooks in a client's settings")
    sp.add_argument("action", choices=("install", "uninstall"))
    sp.add_argument("client", choices=("claude-code",))
    sp.add_argument("--scope", choices=("user", "project"), default="user",
                    help="user: ~/.claude/settings.json (default); project: <dir>/.claude/settings.json")
    sp.add_argument("--dir", help="with --scope project: the project folder (default: the current folder)")
    sp.add_argument("--remember-requests", action="store_true",
                    help="install: also the prompt hook that stores 'remember that …' / '记住…' requests")
    sp.add_argument("--data-dir", help="install: the data folder the hooks read, when not the default")
    sp.add_argument("--user", help="install: the user id the hooks act for, when not the default")
    sp.set_defaults(func=cmd_hooks)


def hook_groups(remember_requests: bool, data_dir: str | None, user: str | None) -> dict[str, dict[str, Any]]:
    """The matcher groups to install per event (``policy.hook_settings`` format)."""
    flags: list[str] = []
    if data_dir:
        flags += ["--data-dir", str(Path(data_dir).expanduser().absolute())]
    if user:
        flags += ["--user", user]
    exe = memvault_executable()
    groups: dict[str, dict[str, Any]] = {"SessionStart": {"matcher": SESSION_MATCHER, "hooks": [{
        "type": "command", "command": shlex.join([*exe, "hook", "session-start", *flags]),
        "timeout": SESSION_HOOK_TIMEOUT_S}]}}
    if remember_requests:
        groups["UserPromptSubmit"] = {"hooks": [{
            "type": "command", "command": shlex.join([*exe, "hook", "prompt-submit", *flags]),
            "timeout": PROMPT_HOOK_TIMEOUT_S}]}
    return groups


def settings_path(scope: str, folder: str | None) -> Path:
    """Claude Code's settings file: ``~/.claude/settings.json`` (user) or ``<folder>/.claude/settings.json``."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return Path(folder or os.getcwd()).absolute() / ".claude" / "settings.json"


class _Refused(Exception):
    pass


def _load(path: Path) -> tuple[bytes | None, Any]:
    """(the file's bytes or None when absent, its JSON); raises _Refused when it cannot be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise _Refused(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        return raw, json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Refused(f"{path} is not valid JSON ({exc}); fix or move it, then run this again. "
                       "Nothing was changed.") from None


def _dump(data: Any, like: bytes | None) -> bytes:
    """``data`` as JSON formatted like ``like`` (its indent and final newline; default 2 spaces and a newline)."""
    indent: int | str = 2
    newline = True
    if like:
        text = like.decode("utf-8")
        newline = text.endswith("\n")
        for line in text.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                lead = line[: len(line) - len(stripped)]
                indent = lead if "\t" in lead else len(lead)
                break
    out = json.dumps(data, indent=indent, ensure_ascii=False)
    return (out + ("\n" if newline else "")).encode("utf-8")


def _write(path: Path, data: bytes, mode_of: Path | None) -> None:
    """Write ``data`` to ``path`` atomically, keeping ``mode_of``'s permissions when it exists."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if mode_of is not None and mode_of.exists():
            os.chmod(tmp, mode_of.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def cmd_hooks(args: argparse.Namespace) -> int:
    """``memvault hooks install|uninstall claude-code``: 0 when done or nothing to do, 1 when refused."""
    from memvault.policy.hook_settings import MalformedSettings, with_hooks, without_hooks

    path = settings_path(args.scope, args.dir)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    try:
        raw, data = _load(path)
        if args.action == "install":
            new = with_hooks(data, hook_groups(args.remember_requests, args.data_dir, args.user))
        else:
            new = without_hooks(data)
    except _Refused as exc:
        sys.stderr.write(f"memvault hooks {args.action}: {exc}\n")
        return 1
    except MalformedSettings as exc:
        sys.stderr.write(f"memvault hooks {args.action}: {path} is not shaped as Claude Code's settings: {exc}. "
                         "Fix it, then run this again. Nothing was changed.\n")
        return 1
    if raw is not None and new == data:
        done = "already installed" if args.action == "install" else "no memvault hooks to remove"
        sys.stdout.write(f"{path}: {done}; nothing changed\n")
        return 0
    if raw is None and args.action == "uninstall":
        sys.stdout.write(f"{path} does not exist; nothing to remove\n")
        return 0
    out = _dump(new, raw)
    if args.action == "uninstall" and raw is not None:
        # back to the file as it was before the install: its exact bytes
        try:
            before = backup.read_bytes()
            if json.loads(before.decode("utf-8")) == new:
                out = before
        except (OSError, ValueError):
            pass
    try:
        if raw is not None:
            _write(backup, raw, path)
        _write(path, out, path)
    except OSError as exc:
        sys.stderr.write(f"memvault hooks {args.action}: cannot write {exc.filename or path}: "
                         f"{exc.strerror or exc}\n")
        return 1
    if args.action == "install":
        events = " and ".join(hook_groups(args.remember_requests, args.data_dir, args.user))
        sys.stdout.write(f"installed memvault's {events} hook(s) in {path}"
                         + (f" (backup: {backup})" if raw is not None else "") + "\n")
        if not args.remember_requests:
            sys.stdout.write("add --remember-requests to also store 'remember that …' requests from prompts\n")
    else:
        sys.stdout.write(f"removed memvault's hooks from {path}" + (f" (backup: {backup})\n"))
    return 0
