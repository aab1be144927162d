"""Housekeeping while serving: start-up repair, the index flush timer, expiry sweeps.

Start-up (once the model and index are loaded): check the index against SQLite and
rebuild what disagrees (``index_health``; expired memories are purged on the way), purge
expired tasks, re-weigh documents indexed under an older keyword weighting.
While serving: flush the embedded index every ``flush_interval_s`` (power-loss safety;
Qdrant Edge's WAL already survives a process crash), sweep expired records every
``SWEEP_INTERVAL_S`` and, when ``policies.consolidate_every_hours`` is set (off by
default), apply ``consolidate`` to every scope that often.
"""

from __future__ import annotations

import logging

import anyio

from memvault.service.consolidate import consolidate_all
from memvault.service.docs_index import reweigh_documents
from memvault.service.index_health import heal_index
from memvault.service.indexing import sweep_expired
from memvault.service.runtime import Runtime
from memvault.service.tasks import sweep_tasks

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 600.0


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
    """Run forever (until cancelled): flush the index, sweep expired records and (when set)
    consolidate on their timers."""
    await rt.loaded()
    since_sweep = since_consolidate = 0.0
    interval = rt.settings.storage.flush_interval_s
    every_h = rt.settings.policies.consolidate_every_hours
    while True:
        await anyio.sleep(interval)
        since_sweep += interval
        since_consolidate += interval
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
        if since_sweep >= SWEEP_INTERVAL_S:
            since_sweep = 0.0
            try:
                await sweep_expired(rt)
                await sweep_tasks(rt)
            except Exception:
                log.exception("expiry sweep failed")
