"""memvault.storage.vectors: one vector-engine interface, two Qdrants behind it.

``open_vector_index(settings)`` picks the engine: embedded Qdrant Edge under
``settings.vectors_dir`` by default, a Qdrant server when ``settings.storage.qdrant_url`` is set.
Callers then ``ensure_collection(name, dim, model_id)`` before using a collection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (
    DENSE,
    KEYWORDS,
    CollectionMismatch,
    DamagedCollection,
    Hit,
    Point,
    SparseVector,
    StoredPoint,
    StoreLocked,
    UnknownCollection,
    VectorFilter,
    VectorIndex,
)

if TYPE_CHECKING:
    from memvault.config import Settings

__all__ = [
    "DENSE",
    "KEYWORDS",
    "CollectionMismatch",
    "DamagedCollection",
    "Hit",
    "Point",
    "SparseVector",
    "StoreLocked",
    "StoredPoint",
    "UnknownCollection",
    "VectorFilter",
    "VectorIndex",
    "open_vector_index",
]


def open_vector_index(settings: Settings) -> VectorIndex:
    """The vector engine the settings ask for.

    ``settings.storage.qdrant_url`` set: RemoteVectorIndex (qdrant-client, api key
    ``settings.storage.qdrant_api_key``). Otherwise: EdgeVectorIndex under ``settings.vectors_dir``
    (created 0700). No collection is opened yet, so StoreLocked comes from the first
    ``ensure_collection``. The engine modules are imported here, on first use.
    """
    if settings.storage.qdrant_url:
        from .remote import RemoteVectorIndex

        return RemoteVectorIndex(url=settings.storage.qdrant_url, api_key=settings.storage.qdrant_api_key)
    from .edge import EdgeVectorIndex

    return EdgeVectorIndex(settings.vectors_dir)
