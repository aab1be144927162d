"""``memvault index PATH... [--collection NAME] [--project P]``: index documents from a terminal.

Same handler as the ``index_docs`` tool, with a progress bar on stderr (files and
chunks) and one summary line on stdout. The person at the terminal may index any path
they name (the given paths are the allowed roots). Files under the current folder are
cited relative to it, others by absolute path. Project: ``--project`` (``""`` = shared by
every project), else the project of the git work tree the current folder is in, else
``MEMVAULT_PROJECT``, else the current folder itself (not ``/``, home or a system folder),
else the global scope: the order a server started in the same folder
follows for a client without roots, so what is indexed here is what that server searches.

Embedded Qdrant Edge allows one process per store, so while the data dir's owner process
runs (clients are connected) the run goes through it: ``index_docs`` over MCP, with the
current folder and the given paths as the client's roots; the summary is the same, without
the progress bar.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.cli.common import log_to_stderr, run_project, settings_of, store_flags

if TYPE_CHECKING:
    pass


def add_parser(sub) -> None:
    """Add the ``index`` sub-command to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("index", help="index documents (Markdown, text, code, PDF, HTML) for search_docs")
    store_flags(sp)
    sp.add_argument("paths", nargs="+", metavar="PATH", help="folders or files to index")
    sp.add_argument("--collection", default=None, help="document collection (default: 'default')")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_index)


def cmd_index(args: argparse.Namespace) -> int:
    """Run one incremental indexing pass and print its summary; 0 on success, 1 on error."""
    os.umask(0o077)

    log_to_stderr("WARNING")
    import anyio
    from tqdm import tqdm

    from memvault.service.documents.indexing import index_docs
    from memvault.service.errors import MemvaultError
    from memvault.service.runtime import Runtime
    from memvault.service.scope.project import make_scope

    settings = settings_of(args)
    scope = make_scope(settings.server.user_id, *run_project(args, settings))
    given = [Path(p).expanduser().resolve() for p in args.paths]
    bar = None

    def progress(done: int, total: int, chunks: int) -> None:
        nonlocal bar
        if args.no_progress:
            return
        if bar is None:
            bar = tqdm(total=total, unit="file", file=sys.stderr, dynamic_ncols=True, desc="indexing")
        bar.update(done - bar.n)
        bar.set_postfix(chunks=chunks, refresh=False)

    async def run() -> int:
        from memvault.process.forwarder import owner_status
        from memvault.process.owner_files import owner_files

        if await owner_status(owner_files(settings.storage.data_dir)) is not None:
            return await _through_owner(args, settings, scope.project, given)
        rt = await Runtime.open(settings)
        try:
            await rt.load()
            res = await index_docs(rt, scope, [str(p) for p in given], args.collection, given,
                                   cite_bases=[Path.cwd().resolve()], progress=progress)
        except MemvaultError as exc:
            sys.stderr.write(f"memvault index: {exc}\n")
            return 1
        finally:
            if bar is not None:
                bar.close()
            await rt.close()
        _summary(res.model_dump())
        return 0

    return anyio.run(run)


def _summary(res: dict) -> None:
    """The skipped paths and the parts withheld as secrets on stderr, and the one summary line on stdout."""
    skipped = res.get("skipped", [])
    for s in skipped:  # files that could not be read are among them
        sys.stderr.write(f"skipped {s['path']}: {s['reason']}\n")
    if res.get("skipped_total", 0) > len(skipped):
        sys.stderr.write(f"... and {res['skipped_total'] - len(skipped)} more skipped\n")
    for line in res.get("withheld", []):
        sys.stderr.write(f"not indexed (holds a secret) {line}\n")
    where = res["scope"]["project"] or "(global)"
    sys.stdout.write(
        f"{res['added']} added, {res['changed']} changed, {res['unchanged']} unchanged, {res['removed']} removed; "
        f"{res['chunks_embedded']} chunks embedded ({res['chunks_total']} in collection {res['collection']!r}, "
        f"project {where}) in {res['seconds']:.1f}s\n"
    )


async def _through_owner(args: argparse.Namespace, settings, project: str, given: list[Path]) -> int:
    """Index through the running owner: ``index_docs`` from a ``memvault serve`` client of it."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import ListRootsResult, Root
    from pydantic import FileUrl

    cwd = Path.cwd().resolve()
    roots = [cwd, *(p if p.is_dir() else p.parent for p in given)]

    async def list_roots(context: Any) -> ListRootsResult:  # the name the SDK calls it by
        return ListRootsResult(roots=[Root(uri=FileUrl(r.as_uri())) for r in dict.fromkeys(roots)])

    params = StdioServerParameters(command=sys.executable, cwd=str(cwd), env=dict(os.environ),
                                   args=["-m", "memvault", "serve", "--log-level", "WARNING",
                                         "--data-dir", str(settings.storage.data_dir)])
    sys.stderr.write("memvault index: the data dir's owner process is running; indexing through it\n")
    arguments = {"paths": [str(p) for p in given], "project": project}
    if args.collection is not None:
        arguments["collection"] = args.collection
    async with Client(params, list_roots_callback=list_roots, read_timeout_seconds=3600) as client:
        res = await client.call_tool("index_docs", arguments)
    if res.is_error or res.structured_content is None:
        text = " ".join(getattr(c, "text", "") for c in res.content)
        sys.stderr.write(f"memvault index: {text}\n")
        return 1
    _summary(res.structured_content)
    return 0
