"""Versioned SQLite schema migrations for the fact store.

Each entry of ``MIGRATIONS`` is applied once, in order, inside one transaction, and
``PRAGMA user_version`` records the last one applied. Never edit a released
migration: append a new one.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE memories (
            id               TEXT PRIMARY KEY,          -- UUID4 string
            user_id          TEXT NOT NULL,             -- tenant
            project          TEXT NOT NULL DEFAULT '',  -- '' = the user's global scope
            kind             TEXT NOT NULL,
            key              TEXT,                      -- optional stable slot, e.g. pref.package_manager
            content          TEXT NOT NULL,
            tags             TEXT NOT NULL DEFAULT '[]',-- JSON array of strings
            importance       REAL NOT NULL,             -- 0..1
            confidence       REAL NOT NULL DEFAULT 1.0, -- 0..1
            source           TEXT,
            created_at       REAL NOT NULL,             -- unix seconds
            updated_at       REAL NOT NULL,
            last_accessed_at REAL NOT NULL,
            access_count     INTEGER NOT NULL DEFAULT 0,
            expires_at       REAL,                      -- unix seconds; NULL = never
            status           TEXT NOT NULL DEFAULT 'active',  -- active | superseded | deleted
            superseded_by    TEXT,
            content_hash     TEXT NOT NULL,
            embedding_model  TEXT NOT NULL,
            index_state      TEXT NOT NULL DEFAULT 'pending'  -- pending | indexed
        );
        CREATE INDEX memories_scope ON memories (user_id, project, status);
        CREATE INDEX memories_hash ON memories (user_id, project, kind, content_hash);
        CREATE INDEX memories_key ON memories (user_id, project, key);
        CREATE INDEX memories_expiry ON memories (expires_at);
        CREATE INDEX memories_pending ON memories (index_state);

        CREATE TABLE memory_history (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id  TEXT NOT NULL,
            user_id    TEXT NOT NULL,
            project    TEXT NOT NULL,
            action     TEXT NOT NULL,   -- add | reinforce | supersede | delete | evict | expire | purge
            actor      TEXT,            -- client/session that caused it
            at         REAL NOT NULL,   -- unix seconds
            old        TEXT,            -- JSON snapshot before (NULL after a purge)
            new        TEXT,            -- JSON snapshot after
            reason     TEXT
        );
        CREATE INDEX memory_history_id ON memory_history (memory_id, seq);
        """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]
