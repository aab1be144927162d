"""Start loading the embedding model at process start, before the MCP SDK is imported.

``memvault serve`` spends its first second importing the SDK and building the server;
the model load (reading and preparing the ONNX model) does not need any of that. An
``EarlyEmbedder`` starts the load in a daemon thread the moment it is created, and is
then handed to the server as its ``load_embedder``: the runtime's background load
(``Runtime.load``) waits for that thread instead of starting from zero. The module
imports nothing heavy itself (the model code is imported inside the thread).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.embedding.embedder import Embedder

log = logging.getLogger(__name__)


class EarlyEmbedder:
    """An ``EmbedderLoader`` whose load began when it was created (in a daemon thread).

    ``EarlyEmbedder(settings)`` starts ``memvault.service.runtime.default_embedder(settings)``
    at once; calling it (blocking, as every EmbedderLoader) waits for that load and returns
    its Embedder, or raises what the load raised (ModelUnavailable, ...). Called with other
    settings than the ones it started with, it loads those the ordinary way. The thread is a
    daemon: a process that stops before the load ends does not wait for it.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._result: Embedder | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self.started_at = time.perf_counter()
        self.seconds: float | None = None  # how long the load took, once done
        threading.Thread(target=self._run, name="memvault-model-load", daemon=True).start()

    def _run(self) -> None:
        try:
            from memvault.service.runtime import default_embedder

            self._result = default_embedder(self.settings)
        except BaseException as exc:  # re-raised by __call__ in the thread that waits
            self._error = exc
        finally:
            self.seconds = time.perf_counter() - self.started_at
            log.info("model loaded in %.0f ms (started at process start)", self.seconds * 1000)
            self._done.set()

    def __call__(self, settings: Settings) -> Embedder:
        if settings is not self.settings:
            from memvault.service.runtime import default_embedder

            return default_embedder(settings)
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None  # set whenever no error was
        return self._result

    def __repr__(self) -> str:
        state: Any = "loading" if not self._done.is_set() else ("failed" if self._error else "loaded")
        return f"EarlyEmbedder({state})"
