"""The MCP face of memvault: builds the server and registers the tools, resources and prompt.

The tools themselves live in ``memory_tools``, ``docs_tools`` and ``profile_tools``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import serve_dual_era_loop
from mcp_types import InputRequiredResult, NotificationParams
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from mcp_types import Tool as MCPTool

from memvault import __version__
from memvault.config import Settings
from memvault.mcp.docs_tools import register_doc_tools
from memvault.mcp.lifespan import make_lifespan, shared_lifespan
from memvault.mcp.listing import lean_description, lean_schema
from memvault.mcp.memory_tools import register_memory_tools
from memvault.mcp.profile_tools import PROFILE_URI, read_profile, register_profile_tools
from memvault.mcp.scope import Workspace, on_roots_list_changed
from memvault.service.runtime import EmbedderLoader, Runtime, VectorsOpener

INSTRUCTIONS = """\
memvault is this user's long-term memory across sessions and clients.
- recall at the start of a task, and whenever the user refers to earlier work, decisions,
  preferences or "last time" / "as before" / "上次"; recall before asking the user something
  they may already have told you.
- remember stable preferences (use a key such as pref.package_manager so a later value
  replaces the old), decisions and their reasons, facts about the project or the user,
  and lessons learned (what fixed a problem). One self-contained sentence per memory, in
  the user's language. Never store secrets, passwords or tokens.
- Memories belong to the current project (from the workspace) unless you pass project=""
  for facts true everywhere (e.g. the user's own preferences).
- forget when the user asks, or when a memory is wrong; prefer remember with the same key
  or supersedes=[id] to correct one.
"""


class MemvaultServer(MCPServer):
    """``MCPServer`` that knows where it was started and whose profile reads get a Context.

    ``workspace``: the folder the server was started in (a call's project when the client
    offers no roots, see ``memvault.mcp.scope``). ``notifications/roots/list_changed``
    makes the connection's next call read the client's roots again.

    The SDK hands static resources no Context (only templates get one), yet the
    ``memvault://profile`` resource needs the runtime and the caller's scope; every other
    URI is read as the SDK does.

    Listings (tools, prompts, resources) are the SDK's, made lean by
    ``memvault.mcp.listing``: they sit in the model's context on every turn.
    """

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        # Roots are deprecated as of the 2026-07-28 protocol revision, but clients on
        # handshake-era connections still tell a server which folder the user works in
        # with roots only; without this notification a session that opens another folder
        # would keep writing to the first one's project. (Registered after construction:
        # only the constructor's on_roots_list_changed argument emits the deprecation warning.)
        self._lowlevel_server.add_notification_handler(
            "notifications/roots/list_changed", NotificationParams, on_roots_list_changed
        )

    async def list_tools(self) -> list[MCPTool]:
        """The SDK's tool list with plain descriptions and schemas without pydantic's redundancy."""
        return [t.model_copy(update={"description": lean_description(t.description),
                                     "input_schema": lean_schema(t.input_schema),
                                     "output_schema": lean_schema(t.output_schema)})
                for t in await super().list_tools()]

    async def list_prompts(self) -> list[MCPPrompt]:
        """The SDK's prompt list with plain descriptions."""
        prompts = await super().list_prompts()
        for p in prompts:
            p.description = lean_description(p.description)
            for arg in p.arguments or []:
                arg.description = lean_description(arg.description)
        return prompts

    async def list_resources(self) -> list[MCPResource]:
        """The SDK's resource list with plain descriptions."""
        return [r.model_copy(update={"description": lean_description(r.description)})
                for r in await super().list_resources()]

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        """The SDK's resource template list with plain descriptions."""
        return [r.model_copy(update={"description": lean_description(r.description)})
                for r in await super().list_resource_templates()]

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        """Read ``uri``: the profile from the caller's scope, anything else through the SDK."""
        if str(uri) == PROFILE_URI and context is not None and context.request_context is not None:
            text = await read_profile(context)
            if isinstance(text, InputRequiredResult):  # asking for the client's roots first
                return text
            return [ReadResourceContents(content=text, mime_type="text/markdown")]
        return await super().read_resource(uri, context)

    async def serve_streams(self, read_stream: Any, write_stream: Any, runtime: Runtime) -> None:
        """Serve one connection over the SDK's message streams with an already running ``runtime``.

        The owner process calls this once per forwarded client: the lifespan (model, stores,
        housekeeping) is entered once for the process, not once per connection as
        ``run`` would.
        """
        low = self._lowlevel_server
        await serve_dual_era_loop(low, read_stream, write_stream, lifespan_state=runtime,
                                  init_options=low.create_initialization_options())


def build_server(settings: Settings, *, load_embedder: EmbedderLoader | None = None,
                 open_vectors: VectorsOpener | None = None, cwd: Path | None = None,
                 runtime: Runtime | None = None) -> MemvaultServer:
    """The memvault MCP server for ``settings`` (not yet running).

    ``load_embedder`` / ``open_vectors``: what builds the model and the vector index
    (default: the configured model and engine), e.g. one model shared by the servers of
    a test session. ``runtime``: an already running Runtime to serve with (the owner's),
instead of opening one per run. ``cwd``: the folder the server counts as started in (default: the
    process's working directory now), whose git project serves clients without roots.
    """
    mcp = MemvaultServer(
        name="memvault",
        title="memvault",
        description="Long-term memory for assistants: remember, recall, forget.",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=shared_lifespan(runtime) if runtime is not None else
        make_lifespan(settings, load_embedder=load_embedder, open_vectors=open_vectors),
        log_level="WARNING",
        workspace=Workspace(cwd),
    )
    register_memory_tools(mcp)
    register_doc_tools(mcp)
    register_profile_tools(mcp)
    return mcp
