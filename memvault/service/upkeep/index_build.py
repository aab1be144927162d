"""When to build the embedded index's HNSW graph (the build itself: ``VectorIndex.build_index``).

A collection is searched exactly until ``HNSW_AFTER_POINTS`` of its points are
searched exactly (all of them before a first build, those written since the last build
after); then its HNSW index is built in a child process and swapped in, calls going on
meanwhile (Qdrant Edge; a Qdrant server indexes by itself). Checked at start and every
``CHECK_INTERVAL_S`` by the housekeeping loop; one build at a time.
"""

from __future__ import annotations

import logging
from functools import partial

import anyio
import anyio.to_thread

from memvault.service.documents.collection import DOCS_COLLECTION
from memvault.service.runtime import MEMORY_COLLECTION, Runtime
from memvault.storage.vectors.base import UnknownCollection

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 60.0
"""Seconds between two checks of whether a collection needs its HNSW index (re)built."""
HNSW_AFTER_POINTS = 20_000
"""Points searched exactly after which a collection's HNSW index is built (0 = never): exact
search stays within recall's latency up to about this size (``bench.engine``, docs/benchmarks.md)."""


async def due_collection(rt: Runtime) -> str | None:
    """The first collection (memories, then documents) whose exactly searched points reached
    ``HNSW_AFTER_POINTS``; None when none did, it is 0, the index is not
    loaded or a build already runs."""
    threshold = HNSW_AFTER_POINTS
    vectors = rt.vectors
    if threshold <= 0 or vectors is None or rt.error is not None:
        return None
    for name in (MEMORY_COLLECTION, DOCS_COLLECTION):
        try:
            state = await rt.run_sync(vectors.index_state, name)
        except UnknownCollection:
            continue
        if state is None or state.building:
            return None
        if state.unindexed >= threshold:
            return name
    return None


async def build_if_due(rt: Runtime) -> dict | None:
    """Build the HNSW index of the collection ``due_collection`` names, if any; returns the
    build's report (None: nothing built). Never raises (a failed build is logged and tried
    again at a later check). The wait runs in a thread of its own, outside the engine
    limiter, so calls keep both engine slots; cancelling abandons the wait (``close``
    kills the child)."""
    name = await due_collection(rt)
    vectors = rt.vectors
    if name is None or vectors is None:
        return None
    log.info("building the HNSW index of vector collection %r in a child process", name)
    try:
        return await anyio.to_thread.run_sync(partial(vectors.build_index, name), abandon_on_cancel=True)
    except Exception:
        log.exception("building the HNSW index of vector collection %r failed (tried again later)", name)
        return None
