"""Who is on the other end of an MCP connection: what decides its scope and its writes' source.

With one owner process serving every client of a data dir, scope is a property of a
connection, never of the process. Each connection carries the user it acts for, the
agent id its client set (``MEMVAULT_AGENT_ID``; unset: the client's MCP name), the
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

from memvault.mcp.workspace import Workspace


@dataclass
class Connection:
    """One client's connection to the owner.

    ``user_id``: the tenant (from that client's settings); ``workspace``: the folder its
    ``memvault serve`` was started in and the project of that folder (asked once);
    ``project``: its ``MEMVAULT_PROJECT`` (None when unset); ``pid``: the forwarder's
    process id; ``agent_id``: its ``MEMVAULT_AGENT_ID`` (None when unset: the agent is the
    client's MCP name); ``docs_allowed_dirs``: its ``MEMVAULT_DOCS_ALLOWED_DIRS`` (None: the
    client sent none, the owner's applies); ``differs``: names of its other settings whose
    values the owner does not use (``memvault.process.client_settings``).
    """

    user_id: str
    workspace: Workspace
    project: str | None = None
    pid: int | None = None
    agent_id: str | None = None
    docs_allowed_dirs: list[Path] | None = None
    differs: list[str] = field(default_factory=list)


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
