"""One consistent, read-only view of a SQLite file, with the standard library alone.

Used where the async store (``storage.database``: aiosqlite, anyio) is not open or would
cost too much to import: ``memvault export`` and the client hooks' glance of the store.
In WAL mode the readers neither block the writers of a running server nor are blocked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path


@contextmanager
def read_snapshot(path: Path | str, busy_timeout_ms: int = 5000) -> Iterator[sqlite3.Connection]:
    """A read-only connection (``mode=ro``, ``query_only``) to the SQLite file ``path`` inside
    one read transaction, so that every query sees the same snapshot. Blocking (call from a
    worker thread in async code); waits at most ``busy_timeout_ms`` for a lock. Raises
    sqlite3.Error when the file cannot be opened or read (nothing is created)."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout_ms / 1000)) as con:
        con.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        con.execute("PRAGMA query_only = ON")
        con.execute("BEGIN")
        try:
            yield con
        finally:
            con.execute("COMMIT")
