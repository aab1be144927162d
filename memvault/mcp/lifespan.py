"""Server lifespan: open the runtime, load the model in the background, keep house.

The runtime opens its fact store at once, so the server answers ``initialize``
immediately; the model and the index load in the background, then start-up
housekeeping runs (``memvault.service.housekeeping``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from memvault.config import Settings
from memvault.service.housekeeping import after_ready, housekeeping
from memvault.service.runtime import EmbedderLoader, Runtime, VectorsOpener


@asynccontextmanager
async def running_runtime(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                          open_vectors: VectorsOpener | None = None) -> AsyncIterator[Runtime]:
    """A Runtime with its model loading in the background and housekeeping running; closed on exit.

    ``load_embedder`` / ``open_vectors`` go to ``Runtime.open`` (default: the configured
    model and engine). Raises what ``Runtime.open`` raises (the fact store failed to open).
    """
    rt = await Runtime.open(settings, load_embedder=load_embedder, open_vectors=open_vectors)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.load, after_ready)
            tg.start_soon(housekeeping, rt)
            try:
                yield rt
            finally:
                tg.cancel_scope.cancel()
    finally:
        await rt.close()


def make_lifespan(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                  open_vectors: VectorsOpener | None = None
                  ) -> Callable[[Any], AbstractAsyncContextManager[Runtime]]:
    """Lifespan context manager factory for ``MCPServer(lifespan=...)``: ``running_runtime`` per run."""

    def lifespan(_server: Any) -> AbstractAsyncContextManager[Runtime]:
        return running_runtime(settings, load_embedder=load_embedder, open_vectors=open_vectors)

    return lifespan


def shared_lifespan(runtime: Runtime) -> Callable[[Any], AbstractAsyncContextManager[Runtime]]:
    """Lifespan factory that lends an already running ``runtime`` (the owner's) and never closes it."""

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[Runtime]:
        yield runtime

    return lifespan
