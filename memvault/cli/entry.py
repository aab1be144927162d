"""Console script ``memvault``: serve, doctor, reindex, index, stats, status, stop, client-config,
export, import, consolidate, ui, context, hook(s).

``memvault serve`` runs the MCP server on stdio (stdout is the protocol: everything
else goes to stderr). Flags override ``MEMVAULT_*`` environment settings.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys
import time
from pathlib import Path

from memvault import __version__

LINGER_S = 2.0
"""After serving, how long the process waits for library threads to end before it exits anyway (seconds)."""

_FLAGS = {"data_dir": "--data-dir", "user_id": "--user", "project": "--project"}

log = logging.getLogger("memvault")


def _settings(args: argparse.Namespace):
    """The settings with the command's flags applied; raises ConfigError (one line: what, value, allowed)."""
    from memvault.config import load_settings

    overrides = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "user", None):
        overrides["user_id"] = args.user
    if getattr(args, "project", None) is not None:
        overrides["project"] = args.project
    return load_settings({k: v for k, v in _FLAGS.items() if k in overrides}, **overrides)


def _log_to_stderr(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _start_model_early(settings) -> None:
    """For a process that will load the model: when a core is free, begin the model load
    beside the imports (``memvault.embedding.preload``: most of it runs without the GIL),
    before the SDK and the services are imported; and keep the garbage collector off during
    those imports (``_imports_done`` turns it back on).

    The imports create some 100,000 objects that all live as long as the process; the
    collector's full passes over them while they are created are wasted work (~0.1 s).
    """
    gc.disable()
    from memvault.embedding import preload

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
    _log_to_stderr(args.log_level)
    log.info("serve: started (memvault %s)", __version__)
    from memvault.config import ConfigError

    try:
        settings = _settings(args)
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
        _start_model_early(settings)
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
    from memvault.process.forwarder import run_forwarder

    return run_forwarder(settings)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the owner process, the stores, the model and a round trip; print each problem with its fix."""
    os.umask(0o077)
    _log_to_stderr("WARNING")
    import anyio

    from memvault.cli.doctor import run_doctor
    from memvault.config import ConfigError

    try:
        settings = _settings(args)
    except ConfigError as exc:
        sys.stdout.write(f"PROBLEM       {exc}\n")
        return 2
    return anyio.run(run_doctor, settings, lambda line: sys.stdout.write(line + "\n"))


def cmd_reindex(args: argparse.Namespace) -> int:
    """Drop the vector index and embed every live memory and every registered document chunk
    again with the configured model (documents from the chunk text SQLite stores)."""
    os.umask(0o077)
    _log_to_stderr("WARNING")
    import anyio

    from memvault.service.indexing import reconcile
    from memvault.service.runtime import Runtime
    from memvault.service.upkeep.index_health import rebuild_documents

    settings = _settings(args)

    async def run() -> int:
        from memvault.process.forwarder import owner_status
        from memvault.process.owner_files import owner_files

        status = await owner_status(owner_files(settings.storage.data_dir))
        if status is not None:
            # Rebuilding swaps the whole index (e.g. for another model): not under connected clients.
            sys.stderr.write(f"memvault reindex: the owner process (pid {status['pid']}) serves "
                             f"{status['connections']} client(s) from this index; close them (the owner "
                             f"exits {settings.server.owner_idle_s:g} s later) and run reindex again\n")
            return 1
        rt = await Runtime.open(settings)
        try:
            await rt.load(rebuild=True)
            emb, _ = await rt.ready()
            t0 = time.perf_counter()
            fixed = await reconcile(rt)
            chunks = await rebuild_documents(rt)
            sys.stdout.write(f"re-embedded {fixed['reindexed']} memories and {chunks} document chunks with "
                             f"{emb.model_id} in {time.perf_counter() - t0:.1f}s\n")
            return 0
        except Exception as exc:
            sys.stderr.write(f"memvault reindex: {exc}\n")
            return 1
        finally:
            await rt.close()

    return anyio.run(run)


def build_parser() -> argparse.ArgumentParser:
    """The ``memvault`` argument parser."""
    p = argparse.ArgumentParser(prog="memvault", description="Long-term memory MCP server.")
    p.add_argument("--version", action="version", version=f"memvault {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
        sp.add_argument("--user", help="user id / tenant (env MEMVAULT_USER_ID)")
        sp.add_argument("--project", help="project when the client has no roots and the current folder is in no "
                        "git work tree; beats the plain folder (env MEMVAULT_PROJECT); for index: the project, '' = shared")

    sp = sub.add_parser("serve", help="run the MCP server on stdio")
    common(sp)
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

    sp = sub.add_parser("doctor", help="check the model, the stores and a round trip")
    common(sp)
    sp.set_defaults(func=cmd_doctor)

    sp = sub.add_parser("reindex", help="rebuild the vector index from SQLite (after changing the model)")
    common(sp)
    sp.set_defaults(func=cmd_reindex)

    from memvault.cli.index import add_parser as add_index_parser

    add_index_parser(sub, common)

    from memvault.cli.clients import add_parser as add_clients_parser

    add_clients_parser(sub)

    from memvault.cli.transfer import add_parser as add_transfer_parser

    add_transfer_parser(sub)

    from memvault.cli.consolidate import add_parser as add_consolidate_parser

    add_consolidate_parser(sub, common)
    from memvault.cli.ui import add_parser as add_ui_parser

    add_ui_parser(sub)
    from memvault.cli.hooks import add_parser as add_hooks_parser

    add_hooks_parser(sub)

    from memvault.cli.stats import add_parser as add_stats_parser

    add_stats_parser(sub, common)
    from memvault.cli.owner import add_parser as add_owner_parser

    add_owner_parser(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memvault`` console script."""
    # Before anything imports onnxruntime: no device id written under ~/.cache/Microsoft.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    given = sys.argv[1:] if argv is None else argv
    if given[:1] in (["context"], ["hook"], ["hooks"]):  # client hooks: their own parser, no settings import
        from memvault.cli.hooks import main as hooks_main

        return hooks_main(given)
    args = build_parser().parse_args(argv)
    from memvault.config import ConfigError
    from memvault.service.errors import MemvaultError

    if args.command not in NO_MODEL_PREPARATION:
        _prepare_model(args)
    try:
        code = args.func(args)
    except ConfigError as exc:  # the other commands: one line, no traceback
        sys.stderr.write(f"memvault {args.command}: {exc}\n")
        return 2
    except MemvaultError as exc:  # e.g. a data dir or database that cannot be opened
        sys.stderr.write(f"memvault {args.command}: {exc}\n")
        return 1
    if args.command == "serve":
        _exit_even_if_threads_linger(code)
    return code


NO_MODEL_PREPARATION = frozenset({"serve", "status", "stop"})
"""Commands that never prepare the model first: ``serve`` answers its client at once (its
owner prepares the model in the background), ``status`` / ``stop`` only talk to the owner."""


def _prepare_model(args: argparse.Namespace) -> None:
    """Before a command a person runs: convert the default model into the per-user cache when it
    is missing (once per machine), with a line on stderr before and after
    (``memvault.embedding.model_cache``). A failure is one line; the command goes on (and the
    model's next load reports what is wrong)."""
    from memvault.config import ConfigError

    try:
        settings = _settings(args)
    except ConfigError:
        return  # the command itself reports it
    from memvault.embedding.model_cache import prepare

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    try:
        prepare(settings, say)
    except Exception as exc:
        say(f"memvault: the embedding model could not be prepared now ({exc}); `memvault doctor` says more")


def _exit_even_if_threads_linger(code: int) -> None:
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
