"""``memvault doctor``: what runs, what is stored, and each problem found with the command that fixes it.

Checks, in order: the data dir's owner process (pid, since, version, connections, idle
timer; a stale socket or status file left by a dead owner; the owner-wide settings in which
it, or a connected client, differs from this command's environment, which are not used
while it runs, see ``memvault.process.client_settings``); SQLite; the model (loaded
and one sentence embedded); the vector index against SQLite (live memories without a
point, points without a live memory). While an owner runs it holds the vector index, so
the index is checked only when no owner runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

from memvault import __version__
from memvault.cli.common import log_to_stderr, settings_of, store_flags
from memvault.config import Settings
from memvault.process.forwarder import owner_status
from memvault.process.handshake import HandshakeError
from memvault.process.owner_files import owner_files, pid_alive
from memvault.service.errors import StoreUnavailable
from memvault.service.runtime import MEMORY_COLLECTION, Runtime


async def run_doctor(settings: Settings, say: Callable[[str], object]) -> int:
    """Print the report line by line through ``say``; 0 when nothing is wrong, 1 otherwise."""
    problems: list[str] = []
    files = owner_files(settings.storage.data_dir)
    say(f"memvault {__version__}")
    say(f"data dir      {settings.storage.data_dir}")
    say(f"model cache   {settings.models_dir} (shared by every data dir)")

    try:
        status = await owner_status(files, settings)
    except HandshakeError as exc:
        status = None
        problems.append(f"{exc}")
    if status is not None:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["since"]))
        idle = "in use" if status.get("idle_s") is None else \
            f"idle {status['idle_s']:.0f} s of {status['idle_exit_s']:.0f} s before it exits"
        say(f"owner         pid {status['pid']}, memvault {status['version']}, since {since}, "
            f"{status['connections']} connection(s), {idle}")
        if status.get("differs"):
            say(f"settings      the owner runs with other values than these: {status.get('differs_text')}; "
                "the owner's apply to every client until it restarts (`memvault stop`)")
        for client in status.get("clients") or []:
            if client.get("differs"):
                say(f"settings      client pid {client.get('pid')} (in {client.get('cwd')}) has other values, "
                    f"not used: {', '.join('MEMVAULT_' + n.upper() for n in client['differs'])}")
    else:
        say("owner         none running (the next `memvault serve` starts one)")
        if files.socket.exists():
            problems.append(f"stale socket {files.socket} from an owner that died: the next `memvault serve` "
                            f"replaces it, or remove it: rm {files.socket}")
        if files.info.exists():
            try:
                pid = int(json.loads(files.info.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                pid = 0
            if not pid or not pid_alive(pid):
                problems.append(f"status file {files.info} names a dead owner (pid {pid}): "
                                f"rm {files.info}")

    t0 = time.perf_counter()
    try:
        rt = await Runtime.open(settings)
    except StoreUnavailable as exc:
        say(f"sqlite        FAILED {settings.db_path}")
        problems.append(str(exc))
        for p in problems:
            say(f"PROBLEM       {p}")
        return 1
    try:
        say(f"sqlite        ok (schema {await rt.facts.schema_version()}) {settings.db_path}")
        if status is not None:
            # The owner holds the vector index; only the model is checked here.
            emb = await rt.run_sync(rt.load_embedder, settings)
            say(f"model         ok {emb.model_id} dim={emb.dim} ({time.perf_counter() - t0:.1f}s incl. load)")
            say("vector index  held by the owner (checked when no owner runs)")
            for line in status.get("index") or []:
                say(f"vector index  {line}")
                if "being repaired" in line or "refused" in line or "too little room" in line:
                    problems.append(line)
        else:
            await rt.load()
            try:
                emb, vectors = await rt.ready()
            except Exception as exc:
                problems.append(f"model or vector index failed to load: {exc}")
                say(f"model/index   FAILED: {exc}")
            else:
                say(f"model         ok {emb.model_id} dim={emb.dim} ({time.perf_counter() - t0:.1f}s incl. load)")
                vec = emb.embed_queries(["doctor check"])
                say(f"embedding     ok norm={float((vec[0] ** 2).sum()) ** 0.5:.3f}")
                wanted = await rt.facts.indexable_ids(rt.clock.now())
                present = await rt.run_sync(vectors.ids, MEMORY_COLLECTION)
                missing, orphans = len(wanted - present), len(present - wanted)
                say(f"vector index  {type(vectors).__name__}: {len(present)} points for {len(wanted)} live memories")
                report = await rt.run_sync(vectors.disk_report)
                if report is not None:
                    say(f"index disk    {report[1]}")
                    if not report[0]:
                        problems.append(f"vector index disk: {report[1]}")
                if missing or orphans:
                    problems.append(f"index out of step with SQLite ({missing} live memories without a point, "
                                    f"{orphans} points without a live memory): run `memvault reindex`")
    finally:
        await rt.close()

    for p in problems:
        say(f"PROBLEM       {p}")
    if not problems:
        say("no problems found")
    return 1 if problems else 0


def add_parser(sub) -> None:
    """Add ``doctor`` to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("doctor", help="check the model, the stores and a round trip")
    store_flags(sp)
    sp.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the owner process, the stores, the model and a round trip; print each problem with its fix."""
    os.umask(0o077)
    log_to_stderr("WARNING")
    import anyio

    from memvault.config import ConfigError

    try:
        settings = settings_of(args)
    except ConfigError as exc:
        sys.stdout.write(f"PROBLEM       {exc}\n")
        return 2
    return anyio.run(run_doctor, settings, lambda line: sys.stdout.write(line + "\n"))
