"""The MCP face of memvault: builds the server and registers the tools, resources and prompts.

The tools themselves live in ``memvault.mcp.tools`` (``memory``, ``docs``, ``profile``, ``history``,
``consolidate``); the ``save_session`` prompt in ``tools.session_prompt``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedResourceError, UnexpectedToolError
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, InputRequiredResult, NotificationParams
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from mcp_types import Tool as MCPTool

from memvault import __version__
from memvault.clock import Clock
from memvault.config import Settings
from memvault.mcp.errors import ReasonsMiddleware, argument_failure, request_failure, tool_failure
from memvault.mcp.lifespan import Unavailable, make_lifespan, shared_lifespan
from memvault.mcp.listing import lean_description, lean_schema
from memvault.mcp.scope import Workspace, on_roots_list_changed
from memvault.mcp.tools.consolidate import register_consolidate_tools
from memvault.mcp.tools.docs import register_doc_tools
from memvault.mcp.tools.history import register_history_tools
from memvault.mcp.tools.memory import register_memory_tools
from memvault.mcp.tools.profile import PROFILE_URI, read_profile, register_profile_tools
from memvault.mcp.tools.session_prompt import register_session_prompt
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


def _lifespan_state(context: Context[Any, Any] | None) -> Any:
    """The lifespan context (a Runtime, or an Unavailable) of the request ``context`` belongs to, or None."""
    try:
        return context.request_context.lifespan_context if context is not None else None
    except Exception:  # no request (a call made outside a session)
        return None


class MemvaultServer(MCPServer):
    """``MCPServer`` that knows where it was started, whose profile reads get a Context, and
    whose every failure reaches the caller as a reason.

    ``workspace``: the folder the server was started in (a call's project when the client
    offers no roots, see ``memvault.mcp.scope``). ``notifications/roots/list_changed``
    makes the connection's next call read the client's roots again.

    The SDK hands static resources no Context (only templates get one), yet the
    ``memvault://profile`` resource needs the runtime and the caller's scope; every other
    URI is read as the SDK does.

    Listings (tools, prompts, resources) are the SDK's, made lean by
    ``memvault.mcp.listing``: they sit in the model's context on every turn.

    Errors (``memvault.mcp.errors``): a tool, prompt or resource that fails unexpectedly
    is answered with the cause and what to do instead of the SDK's bare "Error executing
    tool <name>"; when the server could not open its store or read its settings (its
    lifespan context is an ``Unavailable``), every call, prompt and read answers with
    that problem, while ``initialize`` and the lists work as usual.
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
        self._lowlevel_server.middleware.append(ReasonsMiddleware())

    @staticmethod
    def _problem(context: Context[Any, Any] | None) -> str | None:
        state = _lifespan_state(context)
        return state.problem if isinstance(state, Unavailable) else None

    @staticmethod
    def _db(context: Context[Any, Any] | None) -> Path | None:
        settings = getattr(_lifespan_state(context), "settings", None)
        return settings.db_path if isinstance(settings, Settings) else None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        """Call tool ``name``; an unexpected failure becomes a ToolError naming its cause (traceback logged)."""
        problem = self._problem(context)
        if problem is not None:
            raise ToolError(problem)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            raise tool_failure(name, exc, self._db(context)) from exc
        except ToolError as exc:
            reworded = argument_failure(name, exc)
            if reworded is exc:
                raise
            # From the ValidationError: the SDK logs a ToolError caused by one by its field names only.
            raise reworded from exc.__cause__

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None) -> Any:
        """Render prompt ``name``; a failure is a JSON-RPC error whose message names the cause."""
        problem = self._problem(context)
        if problem is not None:
            raise MCPError(code=INTERNAL_ERROR, message=problem)
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:
            raise request_failure(f"prompt {name}", exc, self._db(context)) from exc

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
        """Read ``uri``: the profile from the caller's scope, anything else through the SDK.

        A failure other than the SDK's own "unknown resource" is a JSON-RPC error whose
        message names the cause.
        """
        problem = self._problem(context)
        if problem is not None:
            raise MCPError(code=INTERNAL_ERROR, message=problem, data={"uri": str(uri)})
        try:
            return await self._read_resource(uri, context)
        except MCPError:
            raise
        except ResourceError as exc:
            if not isinstance(exc, UnexpectedResourceError):
                raise
            raise request_failure(f"reading {uri}", exc, self._db(context)) from exc
        except Exception as exc:
            raise request_failure(f"reading {uri}", exc, self._db(context)) from exc

    async def _read_resource(self, uri: Any, context: Context[Any, Any] | None) -> Any:
        if str(uri) == PROFILE_URI and context is not None and context.request_context is not None:
            text = await read_profile(context)
            if isinstance(text, InputRequiredResult):  # asking for the client's roots first
                return text
            return [ReadResourceContents(content=text, mime_type="text/markdown")]
        return await super().read_resource(uri, context)

    async def serve_streams(self, read_stream: Any, write_stream: Any, runtime: Runtime | Unavailable) -> None:
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
                 runtime: Runtime | Unavailable | None = None, clock: Clock | None = None) -> MemvaultServer:
    """The memvault MCP server for ``settings`` (not yet running).

    ``load_embedder`` / ``open_vectors``: what builds the model and the vector index
    (default: the configured model and engine), e.g. one model shared by the servers of
    a test session. ``runtime``: an already running Runtime to serve with (the owner's),
    instead of opening one per run. ``cwd``: the folder the server counts as started in
    (default: the process's working directory now), whose git project serves clients
    without roots. ``clock``: where every "now" comes from (default the system's; tests move
    time with ``Clock(offset_s)``). A store that cannot be opened does not stop the server: it answers
    every call with the problem (``MemvaultServer``).
    """
    lifespan = shared_lifespan(runtime) if runtime is not None else \
        make_lifespan(settings, load_embedder=load_embedder, open_vectors=open_vectors, clock=clock)
    return _server(lifespan, cwd)


def build_unavailable_server(problem: str, *, cwd: Path | None = None) -> MemvaultServer:
    """A server that lists memvault's tools, resources and prompts and answers every use with ``problem``.

    For a start-up that cannot serve (invalid settings, an unusable data dir): the
    client connects, and the person reads ``problem`` in it.
    """
    return _server(shared_lifespan(Unavailable(problem)), cwd)


def _server(lifespan: Any, cwd: Path | None) -> MemvaultServer:
    mcp = MemvaultServer(
        name="memvault",
        title="memvault",
        description="Long-term memory for assistants: remember, recall, forget.",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level="WARNING",
        workspace=Workspace(cwd),
    )
    register_memory_tools(mcp)
    register_history_tools(mcp)
    register_consolidate_tools(mcp)
    register_doc_tools(mcp)
    register_profile_tools(mcp)
    register_session_prompt(mcp)
    return mcp
