"""Housekeeping while serving: start-up repair, the index flush timer, expiry sweeps.

Start-up (once the model and index are loaded): reconcile the index with SQLite, purge
expired memories and tasks, re-weigh documents indexed under an older keyword weighting.
While serving: flush the embedded index every ``flush_interval_s`` (power-loss safety;
Qdrant Edge's WAL already survives a process crash) and sweep expired records every
``SWEEP_INTERVAL_S``.
"""

from __future__ import annotations

import logging

import anyio

from memvault.service.docs_index import reweigh_documents
from memvault.service.indexing import reconcile, sweep_expired
from memvault.service.runtime import Runtime
from memvault.service.tasks import sweep_tasks

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 600.0


async def after_ready(rt: Runtime) -> None:
    """First housekeeping once the model is loaded: repair the index, purge expired memories and
    tasks, bring documents indexed under an older keyword weighting up to date (in place)."""
    try:
        await reconcile(rt)
        await sweep_expired(rt)
        await sweep_tasks(rt)
    except Exception:
        log.exception("start-up reconcile/sweep failed (will retry on the next sweep)")
    try:
        await reweigh_documents(rt)
    except Exception:
        log.exception("start-up re-weighing of document keyword vectors failed (index_docs retries it)")


async def housekeeping(rt: Runtime) -> None:
    """Run forever (until cancelled): flush the index and sweep expired records on their timers."""
    await rt.loaded()
    since_sweep = 0.0
    interval = rt.settings.storage.flush_interval_s
    while True:
        await anyio.sleep(interval)
        since_sweep += interval
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
