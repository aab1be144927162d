"""The runtime the services share: settings, clock, stores, embedder, locks.

Built by whoever runs the services (the MCP server's lifespan, the CLI, a bench), who
may hand it the embedder and the vector index to use (``open(..., load_embedder=...,
open_vectors=...)``), e.g. one model shared by every runtime of a test session. The fact store opens at once; the vector index and
the embedding model load in the background (``start_background``), so the server
answers ``initialize`` immediately and the first call that needs the model waits.
Blocking engine calls run in worker threads (``run_sync``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from memvault.clock import Clock
from memvault.config import Settings
from memvault.embedding.embedder import Embedder, load_embedder
from memvault.embedding.model_cache import converting_now
from memvault.service.centroids import LANGUAGE_NEUTRAL, language_centroids
from memvault.service.datadir import prepare_data_dir
from memvault.service.errors import NotReady, StoreUnavailable
from memvault.service.failures import open_failure
from memvault.storage.facts import FactStore
from memvault.storage.vectors import open_vector_index
from memvault.storage.vectors.base import DamagedCollection, VectorIndex

log = logging.getLogger(__name__)

_pure_threads: set[threading.Thread] = set()
_pure_lock = threading.Lock()


def in_pure_work(thread: threading.Thread) -> bool:
    """Whether ``thread`` is running a ``Runtime.run_pure`` computation or a start-up step
    that writes nothing half (``pure``): nothing a process that has stopped serving needs
    to wait for, its result no longer used."""
    with _pure_lock:
        return thread in _pure_threads


def pure(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with the calling thread marked as in pure work (``in_pure_work``) while
    it runs: for a worker-thread computation whose result a stopped process does not need
    and which leaves nothing half-written if the process ends in its middle."""
    me = threading.current_thread()
    with _pure_lock:
        _pure_threads.add(me)
    try:
        return fn(*args)
    finally:
        with _pure_lock:
            _pure_threads.discard(me)

MEMORY_COLLECTION = "memories"
CENTROIDS_FILE = "language-centroids.json"
"""In the data dir: the language centroids of the model, kept between starts (``service.centroids``)."""

T = TypeVar("T")


EmbedderLoader = Callable[[Settings], Embedder]
"""Builds the embedder for a Settings (blocking; run in a worker thread); raises ModelUnavailable."""
VectorsOpener = Callable[[Settings], VectorIndex]
"""Opens the vector index for a Settings (blocking; run in a worker thread); raises StoreLocked."""


def default_embedder(settings: Settings) -> Embedder:
    """The configured model; where no pip package carries it, fetched from the hub once (logged)."""
    return load_embedder(settings, allow_download=True)


@dataclass(frozen=True)
class SetAside:
    """A damaged collection moved out of the way when it was opened (its points must be rebuilt).

    reason: what was wrong; moved_to: where its files went ("" if there were none).
    """

    reason: str
    moved_to: str


@dataclass
class Repairing:
    """A repair of one vector collection running in the background while calls are served.

    reason: what the start-up check found; total: points to write (0 while still counting);
    done: points written so far; started: unix seconds.
    """

    reason: str
    total: int = 0
    done: int = 0
    started: float = 0.0

    def describe(self, name: str) -> str:
        """One line for a person (``doctor``, recall's note)."""
        left = f"{self.done} of {self.total} points rewritten" if self.total else "comparing every point with SQLite"
        return f"vector collection {name!r} is being repaired in the background ({self.reason}; {left})"


@dataclass
class Runtime:
    """Everything a service needs. One per data dir and process.

    ``write_lock`` serialises memory writes; ``docs_lock`` serialises document indexing
    runs (searches never wait on either). ``set_aside``: collections found damaged when
    opened and made anew, by name, until the start-up check rebuilds them from SQLite
    (``memvault.service.upkeep.index_health``).
    """

    settings: Settings
    clock: Clock
    facts: FactStore
    load_embedder: EmbedderLoader = default_embedder
    open_vectors: VectorsOpener = open_vector_index
    write_lock: anyio.Lock = field(default_factory=anyio.Lock)
    docs_lock: anyio.Lock = field(default_factory=anyio.Lock)
    _vectors: VectorIndex | None = None
    _embedder: Embedder | None = None
    _ready: anyio.Event = field(default_factory=anyio.Event)
    _started: anyio.Event = field(default_factory=anyio.Event)
    _error: str | None = None
    _locked: bool = False
    _after_ready: Callable[[Runtime], Any] | None = None
    _reopen_lock: anyio.Lock = field(default_factory=anyio.Lock)
    set_aside: dict[str, SetAside] = field(default_factory=dict)
    repairing: dict[str, Repairing] = field(default_factory=dict)
    _background: anyio.abc.TaskGroup | None = None
    # Limits concurrent engine calls in worker threads (the model already uses both cores).
    _engine_limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(2))
    #: Blocking calls run so far (``run_sync``): every tool call that touches the model or the
    #: stores makes some, so housekeeping reads "no change since last look" as idle.
    work_done: int = 0

    @classmethod
    async def open(cls, settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                   open_vectors: VectorsOpener | None = None, clock: Clock | None = None) -> Runtime:
        """Create the data dir (0700) and open the fact store. Model and index load later (``load``).

        ``load_embedder`` / ``open_vectors``: what builds the model and the index (default:
        the configured model and engine). ``clock``: where every "now" comes from (default the
        system's; tests move time with ``Clock(offset_s)``). Raises StoreUnavailable (its message says what is
        wrong and what to do, the original exception is its cause) when the data dir or the
        database cannot be opened; nothing is left open then.
        """
        prepare_data_dir(settings.storage.data_dir, settings.db_path)
        try:
            facts = await FactStore.open(settings.db_path)
        except Exception as exc:
            raise StoreUnavailable(open_failure(exc, settings.storage.data_dir, settings.db_path)) from exc
        return cls(settings=settings, clock=clock or Clock(), facts=facts,
                   load_embedder=load_embedder or default_embedder,
                   open_vectors=open_vectors or open_vector_index)

    async def load(self, after_ready: Callable[[Runtime], Any] | None = None, *, rebuild: bool = False) -> None:
        """Load the embedder and the vector index in worker threads, then run ``after_ready``;
        while the index opens, prepare what queries need besides (``_prepare_queries``).
        Returns when all of it is done (calls are served from when ``after_ready`` has run).

        ``rebuild``: drop the memory collection first (``memvault reindex``: a new model;
        the points come back from SQLite through ``reconcile``). Never raises: a failure
        is kept and reported by every call that needs the model. A store held by another
        process (StoreLocked) is tried again by later calls, so this server recovers once
        the other one exits.
        """
        self._after_ready = after_ready
        async with anyio.create_task_group() as tg:  # ends when the query preparation and repairs end too
            self._background = tg
            try:
                await self._load(tg, after_ready, rebuild)
            finally:
                self._background = None

    def in_background(self, fn: Callable[[], Coroutine[Any, Any, Any]]) -> bool:
        """Run ``fn`` beside serving, in ``load``'s task group (which then ends when ``fn`` does);
        False (nothing started) when ``load`` is not running."""
        if self._background is None:
            return False
        self._background.start_soon(fn)
        return True

    async def _load(self, tg: anyio.abc.TaskGroup, after_ready: Callable[[Runtime], Any] | None,
                    rebuild: bool) -> None:
        # The index's engine is imported and its store opened while the model loads; its
        # collection is opened once the model is known (its id and dimension).
        opened: list[VectorIndex | Exception] = []
        store_open = anyio.Event()

        async def open_store() -> None:
            try:
                opened.append(await anyio.to_thread.run_sync(self.open_vectors, self.settings, abandon_on_cancel=True))
            except Exception as exc:
                opened.append(exc)
            finally:
                store_open.set()

        tg.start_soon(open_store)
        try:
            # Abandoned on cancellation (a signal stops the server, or the client leaves): loading
            # can take seconds (a first conversion of the model, written atomically), and neither
            # stopping nor the process's exit waits for it.
            try:
                self._embedder = await anyio.to_thread.run_sync(pure, self.load_embedder, self.settings,
                                                                abandon_on_cancel=True)
            except Exception:
                await store_open.wait()
                if opened and not isinstance(opened[0], Exception):
                    await anyio.to_thread.run_sync(opened[0].close)  # nothing will use it: the model failed
                raise
            log.info("model ready; opening the index")
            tg.start_soon(self._prepare_queries, self._embedder)
            await store_open.wait()
            try:
                await self._open_index(rebuild=rebuild, opened=opened[0])
            except Exception as exc:
                # Held by another process (StoreLocked), or half-created by one that
                # started at the same moment: later calls try again.
                log.error("vector store: %s", exc)
                self._error, self._locked = str(exc) or type(exc).__name__, True
        except Exception as exc:  # reported to the caller of every tool that needs it
            log.error("memvault could not start its model or index: %s", exc)
            self._error = str(exc) or type(exc).__name__
        finally:
            self._ready.set()
        try:
            if self._error is None and after_ready is not None:
                await after_ready(self)
        finally:
            self._started.set()
            log.info("start-up checks done; serving calls")

    async def _prepare_queries(self, emb: Embedder) -> None:
        """What the first recall would otherwise compute itself, done while the index opens: the
        language centroids of language-neutral ranking (read from the data dir's CENTROIDS_FILE
        when they belong to this model; else 80 short passages embedded, and kept there). A
        failure is logged only: the first recall computes them then."""
        if not LANGUAGE_NEUTRAL:
            return
        try:
            saved = self.settings.storage.data_dir / CENTROIDS_FILE
            await anyio.to_thread.run_sync(pure, language_centroids, emb, saved, abandon_on_cancel=True)
            log.info("language centroids ready")
        except Exception as exc:
            log.warning("preparing the language centroids failed (the first recall tries again): %s", exc)

    async def _open_index(self, *, rebuild: bool = False, opened: VectorIndex | Exception | None = None) -> None:
        """Open the memory collection; ``opened``: the store already opened (or why it failed), else it is opened now."""
        if isinstance(opened, Exception):
            raise opened
        vectors = opened if opened is not None else await anyio.to_thread.run_sync(self.open_vectors, self.settings)
        emb = self._embedder
        # Only reached once the model loaded: from load() right after it, or from
        # _retry_locked(), which runs only after load() got this far.
        assert emb is not None
        if rebuild:
            await self.run_sync(vectors.drop_collection, MEMORY_COLLECTION)
        await self.open_collection(MEMORY_COLLECTION, vectors)
        self._vectors = vectors
        log.info("model %s and index ready (dim %d)", emb.model_id, emb.dim)

    async def open_collection(self, name: str, vectors: VectorIndex | None = None) -> None:
        """Open vector collection ``name`` for the loaded model (``vectors``: the index, default the loaded one).

        A damaged collection (DamagedCollection) is set aside and made anew, empty: one
        line on stderr says so, and ``set_aside[name]`` records it for the start-up check,
        which rebuilds its points from SQLite before any call is served. Raises
        CollectionMismatch (built with another model), StoreLocked, and DamagedCollection
        when the engine cannot set a collection aside (a Qdrant server).
        """
        emb = self._embedder
        vectors = vectors or self._vectors
        assert emb is not None and vectors is not None  # only called once the model and index loaded
        try:
            await self.run_sync(vectors.ensure_collection, name, emb.dim, emb.model_id)
            return
        except DamagedCollection as exc:
            moved = await self.run_sync(vectors.set_aside, name)
            if moved is None:
                raise
            self.set_aside[name] = SetAside(exc.reason, moved)
            log.error("vector collection %r in %s is damaged (%s); %s; rebuilding it from SQLite",
                      name, exc.where, exc.reason, f"moved it to {moved}" if moved else "nothing kept aside")
        await self.run_sync(vectors.ensure_collection, name, emb.dim, emb.model_id)

    def model_state(self) -> str:
        """One word for ``memvault status``: ``preparing`` (converting the default model once for
        this machine), ``loading`` (the model or index is being loaded), ``checking`` (loaded;
        start-up housekeeping runs), ``ready``, or ``failed: <why>``."""
        if not self._ready.is_set():
            return "preparing" if converting_now() else "loading"
        if self._error is not None:
            return f"failed: {self._error}"
        return "ready" if self._started.is_set() else "checking"

    @property
    def error(self) -> str | None:
        """Why calls that need the model or the index are refused (None: they are not)."""
        return self._error

    def fail(self, reason: str, *, retry: bool = False) -> None:
        """Refuse every call that needs the index from now on, with ``reason`` (NotReady):
        start-up could not make the index agree with SQLite, and a partial index is never served.
        ``retry``: the cause may go away by itself (a full disk): every later call closes the
        index and tries to open and check it again, as after a store held by another process."""
        self._error = reason
        self._locked = self._locked or retry

    async def _retry_locked(self) -> None:
        """Try the embedded store again if another process held it, or start-up failed for a
        cause that may have gone (a full disk; ``fail(retry=True)``): a refused open fails at once."""
        async with self._reopen_lock:
            if not self._locked:
                return
            old, self._vectors = self._vectors, None
            if old is not None:  # opened, then its check failed: open it anew
                try:
                    await anyio.to_thread.run_sync(old.close)
                except Exception as exc:
                    log.warning("closing the vector index before opening it again: %s", exc)
            try:
                await self._open_index()
            except Exception as exc:
                self._error = str(exc) or type(exc).__name__
                return
            self._error, self._locked = None, False
            log.info("the vector store opened again (released by another process, or space freed); serving")
            if self._after_ready is not None:
                await self._after_ready(self)

    async def started(self) -> tuple[Embedder, VectorIndex]:
        """Wait until start-up housekeeping (index repair, expiry sweep) is done.

        Tool handlers call this first, so that no call reads an index that start-up is
        still repairing. Raises NotReady when the model or index failed to load.
        """
        await self._started.wait()
        if self._locked:
            await self._retry_locked()
        return await self.ready()

    async def wait_started(self) -> None:
        """Wait until start-up is over, whether it worked or not (``started_done`` is then True)."""
        await self._started.wait()

    def started_done(self) -> bool:
        """True once start-up housekeeping (index repair, expiry sweep) has finished."""
        return self._started.is_set()

    async def loaded(self) -> None:
        """Wait until loading the model and index has finished, whether it worked or not."""
        await self._ready.wait()

    async def ready(self) -> tuple[Embedder, VectorIndex]:
        """Wait for the model and index (not for start-up housekeeping); raises NotReady if they failed."""
        await self._ready.wait()
        if self._error is not None or self._embedder is None or self._vectors is None:
            raise NotReady(self._error or "the embedding model is not loaded")
        return self._embedder, self._vectors

    @property
    def vectors(self) -> VectorIndex | None:
        """The vector index once loaded (None before)."""
        return self._vectors

    async def run_sync(self, fn: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None) -> T:
        """Run a blocking call in a worker thread: engine calls, and CPU-heavy policy work (secret and
        importance scans, keyword vectors) so that a slow input delays only its own call.

        limiter: the thread slots to take one of; None: the engine's two (shared by every
        call, so a bulk job that holds one leaves the other to recall). A bulk job passes its
        own for the work it does beside its model runs, so that work never takes the slot
        recall counts on."""
        self.work_done += 1
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter or self._engine_limiter)

    async def run_pure(self, fn: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None) -> T:
        """``run_sync`` for a computation that touches no store (embedding, reading and chunking a
        file): a cancellation (a stop signal, the client's cancel) returns at once and leaves the
        thread to finish alone, its result unused, so that stopping never waits for it (nor does
        the process's exit: ``in_pure_work``). ``limiter``: as for ``run_sync``."""
        return await anyio.to_thread.run_sync(pure, fn, *args, limiter=limiter or self._engine_limiter,
                                              abandon_on_cancel=True)

    async def close(self) -> None:
        """Flush and close the index, then the fact store."""
        if self._vectors is not None:
            try:
                self._vectors.flush()
                self._vectors.close()
            except Exception as exc:  # closing must not hide the real shutdown reason
                log.warning("closing the vector index: %s", exc)
        await self.facts.close()
