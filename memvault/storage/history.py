"""Reads of ``memory_history``: the recorded changes of one memory, or of a key's memories.

The fact store writes the history (``FactStore``, in the transaction of each change);
this module only reads it, on the same shared connection (``FactStore.database``). Every
read is for one user (``memory_history.user_id``). A key's history covers the memories
that hold the key now (``memories.key``; a memory only ever gains a key, never changes
it); an erased memory left no row and its history entries hold no key, so it is not
found by key, only by its id. Entries come newest first (highest ``seq``).

An agent's read (``reader``) leaves out the memories it does not read (another agent's
private ones); an erased memory has no row left to say whose it was, and its entries
hold no content, actor or reason, so they stay readable by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memvault.storage import rows as col
from memvault.storage.database import Database
from memvault.storage.facts import FactStore, readable_sql
from memvault.storage.memories import HistoryEntry, history_entry

_COLUMNS = "seq, memory_id, action, actor, at, old, new, reason, project"


def _entry(r: Sequence[Any]) -> tuple[HistoryEntry, str]:
    return history_entry(r[:8]), col.text(r[8], "project")


def _marks(n: int) -> str:
    return ",".join("?" * n)


class HistoryStore:
    """Read-only view of the memory history, sharing the fact store's connection."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def on(cls, facts: FactStore) -> HistoryStore:
        """The history of ``facts``' database."""
        return cls(facts.database)

    @staticmethod
    def _where(user_id: str, memory_id: str | None, key: str | None,
               projects: Sequence[str] | None, reader: str | None) -> tuple[str, list[Any]]:
        if (memory_id is None) == (key is None):
            raise ValueError("give exactly one of memory_id and key")
        readable, r = readable_sql(reader)
        if memory_id is not None:
            if reader is None:
                return "user_id = ? AND memory_id = ?", [user_id, memory_id]
            hidden = f"SELECT id FROM memories WHERE user_id = ? AND id = ? AND NOT {readable}"
            return (f"user_id = ? AND memory_id = ? AND memory_id NOT IN ({hidden})",
                    [user_id, memory_id, user_id, memory_id, *r])
        inner, params = f"user_id = ? AND key = ? AND {readable}", [user_id, key, *r]
        if projects is not None:
            inner += f" AND project IN ({_marks(len(projects))})"
            params += list(projects)
        return f"user_id = ? AND memory_id IN (SELECT id FROM memories WHERE {inner})", [user_id, *params]

    async def entries(self, user_id: str, *, memory_id: str | None = None, key: str | None = None,
                      projects: Sequence[str] | None = None, limit: int, reader: str | None = None
                      ) -> tuple[list[tuple[HistoryEntry, str]], int]:
        """The newest ``limit`` history entries, each with the project it was recorded in, of one memory (``memory_id``) or of the memories
        holding ``key`` in ``projects`` (None: any project), newest first, and how many entries
        there are in all. Unreadable entries are left out (one log line each). Raises
        ValueError unless exactly one of ``memory_id`` and ``key`` is given. ``reader``: only
        the memories that agent reads (see the module docstring); None: every memory."""
        where, params = self._where(user_id, memory_id, key, projects, reader)
        found = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM memory_history WHERE {where} ORDER BY seq DESC LIMIT ?", [*params, int(limit)]
        )
        total = await self._db.fetchone(f"SELECT COUNT(*) FROM memory_history WHERE {where}", params)
        assert total is not None  # an aggregate without GROUP BY always returns one row
        got = col.readable(found, _entry, "memory_history", lambda r: f"seq {r[0]!r}")
        return got, int(total[0])

    async def last(self, user_id: str, memory_id: str, *, reader: str | None = None) -> HistoryEntry | None:
        """The newest history entry of one memory of ``user_id`` that agent ``reader`` reads
        (None: any); None when there is none."""
        got, _ = await self.entries(user_id, memory_id=memory_id, limit=1, reader=reader)
        return got[0][0] if got else None
