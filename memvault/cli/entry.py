"""Console script ``memvault``: serve, doctor, reindex, index, stats, status, stop, client-config,
export, import, consolidate, ui, context, hook(s): the parser of every command (each in its
module of ``memvault.cli``) and ``main``.
"""

from __future__ import annotations

import argparse
import os
import sys

from memvault import __version__
from memvault.cli.common import settings_of


def build_parser() -> argparse.ArgumentParser:
    """The ``memvault`` argument parser."""
    p = argparse.ArgumentParser(prog="memvault", description="Long-term memory MCP server.")
    p.add_argument("--version", action="version", version=f"memvault {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    from memvault.cli import (
        clients,
        consolidate,
        doctor,
        hooks,
        index,
        owner,
        reindex,
        serve,
        stats,
        transfer,
        ui,
    )

    for command in (serve, doctor, reindex, index, clients, transfer, consolidate, ui, hooks, stats, owner):
        command.add_parser(sub)
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
        from memvault.cli.serve import exit_even_if_threads_linger

        exit_even_if_threads_linger(code)
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
        settings = settings_of(args)
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
