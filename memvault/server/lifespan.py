"""Server lifespan: open the runtime, load the model in the background, keep house.

Background work while serving: model + index load (then reconcile the index with
SQLite and sweep expired memories), a flush timer for the embedded index (power-loss
safety; Qdrant Edge's WAL already survives a process crash), and a periodic expiry
sweep.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from memvault.config import Settings
from memvault.tools.docs import reweigh_documents
from memvault.tools.indexing import reconcile, sweep_expired
from memvault.tools.tasks import sweep_tasks
from memvault.tools.runtime import Runtime

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


async def _housekeeping(rt: Runtime) -> None:
    await rt._ready.wait()
    since_sweep = 0.0
    interval = rt.settings.flush_interval_s
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


def make_lifespan(settings: Settings) -> Callable:
    """Lifespan context manager factory for ``MCPServer(lifespan=...)``; yields the Runtime."""

    @asynccontextmanager
    async def lifespan(_server) -> AsyncIterator[Runtime]:
        rt = await Runtime.open(settings)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.load, after_ready)
                tg.start_soon(_housekeeping, rt)
                try:
                    yield rt
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await rt.close()

    return lifespan
