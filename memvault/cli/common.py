"""What the ``memvault`` commands share: their settings, their log, their flags, their project, and
holding the data dir while no owner serves it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.service.memory.models import ScopeSource

_FLAGS = {"data_dir": "--data-dir", "user_id": "--user", "project": "--project"}

START_LOCK_WAIT_S = 30.0
"""How long a command that needs the data dir alone waits for a client that is starting the owner (seconds)."""


def settings_of(args: argparse.Namespace):
    """The settings with the command's flags applied; raises ConfigError (one line: what, value, allowed)."""
    from memvault.config import load_settings

    overrides = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "user", None):
        overrides["user_id"] = args.user
    if getattr(args, "project", None) is not None:
        overrides["project"] = args.project
    return load_settings({k: v for k, v in _FLAGS.items() if k in overrides}, **overrides)


def log_to_stderr(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def store_flags(sp: argparse.ArgumentParser) -> None:
    """The flags of every command that opens a data dir: ``--data-dir``, ``--user``, ``--project``."""
    sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
    sp.add_argument("--user", help="user id / tenant (env MEMVAULT_USER_ID)")
    sp.add_argument("--project", help="project when the client has no roots and the current folder is in no "
                    "git work tree; beats the plain folder (env MEMVAULT_PROJECT); for index: the project, '' = shared")


def run_project(args: argparse.Namespace, settings: Settings) -> tuple[str, ScopeSource]:
    """``(project, source)`` of an index run in the current folder (see the module docstring)."""
    if getattr(args, "project", None) is not None:
        return args.project, "argument"
    from memvault.service.scope.project import project_of_start_dir

    started = project_of_start_dir(Path.cwd())
    if started is not None and started.kind != "folder":
        return started.id, "cwd"
    if settings.server.project:
        return settings.server.project, "settings"
    if started is not None:
        return started.id, "cwd"
    return "", "global"


@contextmanager
def no_owner(settings: Settings, command: str = "import", rule: str = "writes only while no owner runs"
              ) -> Iterator[str | None]:
    """Hold the data dir's owner start lock and owner lock for the block, so no owner serves
    it meanwhile (a client started meanwhile waits for the start lock). Yields None, or
    why ``command`` is refused (an owner runs; ``rule`` says why it must not), holding nothing then."""
    import fcntl
    import time

    import anyio

    from memvault.process.forwarder import owner_status
    from memvault.process.owner import OwnerRunning, owner_lock
    from memvault.process.owner_files import owner_files
    from memvault.service.datadir import prepare_data_dir

    prepare_data_dir(settings.storage.data_dir, settings.db_path)
    files = owner_files(settings.storage.data_dir)
    fd = os.open(files.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + START_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield (f"a client has been starting the owner process of {settings.storage.data_dir} for "
                           f"{START_LOCK_WAIT_S:g} s; try again when it has started and exited")
                    return
                time.sleep(0.05)
        try:
            with owner_lock(files):
                yield None
        except OwnerRunning:
            try:
                status = anyio.run(owner_status, files)
            except Exception:  # e.g. an owner of another version: it still holds the data dir
                status = None
            who = (f"the owner process (pid {status['pid']}) serves {status['connections']} client(s)"
                   if status else "an owner process holds")
            yield (f"{who} from {settings.storage.data_dir}; {command} {rule}. Run `memvault stop` (the "
                   f"clients reconnect to a new owner afterwards) or close the clients (the owner exits "
                   f"{settings.server.owner_idle_s:g} s after the last one leaves), then run {command} again. "
                   f"Nothing was written.")
    finally:
        os.close(fd)
