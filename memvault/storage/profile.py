"""Read-only queries behind ``get_profile``: keyed memories and the most important facts.

The profile has no table of its own: it is derived from the ``memories`` table (one
source of truth). Shares the fact store's connection; never writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.storage.database import Database
from memvault.storage.facts import FactStore, readable_sql
from memvault.storage.memories import MEMORY_COLUMNS, MemoryRow, memory_rows


class ProfileReader:
    """Queries over active, unexpired memories of one user (see module doc)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def on(cls, facts: FactStore) -> ProfileReader:
        """A reader on ``facts``' connection."""
        return cls(facts.database)

    async def keyed(self, user_id: str, projects: Sequence[str], now: float, limit: int, *,
                    reader: str | None = None) -> list[MemoryRow]:
        """Active, unexpired memories with a key over ``projects`` that agent ``reader`` reads
        (None: all), newest update first, at most ``limit``."""
        marks = ",".join("?" * len(projects))
        readable, r = readable_sql(reader)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id=? AND project IN ({marks}) AND key IS NOT NULL"
            f" AND status='active' AND (expires_at IS NULL OR expires_at > ?) AND {readable}"
            " ORDER BY updated_at DESC LIMIT ?",
            [user_id, *projects, now, *r, int(limit)],
        )
        return memory_rows(rows)  # unreadable rows left out, one log line each

    async def top_unkeyed(self, user_id: str, projects: Sequence[str], kinds: Sequence[str], now: float,
                          limit: int, *, reader: str | None = None) -> list[MemoryRow]:
        """Active, unexpired memories without a key of ``kinds`` that agent ``reader`` reads
        (None: all), by importance then recency."""
        marks = ",".join("?" * len(projects))
        kmarks = ",".join("?" * len(kinds))
        readable, r = readable_sql(reader)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id=? AND project IN ({marks}) AND key IS NULL"
            f" AND kind IN ({kmarks}) AND status='active' AND (expires_at IS NULL OR expires_at > ?) AND {readable}"
            " ORDER BY importance DESC, updated_at DESC LIMIT ?",
            [user_id, *projects, *kinds, now, *r, int(limit)],
        )
        return memory_rows(rows)  # unreadable rows left out, one log line each
