"""``memvault status [--json]`` and ``memvault stop``: the data dir's owner process, seen and stopped.

``status`` asks the running owner (over its socket, as a forwarder does) for its pid,
start time, version, connected clients, data dir and the model's state, and prints them
one per line (``--json``: the owner's answer as one JSON object, ``{"running": false,
"data_dir": ...}`` when none runs). Exit 0 in both cases; 1 when the owner refused (another
memvault version holds the data dir: the message names both).

``stop`` sends the owner SIGTERM, on which it flushes its index, closes its stores and
exits, and waits (up to ``STOP_WAIT_S``) until it is gone. Connected clients' forwarders
start a new owner on their next message, with the environment of that client; so ``stop``
is also how new owner-wide settings take effect (docs/scope.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from memvault.cli.common import log_to_stderr, settings_of, store_flags

STOP_WAIT_S = 30.0
"""How long ``memvault stop`` waits for the owner to flush and exit, seconds."""


def add_parser(sub) -> None:
    """Add ``status`` and ``stop`` to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("status", help="show the data dir's owner process: pid, since, clients, model")
    store_flags(sp)
    sp.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    sp.set_defaults(func=cmd_status)
    sp = sub.add_parser("stop", help="flush and stop the data dir's owner process (clients start a new one)")
    store_flags(sp)
    sp.set_defaults(func=cmd_stop)


def _status(args: argparse.Namespace) -> tuple[Any, dict[str, Any] | None]:
    import anyio

    from memvault.process.forwarder import owner_status
    from memvault.process.owner_files import owner_files

    settings = settings_of(args)
    return settings, anyio.run(owner_status, owner_files(settings.storage.data_dir), settings)


def render_status(status: dict[str, Any]) -> str:
    """The lines ``memvault status`` prints for a running owner's ``status``."""
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(status["since"])))
    up = _duration(time.time() - float(status["since"]))
    lines = [
        f"owner        pid {status['pid']}, memvault {status['version']}",
        f"since        {since} (up {up})",
        f"data dir     {status.get('data_dir', '?')}",
        f"model        {status.get('model_name', '?')}: {status.get('model', '?')}",
    ]
    clients = status.get("clients") or []
    idle = "" if status.get("idle_s") is None else \
        f"; idle {float(status['idle_s']):.0f} s, exits after {float(status['idle_exit_s']):.0f} s"
    lines.append(f"connections  {status['connections']} now, {status.get('served', 0)} since start{idle}")
    for c in clients:
        differs = f"; settings not used: {', '.join('MEMVAULT_' + n.upper() for n in c['differs'])}" \
            if c.get("differs") else ""
        lines.append(f"  client     pid {c.get('pid')}, user {c.get('user_id')}, in {c.get('cwd')}{differs}")
    if status.get("differs"):
        lines.append(f"settings     this shell's differ from the owner's: {status.get('differs_text')}")
    return "\n".join(lines) + "\n"


def _duration(seconds: float) -> str:
    s = int(max(0, seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _asked(args: argparse.Namespace, command: str) -> tuple[Any, dict[str, Any] | None] | None:
    """``(settings, the owner's status or None when none runs)``, logging to stderr at WARNING;
    None, said on stderr, when the owner refused this version."""
    from memvault.process.handshake import HandshakeError

    log_to_stderr("WARNING")
    try:
        return _status(args)
    except HandshakeError as exc:
        sys.stderr.write(f"memvault {command}: {exc}\n")
        return None


def cmd_status(args: argparse.Namespace) -> int:
    """Print the owner's status; 0 (also when none runs), 1 when it refused this version."""
    asked = _asked(args, "status")
    if asked is None:
        return 1
    settings, status = asked
    data_dir = str(settings.storage.data_dir)
    if args.json:
        out = {"running": True, **status} if status is not None else {"running": False, "data_dir": data_dir}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    if status is None:
        sys.stdout.write(f"owner        none running for {data_dir} (the next client or `memvault ui` "
                         "starts one)\n")
        return 0
    sys.stdout.write(render_status(status))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the owner and wait until it exited; 0 (also when none ran), 1 when it did not exit in time."""
    from memvault.process.owner_files import pid_alive

    asked = _asked(args, "stop")
    if asked is None:
        return 1
    settings, status = asked
    if status is None:
        sys.stdout.write(f"no memvault owner runs for {settings.storage.data_dir}\n")
        return 0
    pid = int(status["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        sys.stdout.write(f"the memvault owner (pid {pid}) had already exited\n")
        return 0
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            clients = int(status.get("connections") or 0)
            tail = f"; its {clients} connected client(s) start a new owner on their next call" if clients else ""
            sys.stdout.write(f"stopped the memvault owner (pid {pid}) of {settings.storage.data_dir}{tail}\n")
            return 0
        time.sleep(0.05)
    sys.stderr.write(f"memvault stop: the owner (pid {pid}) did not exit within {STOP_WAIT_S:g} s; "
                     f"its log is {settings.storage.data_dir / 'owner.log'}\n")
    return 1
