"""Who is on the other end of an MCP connection: what decides its scope and its writes' source.

With one owner process serving every client of a data dir, scope is a property of a
connection, never of the process. Each connection carries the user it acts for, the
working directory its client started ``memvault serve`` in (the project when the client
offers no roots), and the project setting of that client. The owner sets the connection
for the task that serves it (``bound``); every request handler of that connection runs
in a child task and so sees it through ``current()``. Outside the owner (a single
process serving one client) there is no bound connection and the settings decide.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Connection:
    """One client's connection to the owner.

    ``user_id``: the tenant (from that client's settings); ``cwd``: the working directory
    of its ``memvault serve`` (None when unknown); ``project``: its ``MEMVAULT_PROJECT``
    (None when unset); ``pid``: the forwarder's process id; ``cache``: per-connection
    values a resolver may keep (e.g. the project read from the client's roots).
    """

    user_id: str
    cwd: Path | None = None
    project: str | None = None
    pid: int | None = None
    cache: dict[str, object] = field(default_factory=dict)


_CURRENT: contextvars.ContextVar[Connection | None] = contextvars.ContextVar("memvault_connection", default=None)


def current() -> Connection | None:
    """The connection the running request belongs to, or None outside the owner."""
    return _CURRENT.get()


@contextmanager
def bound(conn: Connection) -> Iterator[Connection]:
    """Make ``conn`` the current connection for this task and the tasks it starts."""
    token = _CURRENT.set(conn)
    try:
        yield conn
    finally:
        _CURRENT.reset(token)
