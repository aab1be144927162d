"""``memvault reindex``: the vector index rebuilt from SQLite (after changing the model)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from memvault.cli.common import log_to_stderr, settings_of, store_flags


def add_parser(sub) -> None:
    """Add ``reindex`` to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("reindex", help="rebuild the vector index from SQLite (after changing the model)")
    store_flags(sp)
    sp.set_defaults(func=cmd_reindex)


def cmd_reindex(args: argparse.Namespace) -> int:
    """Drop the vector index and embed every live memory and every registered document chunk
    again with the configured model (documents from the chunk text SQLite stores)."""
    os.umask(0o077)
    log_to_stderr("WARNING")
    import anyio

    from memvault.service.indexing import reconcile
    from memvault.service.runtime import Runtime
    from memvault.service.upkeep.index_health import rebuild_documents

    settings = settings_of(args)

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
