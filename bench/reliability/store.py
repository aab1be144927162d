"""What is on disk in a data dir, read from outside the server: SQLite and the vector index.

SQLite is read with the stdlib ``sqlite3`` (any time: WAL readers do not block the
server). The vector index (Qdrant Edge) admits one process at a time, so ``index_ids``
opens it only while no server runs (after a kill -9 or a clean stop), through memvault's
own ``EdgeVectorIndex``, as the next server start would.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

DB_FILE = "memvault.db"


def connect(data_dir: Path) -> sqlite3.Connection:
    """A plain connection to the data dir's database (busy timeout 10 s)."""
    con = sqlite3.connect(data_dir / DB_FILE, timeout=10)
    con.execute("PRAGMA busy_timeout = 10000")
    return con


def integrity(data_dir: Path) -> str:
    """``PRAGMA integrity_check`` of the database: ``"ok"`` or SQLite's list of problems (joined)."""
    with closing(connect(data_dir)) as con:
        return "; ".join(r[0] for r in con.execute("PRAGMA integrity_check").fetchall())


def table_counts(data_dir: Path) -> dict[str, int]:
    """Row count of every table (SQLite's own tables left out); {} when there is no database yet."""
    if not (data_dir / DB_FILE).exists():
        return {}
    with closing(connect(data_dir)) as con:
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}


def memory_rows(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Every memory row: id -> {content, status, index_state, expires_at, user_id, project}."""
    with closing(connect(data_dir)) as con:
        rows = con.execute("SELECT id, content, status, index_state, expires_at, user_id, project FROM memories")
        return {r[0]: {"content": r[1], "status": r[2], "index_state": r[3], "expires_at": r[4],
                       "user_id": r[5], "project": r[6]} for r in rows}


def indexable_ids(data_dir: Path, now: float | None = None) -> set[str]:
    """Ids that should have a point: active and unexpired (``FactStore.indexable_ids``)."""
    now = time.time() if now is None else now
    with closing(connect(data_dir)) as con:
        return {r[0] for r in con.execute(
            "SELECT id FROM memories WHERE status='active' AND (expires_at IS NULL OR expires_at > ?)", [now])}


def index_ids(data_dir: Path) -> set[str] | None:
    """Point ids of the memory collection, read offline; None when the collection was never made.

    No server may run on ``data_dir`` (the shard admits one process: ``StoreLocked``).
    """
    from memvault.service.runtime import MEMORY_COLLECTION
    from memvault.storage.vectors.edge import EdgeVectorIndex
    from memvault.storage.vectors.edge_integrity import META_FILE

    root = data_dir / "vectors"
    meta = root / MEMORY_COLLECTION / META_FILE
    if not meta.is_file():
        return None
    info = json.loads(meta.read_text())
    idx = EdgeVectorIndex(root)
    try:
        idx.ensure_collection(MEMORY_COLLECTION, int(info["dim"]), str(info["model_id"]))
        return idx.ids(MEMORY_COLLECTION)
    finally:
        idx.close()


def index_check(data_dir: Path) -> dict[str, Any]:
    """SQLite against the index, offline: rows that should have a point and have none (``missing``),
    points without a live row (``orphans``), rows still marked pending (``pending``), as id lists."""
    wanted = indexable_ids(data_dir)
    present = index_ids(data_dir) or set()
    with closing(connect(data_dir)) as con:
        pending = [r[0] for r in con.execute("SELECT id FROM memories WHERE index_state != 'indexed'")]
    return {"rows_indexable": len(wanted), "points": len(present), "missing": sorted(wanted - present),
            "orphans": sorted(present - wanted), "pending": sorted(pending)}
