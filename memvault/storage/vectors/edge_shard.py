"""One open collection of the embedded Qdrant Edge store, as ``EdgeVectorIndex`` tracks it.

``OpenShard`` holds the engine's shard with what memvault keeps beside it while it is
open (dim, model, folder, what was written since the last flush, whether it holds an
HNSW index, the writes journalled while an index build runs); ``is_panic`` tells a Rust
panic of the engine (a BaseException) from the errors it raises. Shared by the adapter
(``edge``) and the index build's swap (``edge_swap``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import qdrant_edge as qe

from .edge_integrity import SHARD_DIR


@dataclass
class OpenShard:
    shard: qe.EdgeShard
    dim: int
    model_id: str
    path: Path
    name: str
    rel: str = SHARD_DIR  # ``path`` relative to the collection folder (the record's ``shard``)
    dirty: bool = False  # written since the last flush
    indexed: bool = False  # holds HNSW-indexed segments: searched with exact=False
    journal: list[qe.UpdateOperation] | None = None  # writes since an index build's copy
    wal_dirty: bool = False  # written since the last fsync of the WAL
    written_since: int = 0  # points upserted since this shard was built (or opened)
    built_points: int = 0  # points the shard held when its HNSW index was built (the record's ``built_points``)
    payload_indexed: bool = False  # has its payload indexes (made once PAYLOAD_INDEX_AFTER points are held)
    # May hold a point of an item's later window (payload ``parent``): searches then read each
    # hit's ``parent`` to name its item; without one, a point's id is its item's and no payload is read.
    windows: bool = True


def is_panic(exc: BaseException) -> bool:
    """True for a Rust panic raised through pyo3 (``pyo3_runtime.PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"
