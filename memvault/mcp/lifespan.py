"""Server lifespan: open the runtime, load the model in the background, keep house.

The runtime opens its fact store at once, so the server answers ``initialize``
immediately; the model and the index load in the background, then start-up
housekeeping runs (``memvault.service.upkeep.housekeeping``).

When the store cannot be opened (the data dir is a file or read-only, the database is
not SQLite, ...) or the settings are invalid, the server still starts: its lifespan
context is then an ``Unavailable`` naming the problem, ``initialize`` and the lists are
answered as usual, and every tool call, prompt and resource read answers with that
problem (``memvault.mcp.app``), so that the person reads it in their client rather
than "connection closed".
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from memvault.clock import Clock
from memvault.config import Settings
from memvault.service.errors import StoreUnavailable
from memvault.service.runtime import EmbedderLoader, Runtime, VectorsOpener
from memvault.service.upkeep.housekeeping import after_ready, housekeeping

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unavailable:
    """The lifespan context of a server that cannot serve: ``problem`` says why and what to do."""

    problem: str


@asynccontextmanager
async def _serving(rt: Runtime) -> AsyncIterator[Runtime]:
    """``rt`` with its model loading in the background and housekeeping running; closed on exit."""
    log.info("store open; the model and the index load in the background")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.load, after_ready)
            tg.start_soon(housekeeping, rt)
            try:
                yield rt
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):  # also when a signal cancelled serving: flush and close
            await rt.close()


@asynccontextmanager
async def running_runtime(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                          open_vectors: VectorsOpener | None = None) -> AsyncIterator[Runtime]:
    """A Runtime with its model loading in the background and housekeeping running; closed on exit.

    ``load_embedder`` / ``open_vectors`` go to ``Runtime.open`` (default: the configured
    model and engine). Raises StoreUnavailable (the fact store failed to open).
    """
    rt = await Runtime.open(settings, load_embedder=load_embedder, open_vectors=open_vectors)
    async with _serving(rt):
        yield rt


@asynccontextmanager
async def runtime_or_problem(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                             open_vectors: VectorsOpener | None = None, clock: Clock | None = None
                             ) -> AsyncIterator[Runtime | Unavailable]:
    """``running_runtime``, or an ``Unavailable`` when the store cannot be opened (logged as one line).
    ``clock``: as ``Runtime.open``."""
    try:
        rt = await Runtime.open(settings, load_embedder=load_embedder, open_vectors=open_vectors, clock=clock)
    except StoreUnavailable as exc:
        log.error("%s", exc)
        yield Unavailable(str(exc))
        return
    async with _serving(rt):
        yield rt


def make_lifespan(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                  open_vectors: VectorsOpener | None = None, clock: Clock | None = None
                  ) -> Callable[[Any], AbstractAsyncContextManager[Runtime | Unavailable]]:
    """Lifespan context manager factory for ``MCPServer(lifespan=...)``: ``runtime_or_problem`` per run."""

    def lifespan(_server: Any) -> AbstractAsyncContextManager[Runtime | Unavailable]:
        return runtime_or_problem(settings, load_embedder=load_embedder, open_vectors=open_vectors, clock=clock)

    return lifespan


def shared_lifespan(runtime: Runtime | Unavailable) -> Callable[[Any], AbstractAsyncContextManager[Any]]:
    """Lifespan factory that lends an already running ``runtime`` (the owner's) and never closes it."""

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[Runtime | Unavailable]:
        yield runtime

    return lifespan
