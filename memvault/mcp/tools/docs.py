"""MCP wrappers of the document tools: ``index_docs`` and ``search_docs``.

Thin, like ``memvault.mcp.tools.memory``: resolve the scope and the roots, call the handler in
``memvault.service.documents.indexing`` / ``memvault.service.documents.search``. ``index_docs`` may read only
inside the client's MCP roots (when it sends none: the folder of its project, the repository's
work tree or the plain folder it started in, see docs/scope.md) and the folders in the client's
``docs_allowed_dirs`` (in the owner: the connection's, sent by its forwarder); it asks the client
for its roots on every call (not only once per connection, as the project resolver does), since
they bound what may be read.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp_types import ListRootsResult, ToolAnnotations
from pydantic import Field

from memvault.mcp import connection
from memvault.mcp.ctx import Ctx, runtime
from memvault.mcp.errors import reported
from memvault.mcp.http import request_user
from memvault.mcp.scope import Roots, resolve_scope, workspace_of
from memvault.service.documents.indexing import index_docs as index_handler
from memvault.service.documents.models import IndexDocsResult, SearchDocsResult
from memvault.service.documents.search import search_docs as search_handler

log = logging.getLogger(__name__)

Collection = Annotated[
    str | None,
    Field(description="Document collection, e.g. 'handbook'; omit for the default collection (index) or all (search)."),
]
Project = Annotated[
    str | None,
    Field(description="Omit for the current project; '' for documents shared by every project."),
]


async def workspace_roots(ctx: Ctx) -> ListRoots | None:
    """Resolver: the client's MCP roots on every call (None when it has no roots capability)."""
    caps = ctx.client_capabilities
    if caps is None or caps.roots is None:
        return None
    return ListRoots()


WorkspaceRoots = Annotated[ListRootsResult | None, Resolve(workspace_roots)]



def root_folders(result: ListRootsResult | None) -> list[Path]:
    """Local folders named by the ``file://`` roots of a ``roots/list`` result, in order."""
    if result is None:
        return []
    out = []
    for root in result.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.path:
            out.append(Path(unquote(parsed.path)))
    return out


PROGRESS_EVERY_S = 1.0
"""Seconds between two progress notifications of one index_docs call at most."""


def progress_message(done: int, total: int, chunks: int, elapsed_s: float) -> str:
    """'12/80 files, 340 chunks embedded, about 3 min left' (no estimate before the first file)."""
    text = f"{done}/{total} files, {chunks} chunks embedded"
    if 0 < done < total:
        left = elapsed_s / done * (total - done)
        text += f", about {round(left)} s left" if left < 90 else f", about {round(left / 60)} min left"
    return text


class ProgressReporter:
    """Turns index_docs's progress callback into MCP progress notifications, at most one per
    ``PROGRESS_EVERY_S`` (the SDK sends none when the client's request had no progressToken)."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx
        self._started = time.monotonic()
        self._state: tuple[int, int, int] | None = None
        self._sent: tuple[int, int, int] | None = None
        self._changed = anyio.Event()

    def update(self, done: int, total: int, chunks: int) -> None:
        """The handler's ``progress(files_done, files_total, chunks_embedded)`` (on the event loop)."""
        self._state = (done, total, chunks)
        self._changed.set()

    async def run(self) -> None:
        """Send the latest state whenever it changed, until cancelled."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            if not await self.send():
                return
            await anyio.sleep(PROGRESS_EVERY_S)

    async def send(self) -> bool:
        """Send the latest state unless it was sent already; False when the client cannot be told."""
        if self._state is None or self._state == self._sent:
            return True
        done, total, chunks = self._sent = self._state
        try:
            await self._ctx.report_progress(done, total, progress_message(done, total, chunks,
                                                                          time.monotonic() - self._started))
        except Exception as exc:  # the client went away: progress is a courtesy, the work goes on
            log.debug("progress notification not sent: %s", exc)
            return False
        return True


def register_doc_tools(mcp: MCPServer) -> None:
    """Register index_docs / search_docs on ``mcp``."""

    @mcp.tool(
        title="Index documents",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def index_docs(
        paths: Annotated[list[str], Field(description="Folders or files to index, absolute or relative to the workspace root, e.g. ['docs', 'README.md'].")],
        ctx: Ctx,
        roots: WorkspaceRoots,
        collection: Collection = None,
        project: Project = None,
    ) -> IndexDocsResult:
        """Index documentation (Markdown, reStructuredText, text, source code, HTML, PDF) so that
        search_docs can find and cite it. Incremental (unchanged files cost nothing); .gitignore is
        honoured. Only paths inside the
        workspace roots (or configured folders) are read."""
        rt = runtime(ctx)
        folders = root_folders(roots)
        scope = await resolve_scope(ctx, rt.settings, project, roots)
        conn = connection.current()
        workspace = conn.workspace if conn is not None else workspace_of(ctx)
        if not folders:  # no roots: the folder of the client's project (docs/scope.md)
            started = await workspace.start_project()
            if started is not None:
                folders = [started.top]
        configured = conn.docs_allowed_dirs if conn is not None and conn.docs_allowed_dirs is not None \
            else rt.settings.documents.docs_allowed_dirs
        allowed = [*folders, *configured]
        if not allowed:
            raise ToolError(f"index_docs has no folder it may read: this client offers no workspace roots, it was "
                            f"started in {workspace.start_dir}, which is no project folder (the home folder, / or "
                            "a system folder), and its MEMVAULT_DOCS_ALLOWED_DIRS is empty. Start the client in "
                            "the project's folder, set MEMVAULT_DOCS_ALLOWED_DIRS in its server entry, or run "
                            "`memvault index PATH` in a terminal.")
        # Over HTTP with tokens (several people), what a user indexes is theirs alone (docs_owner).
        owner = scope.user_id if rt.settings.server.http_tokens_file is not None \
            and request_user(ctx.request_context.request) is not None else None
        reporter = ProgressReporter(ctx)
        result: IndexDocsResult | None = None
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(reporter.run)
            try:
                result = await index_handler(rt, scope, paths, collection, allowed, cite_bases=folders,
                                             progress=reporter.update, owner=owner)
            except Exception as exc:  # raised as it is below, not wrapped in the task group's exception group
                failure = exc
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert result is not None
        await reporter.send()  # the last state (all files done), if the throttle held it back
        return result

    @mcp.tool(
        title="Search documents",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
    )
    @reported
    async def search_docs(
        query: Annotated[str, Field(description="What to look for, in any language; identifiers and file names work too.")],
        ctx: Ctx,
        roots: Roots,
        k: Annotated[int, Field(description="How many chunks to return (1-50).")] = 5,
        collection: Collection = None,
        path_prefix: Annotated[str | None, Field(description="Only files whose path starts with this, e.g. 'docs/api/'.")] = None,
        project: Project = None,
        include_global: Annotated[bool, Field(description="Also read documents shared by every project.")] = True,
        min_relevance: Annotated[float, Field(description="Leave out chunks whose relevance (0-1) is below this; 0: none.")] = 0.0,
    ) -> SearchDocsResult:
        """Search the indexed documentation of this project. Each result gives the file path, the
        heading (or code symbol), the exact line range (and PDF page) and the text: cite them
        as path:start_line-end_line. A cut text says so."""
        rt = runtime(ctx)
        scope = await resolve_scope(ctx, rt.settings, project, roots, include_global=include_global)
        return await search_handler(rt, scope, query, k, collection, path_prefix, min_relevance)
