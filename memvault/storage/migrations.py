"""Versioned SQLite schema migrations for the fact store, and bringing a file up to date.

Each entry of ``MIGRATIONS`` is applied once, in order, inside one transaction, and
``PRAGMA user_version`` records the last one applied (``migrate``). Never edit a released
migration: append a new one. A file at a schema above ``LATEST_VERSION`` is refused
(``SchemaTooNew``), never written.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from memvault.storage.database import Database

log = logging.getLogger(__name__)

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
    (
        2,
        # Document registry for index_docs / search_docs. One row per indexed file
        # per (project, collection); its chunks are the citable pieces whose ids are the
        # points of the "docs" vector collection.
        """
        CREATE TABLE doc_files (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            project          TEXT NOT NULL DEFAULT '',  -- '' = global (every project reads it)
            collection       TEXT NOT NULL,             -- document collection name
            abs_path         TEXT NOT NULL,             -- resolved absolute path (identity)
            path             TEXT NOT NULL,             -- path cited in results (relative to a root)
            size             INTEGER NOT NULL,          -- bytes
            mtime            REAL NOT NULL,             -- st_mtime, unix seconds
            content_hash     TEXT NOT NULL,             -- sha256 hex of the file's bytes
            format           TEXT NOT NULL,
            chunk_ids        TEXT NOT NULL DEFAULT '[]',-- JSON array of chunk UUIDs, in order
            embedding_model  TEXT NOT NULL,
            indexed_by       TEXT,                      -- user id that indexed it
            indexed_at       REAL NOT NULL,             -- unix seconds
            UNIQUE (project, collection, abs_path)
        );
        CREATE INDEX doc_files_scope ON doc_files (project, collection, path);

        CREATE TABLE doc_chunks (
            id          TEXT PRIMARY KEY,               -- UUID4 string = vector point id
            doc_id      INTEGER NOT NULL REFERENCES doc_files (id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,               -- order within the file, 0-based
            heading     TEXT,                           -- heading path, e.g. 'Install > From source'
            symbol      TEXT,                           -- code: top-level definition
            start_line  INTEGER NOT NULL,               -- 1-based, inclusive
            end_line    INTEGER NOT NULL,
            page        INTEGER,                        -- PDF page, 1-based
            text        TEXT NOT NULL
        );
        CREATE INDEX doc_chunks_doc ON doc_chunks (doc_id, seq);
        """,
    ),
    (
        3,
        # Task state (working memory), versioned JSON with bounded history.
        """
        CREATE TABLE tasks (
            user_id     TEXT NOT NULL,
            project     TEXT NOT NULL DEFAULT '',
            task_id     TEXT NOT NULL,
            title       TEXT NOT NULL,
            status      TEXT NOT NULL,             -- active | blocked | done | abandoned
            version     INTEGER NOT NULL,          -- +1 per write
            state       TEXT NOT NULL,             -- JSON object
            created_at  REAL NOT NULL,             -- unix seconds
            updated_at  REAL NOT NULL,
            expires_at  REAL NOT NULL,             -- idle TTL (open) or retention (finished)
            ttl_days    REAL,                      -- per-task idle TTL; NULL = the setting
            outcome     TEXT,
            episode_id  TEXT,                      -- memory written when the task finished
            actor       TEXT,
            PRIMARY KEY (user_id, project, task_id)
        );
        CREATE INDEX tasks_open ON tasks (user_id, project, status, updated_at);
        CREATE INDEX tasks_expiry ON tasks (expires_at);

        CREATE TABLE task_history (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id     TEXT NOT NULL,
            project     TEXT NOT NULL,
            task_id     TEXT NOT NULL,
            version     INTEGER NOT NULL,
            title       TEXT NOT NULL,
            status      TEXT NOT NULL,
            state       TEXT NOT NULL,             -- JSON object as of this version
            at          REAL NOT NULL,
            actor       TEXT
        );
        CREATE INDEX task_history_task ON task_history (user_id, project, task_id, version);
        """,
    ),
    (
        4,
        # Document chunks' keyword vectors are length-normalised against
        # chunk-sized text (policy.keywords.DOC_KEYWORD_SCHEME 2). Files indexed before
        # read as scheme 1, so the next index_docs re-indexes them.
        """
        ALTER TABLE doc_files ADD COLUMN keyword_scheme INTEGER NOT NULL DEFAULT 1;
        """,
    ),
    (
        5,
        # Keys, tags and task ids are compared casefolded (service.validation). Stored
        # ones are folded here as far as SQLite can (ASCII letters); memories whose key
        # or tags changed are re-indexed (the engine filters on both). Two tasks that
        # differ only in case keep the second one's spelling (it cannot take the id).
        """
        UPDATE memories SET key = lower(key), tags = lower(tags), index_state = 'pending'
            WHERE (key IS NOT NULL AND key != lower(key)) OR tags != lower(tags);
        UPDATE OR IGNORE tasks SET task_id = lower(task_id) WHERE task_id != lower(task_id);
        UPDATE task_history SET task_id = lower(task_id)
            WHERE task_id != lower(task_id) AND NOT EXISTS (
                SELECT 1 FROM tasks t WHERE t.user_id = task_history.user_id AND t.project = task_history.project
                AND t.task_id = task_history.task_id);
        """,
    ),
    (
        6,
        # The index holds keys and tags as digests (service.filters.label_digest): memories
        # with a key or tags are re-indexed. The history of memories erased before keeps
        # no actor or reason either, as an erasure now does (FactStore.purge).
        """
        UPDATE memories SET index_state = 'pending'
            WHERE status = 'active' AND (key IS NOT NULL OR tags != '[]');
        UPDATE memory_history SET actor = NULL, reason = NULL
            WHERE memory_id NOT IN (SELECT id FROM memories)
            AND seq < (SELECT max(h.seq) FROM memory_history h WHERE h.memory_id = memory_history.memory_id);
        """,
    ),
    (
        7,
        # Private and shared memories: ``visibility`` says who reads a memory (every agent of
        # its user, or only the agent that wrote it), ``agent`` which agent (MCP client, or
        # MEMVAULT_AGENT_ID) wrote it. Memories written before are shared, writer unknown;
        # their index points carry no ``private_to`` and so read as shared too.
        """
        ALTER TABLE memories ADD COLUMN visibility TEXT NOT NULL DEFAULT 'shared';  -- shared | private
        ALTER TABLE memories ADD COLUMN agent TEXT;                                 -- writer; NULL = unknown
        """,
    ),
    (
        8,
        # One repository, one id: on hosts whose repository paths ignore case (github.com,
        # gitlab.com, bitbucket.org: service.scope.project.CASE_INSENSITIVE_HOSTS) a project id is
        # lower case, so ids stored with another spelling become it. Memories are left
        # pending, so their index points get the new id; document files are marked for an
        # in-place update of their points (keyword_scheme 0: service.documents.points.reweigh_stale
        # rewrites their sparse vectors and project). A task or a document file whose new id
        # is already taken by the same task id or path keeps its old row (OR IGNORE).
        """
        UPDATE memories SET project = lower(project), index_state = 'pending'
            WHERE project != lower(project) AND (lower(project) LIKE 'github.com/%'
            OR lower(project) LIKE 'gitlab.com/%' OR lower(project) LIKE 'bitbucket.org/%');
        UPDATE memory_history SET project = lower(project)
            WHERE project != lower(project) AND (lower(project) LIKE 'github.com/%'
            OR lower(project) LIKE 'gitlab.com/%' OR lower(project) LIKE 'bitbucket.org/%');
        UPDATE OR IGNORE tasks SET project = lower(project)
            WHERE project != lower(project) AND (lower(project) LIKE 'github.com/%'
            OR lower(project) LIKE 'gitlab.com/%' OR lower(project) LIKE 'bitbucket.org/%');
        UPDATE task_history SET project = lower(project)
            WHERE project != lower(project) AND (lower(project) LIKE 'github.com/%'
            OR lower(project) LIKE 'gitlab.com/%' OR lower(project) LIKE 'bitbucket.org/%')
            AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.user_id = task_history.user_id
                AND t.project = task_history.project AND t.task_id = task_history.task_id);
        UPDATE OR IGNORE doc_files SET project = lower(project), keyword_scheme = 0
            WHERE project != lower(project) AND (lower(project) LIKE 'github.com/%'
            OR lower(project) LIKE 'gitlab.com/%' OR lower(project) LIKE 'bitbucket.org/%');
        """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]


class SchemaTooNew(RuntimeError):
    """The database was written by a newer memvault (a schema this code does not know).

    Opening it anyway would let this version write rows without the newer columns'
    values (e.g. re-index a document under an old weighting while the row says new).
    """


def _statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (comments may contain anything)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


async def schema_version(db: Database) -> int:
    """The schema version recorded in the file."""
    row = await db.fetchone("PRAGMA user_version")
    assert row is not None  # this pragma always returns one row
    return row[0]


async def migrate(db: Database, path: Path) -> None:
    """Apply to the database ``db`` (the file at ``path``) every migration above its schema version,
    each in one transaction. Raises SchemaTooNew, writing nothing, when the file is newer than ``LATEST_VERSION``."""
    version = await schema_version(db)
    if version > LATEST_VERSION:
        raise SchemaTooNew(
            f"{path} was written by a newer memvault (database schema {version}); this "
            f"version reads schema {LATEST_VERSION} at most. Run the memvault that wrote it "
            f"(or a newer one), or set MEMVAULT_DATA_DIR to another folder."
        )
    for number, script in MIGRATIONS:
        if number <= version:
            continue
        log.info("migrating %s to schema %d", path, number)
        async with db.transaction() as tx:
            for statement in _statements(script):
                await tx.execute(statement)
            await tx.execute(f"PRAGMA user_version = {int(number)}")
