"""memvault's own errors: what a service raises when a call cannot be done.

Every message is written for a person (what was wrong, what is allowed or what to do),
so each face passes it on as is: the MCP face as a ``ToolError``, the CLI as a message
on stderr with a non-zero exit code. Nothing is written when one of these is raised.
"""

from __future__ import annotations


class MemvaultError(Exception):
    """Base of the errors a service raises on purpose; ``str(exc)`` is the message for a person."""


class InvalidArgument(MemvaultError, ValueError):
    """An argument is malformed or out of range; the message names it and what is allowed."""


class NotFound(MemvaultError):
    """The call names something that does not exist in the caller's scope (a task, a memory id)."""


class Conflict(MemvaultError):
    """The call conflicts with what is stored (a stale ``expected_version``, an index built
    with another model); the message says what is there now and how to proceed."""


class NotReady(MemvaultError):
    """The model or the vector index could not be loaded; the message says why and what to do."""


class StoreUnavailable(NotReady):
    """The data dir or its database could not be opened at start-up (not a folder, not writable,
    not an SQLite file, a newer schema); the message says why and what to run."""
