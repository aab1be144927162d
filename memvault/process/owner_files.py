"""Where the owner process of a data dir is found: its socket, lock and status files.

One owner per data dir holds the stores and the model; ``memvault serve`` processes
forward their clients to it. The files, all mode 0600 in the data dir (itself 0700):

- ``owner.sock``: the Unix socket the owner listens on (only the same OS user can reach
  it: the folder is 0700 and the socket 0600);
- ``owner.lock``: held (flock) by the running owner for its whole life, so a second owner
  on the same data dir exits at once; the OS drops it when the owner dies, even by kill -9;
- ``owner.start.lock``: held by a forwarder while it starts an owner, so that clients
  started in the same second start one;
- ``owner.json``: pid, version and start time of the running owner (for ``doctor``);
- ``owner.log``: the owner's stderr.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

# A Unix socket path holds at most 107 bytes on Linux (103 on macOS); past that the socket
# goes to a 0700 folder of this user under the temp dir, named after the data dir.
_MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class OwnerFiles:
    """The owner's files for one data dir (see the module docstring)."""

    socket: Path
    lock: Path
    start_lock: Path
    info: Path
    log: Path


def owner_files(data_dir: Path) -> OwnerFiles:
    """The owner files of ``data_dir`` (nothing is created except, for a long path, the socket's folder)."""
    data_dir = data_dir.resolve()
    sock = data_dir / "owner.sock"
    if len(os.fsencode(sock)) > _MAX_SOCKET_PATH:
        folder = Path(tempfile.gettempdir()) / f"memvault-{os.getuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        folder.chmod(0o700)
        sock = folder / (hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:24] + ".sock")
    return OwnerFiles(socket=sock, lock=data_dir / "owner.lock", start_lock=data_dir / "owner.start.lock",
                      info=data_dir / "owner.json", log=data_dir / "owner.log")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a process of another user counts as running; a zombie
    does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # an exited child not yet reaped (not ours: the owner is detached) reads as a zombie
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except (OSError, IndexError):
        return True
