"""``memvault serve``: the MCP server on stdio (stdout is the protocol: everything else goes to
stderr), relayed to the data dir's owner process by default; or the owner itself (``--owner``,
``--http``); or alone in this process (``--no-owner``). Flags override ``MEMVAULT_*`` settings.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys
import time

from memvault import __version__
from memvault.cli.common import log_to_stderr, settings_of, store_flags

LINGER_S = 2.0
"""After serving, how long the process waits for library threads to end before it exits anyway (seconds)."""

log = logging.getLogger("memvault")


def add_parser(sub) -> None:
    """Add ``serve`` to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("serve", help="run the MCP server on stdio")
    store_flags(sp)
    sp.add_argument("--log-level", default="INFO", help="stderr log level (default INFO)")
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--no-owner", action="store_true",
                      help="serve in this process alone, without the shared owner (env MEMVAULT_OWNER=false)")
    mode.add_argument("--owner", action="store_true",
                      help="run the data dir's owner process (memvault serve starts it when needed)")
    mode.add_argument("--http", action="store_true",
                      help="be the data dir's owner and also serve streamable HTTP at /mcp (bearer tokens: "
                      "MEMVAULT_HTTP_TOKENS_FILE, required off loopback)")
    sp.add_argument("--host", default="127.0.0.1", help="with --http: address to bind (default 127.0.0.1)")
    sp.add_argument("--port", type=int, default=8765, help="with --http: port (default 8765)")
    sp.set_defaults(func=cmd_serve)


def _start_model_early(settings, prepare: bool = True) -> None:
    """For a process that will load the model: on a machine's first start, begin converting
    the model in a child process (``preload.start_preparing``; ``prepare`` False: the owner a
    forwarder spawned, whose forwarder began it already); else, when a core is free,
    begin the model load beside the imports (``memvault.embedding.preload``: most of it runs without the GIL),
    before the SDK and the services are imported; and keep the garbage collector off during
    those imports (``_imports_done`` turns it back on).

    The imports create some 100,000 objects that all live as long as the process; the
    collector's full passes over them while they are created are wasted work (~0.1 s).
    """
    gc.disable()
    from memvault.embedding import preload

    if prepare and preload.start_preparing(settings):  # a first start: the conversion runs beside the imports
        return
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except OSError:  # no load average here: assume a free core
        load, cores = 0.0, 2
    if preload.core_free(load, cores):
        preload.start(settings)
    else:
        log.info("serve: the machine is busy (load %.1f on %d cores): the model loads after the imports",
                 load, cores)


def _imports_done() -> None:
    """The start-up imports are done: what exists now is kept out of every later collection
    (``gc.freeze``), and the collector runs again."""
    gc.freeze()
    gc.enable()
    log.info("serve: imports done")


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve one MCP client on stdio until it closes: relayed to the data dir's owner process
    (started on demand) by default; in this process with ``--no-owner``; ``--owner`` runs
    the owner itself (what forwarders start)."""
    os.umask(0o077)  # data dir 0700, files 0600, including the vector engine's
    log_to_stderr(args.log_level)
    log.info("serve: started (memvault %s)", __version__)
    from memvault.config import ConfigError

    try:
        settings = settings_of(args)
    except ConfigError as exc:
        # One line on stderr; a stdio client is still answered, each call with this sentence.
        log.error("%s", exc)
        if args.http or args.owner:
            return 2
        import anyio

        from memvault.process.forwarder import serve_unavailable

        anyio.run(serve_unavailable, str(exc))
        return 2
    if args.http:
        _start_model_early(settings)
        from memvault.process.owner import http_endpoint, run_owner
        from memvault.service.errors import InvalidArgument

        _imports_done()
        try:
            endpoint = http_endpoint(settings, args.host, args.port)
        except InvalidArgument as exc:
            sys.stderr.write(f"memvault serve --http: {exc}\n")
            return 2
        return run_owner(settings, endpoint)
    if args.owner:
        _start_model_early(settings, prepare=False)
        from memvault.process.owner import run_owner

        _imports_done()
        return run_owner(settings)
    if args.no_owner or not settings.server.owner or not hasattr(socket, "AF_UNIX"):
        _start_model_early(settings)
        import anyio

        from memvault.mcp.app import build_server
        from memvault.mcp.stdio import serve_stdio

        server = build_server(settings)
        _imports_done()
        anyio.run(serve_stdio, server)
        return 0
    from memvault.embedding import preload
    from memvault.service.datadir import prepare_data_dir
    from memvault.service.errors import StoreUnavailable

    try:
        prepare_data_dir(settings.storage.data_dir, settings.db_path)
    except StoreUnavailable:
        pass  # no owner will start: run_forwarder tells the client why
    else:
        preload.start_preparing(settings)  # a first start: converting begins before the owner is spawned
    from memvault.process.forwarder import run_forwarder

    return run_forwarder(settings)


def exit_even_if_threads_linger(code: int) -> None:
    """End the process now if a non-daemon thread (a library's) would keep it alive after serving.

    Serving is over (stdin closed, or a signal): the stores are closed and every answer
    is written, so nothing is lost by not waiting for such a thread. A thread still
    computing for a call that was cancelled (``Runtime.run_pure``: an embedding run of an
    indexing job) is not waited for at all.
    """
    import threading

    from memvault.service.runtime import in_pure_work

    deadline = time.monotonic() + LINGER_S
    for t in threading.enumerate():  # a closed connection's thread ends a moment later
        if t is not threading.main_thread() and not t.daemon and not in_pure_work(t):  # never wait for
            t.join(max(0.0, deadline - time.monotonic()))  # a computation whose result nobody uses
    threads = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if not threads:
        return
    lingering = [t.name for t in threads if not in_pure_work(t)]
    if lingering:
        log.warning("exiting although threads still run: %s", ", ".join(lingering))
    else:
        log.info("exiting without waiting for %d cancelled computation(s)", len(threads))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
