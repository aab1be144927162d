"""Housekeeping while serving: start-up repair, the index flush timer, expiry sweeps.

Start-up (once the model and index are loaded): check the index against SQLite and
rebuild what disagrees (``index_health``; expired memories are purged on the way), purge
expired tasks, re-weigh documents indexed under an older keyword weighting.
While serving: flush the embedded index every ``FLUSH_INTERVAL_S`` (power-loss safety;
Qdrant Edge's WAL already survives a process crash), index rows left pending by a failed
index write (a full disk) every ``SETTLE_INTERVAL_S``, sweep expired records every
``SWEEP_INTERVAL_S``, build the embedded index's HNSW graph in a child process when
enough points are searched exactly (``index_build``; checked every ``CHECK_INTERVAL_S``,
the build runs beside this loop) and, when ``policies.consolidate_every_hours`` is set
(off by default), apply ``consolidate`` to every scope that often. Once a burst of work
is over (a whole timer period without a blocking call, ``Runtime.work_done``), the C
heap's freed pages are given back to the OS (``give_back_heap``): the model's and the
engine's buffers of a burst of calls are freed into glibc's arenas (one per worker
thread), which otherwise keep them resident for good; trimming only when idle spares
the calls the page faults of taking them back.
"""

from __future__ import annotations

import logging

import anyio
import anyio.abc

from memvault.embedding.lean_engine import give_back_heap
from memvault.service.documents.points import reweigh_documents
from memvault.service.indexing import settle_pending, sweep_expired
from memvault.service.memory.consolidate import consolidate_all
from memvault.service.profile.tasks import sweep_tasks
from memvault.service.runtime import Runtime
from memvault.service.upkeep.index_build import CHECK_INTERVAL_S, build_if_due
from memvault.service.upkeep.index_health import heal_index

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 2.0
"""Seconds between two flushes of the embedded index (fsync of its files: what a power loss can
take); ``bench.stalls`` measures what a flush costs the calls beside it (docs/benchmarks.md)."""
SWEEP_INTERVAL_S = 600.0
SETTLE_INTERVAL_S = 60.0
"""Seconds between two passes over rows left ``pending`` while serving (their index write failed)."""


async def after_ready(rt: Runtime) -> None:
    """First housekeeping once the model is loaded: check the index against SQLite and rebuild what
    disagrees (purging expired memories), purge expired tasks, bring documents indexed under an
    older keyword weighting up to date (in place)."""
    await heal_index(rt)  # never raises; refuses every call when the index cannot be trusted
    if rt.error is not None:
        return
    try:
        await sweep_tasks(rt)
    except Exception:
        log.exception("start-up sweep of expired tasks failed (will retry on the next sweep)")
    try:
        await reweigh_documents(rt)
    except Exception:
        log.exception("start-up re-weighing of document keyword vectors failed (index_docs retries it)")


async def housekeeping(rt: Runtime) -> None:
    """Run forever (until cancelled): flush the index, sweep expired records, build the HNSW
    index when due and (when set) consolidate on their timers."""
    await rt.loaded()
    async with anyio.create_task_group() as tg:
        await _timers(rt, tg)


async def _timers(rt: Runtime, tg: anyio.abc.TaskGroup) -> None:
    since_sweep = since_consolidate = since_settle = 0.0
    since_index = CHECK_INTERVAL_S  # checked once start-up housekeeping is done
    interval = FLUSH_INTERVAL_S
    every_h = rt.settings.policies.consolidate_every_hours
    building = False
    seen_work, heap_dirty = rt.work_done, False

    async def build() -> None:
        nonlocal building
        try:
            await build_if_due(rt)
        finally:
            building = False

    while True:
        await anyio.sleep(interval)
        heap_dirty = await _trim_when_idle(rt.work_done - seen_work, heap_dirty)
        since_sweep += interval
        since_consolidate += interval
        since_index += interval
        since_settle += interval
        if since_index >= CHECK_INTERVAL_S and not building and rt.started_done():
            since_index = 0.0
            building = True
            tg.start_soon(build)
        if every_h is not None and since_consolidate >= every_h * 3600.0 and rt.error is None:
            since_consolidate = 0.0
            try:
                await consolidate_all(rt)
            except Exception:
                log.exception("periodic consolidation failed (will retry at the next period)")
        if rt.vectors is not None:
            try:
                await rt.run_sync(rt.vectors.flush)
            except Exception as exc:
                log.warning("index flush failed: %s", exc)
        if since_settle >= SETTLE_INTERVAL_S and rt.started_done() and rt.error is None:
            since_settle = 0.0
            try:  # rows whose index write failed while serving (a full disk): indexed once it works again
                async with rt.write_lock:
                    await settle_pending(rt, rt.clock.now())
            except Exception as exc:
                log.warning("indexing rows left pending failed (tried again in %.0f s): %s", SETTLE_INTERVAL_S, exc)
        if since_sweep >= SWEEP_INTERVAL_S:
            since_sweep = 0.0
            try:
                await sweep_expired(rt)
                await sweep_tasks(rt)
            except Exception:
                log.exception("expiry sweep failed")
        seen_work = rt.work_done  # the timer's own calls above are not the clients' work


async def _trim_when_idle(work: int, heap_dirty: bool) -> bool:
    """One timer period's look at the heap; ``work``: blocking calls made by others during the
    period (``Runtime.work_done``). Some: a trim is owed (True). None, with a trim owed: trim
    now (in a worker thread: ``malloc_trim`` walks every arena) and False. Returns whether
    a trim is still owed."""
    if work > 0:
        return True
    if heap_dirty:
        await anyio.to_thread.run_sync(give_back_heap)
    return False
