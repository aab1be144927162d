"""memvault's errors as the MCP face reports them: every failure reaches the caller as a reason.

Services raise ``MemvaultError`` subclasses whose text is written for a person; the
``reported`` decorator turns them into ``ToolError`` so the assistant reads that text as
is. Anything else a tool, a prompt or a resource raises would reach the client as the
SDK's bare "Error executing tool <name>" / "Error rendering prompt <name>" (JSON-RPC code
0) / "Error reading resource <uri>": ``MemvaultServer`` (``memvault.mcp.app``) catches
those and answers with ``tool_failure`` / ``request_failure`` instead, whose message is
``memvault.service.failures.explain``'s sentence (the cause and what to do), after
logging the traceback to stderr. ``ReasonsMiddleware`` does the same for the SDK's own
"Invalid request parameters" (params of the wrong shape, a request before
``initialize``), which names neither the parameter nor the cause.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import ValidationError

from memvault.service.errors import InvalidArgument, MemvaultError, NotFound
from memvault.service.failures import explain
from memvault.service.validation import shown

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)

# The SDK's wrappers whose own text is only "Error ... <name>": the cause is what counts.
_SDK_WRAPPER_PREFIXES = ("Error executing tool", "Error rendering prompt", "Error reading resource")
# What the SDK itself raises (as ValueError) for a request naming no prompt or missing an argument.
_SDK_ARGUMENT_ERRORS = ("Unknown prompt", "Missing required arguments")


def reported(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Wrap an async tool or prompt function: a ``MemvaultError`` becomes ``ToolError(str(exc))``,
    and a call that waits for the model tells its client so (``memvault.mcp.waiting``).

    The wrapper keeps ``fn``'s signature and annotations (``functools.wraps``), which the
    SDK reads to build the tool's input schema and to inject the context.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from memvault.mcp.waiting import while_loading

        try:
            ctx = kwargs.get("ctx")
            if ctx is None:
                return await fn(*args, **kwargs)
            async with while_loading(ctx, fn.__name__):  # a call that waits for the model says so
                return await fn(*args, **kwargs)
        except MemvaultError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def root_cause(exc: BaseException) -> BaseException:
    """The exception behind the SDK's generic wrappers (``UnexpectedToolError`` and kin, a prompt's ValueError)."""
    seen: set[int] = set()
    while id(exc) not in seen and exc.__cause__ is not None and (
            isinstance(exc, ToolError | ResourceError) or str(exc).startswith(_SDK_WRAPPER_PREFIXES)):
        seen.add(id(exc))
        exc = exc.__cause__
    return exc


def _validation_sentence(exc: ValidationError, what: str = "invalid arguments") -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "the arguments"
        got = "" if err.get("type") == "missing" else f" (got {shown(err.get('input'))})"
        parts.append(f"{where}: {err.get('msg', 'invalid')}{got}")
    return f"{what}: " + "; ".join(parts)


def argument_failure(name: str, exc: ToolError) -> ToolError:
    """The ToolError answering a call of tool ``name`` whose arguments failed the input schema.

    The SDK's own text is pydantic's multi-line report with links to pydantic's website,
    quoting each rejected value (``input_value=...``); this one names each wrong argument,
    what it takes and what was sent, cut and masked (``shown``), on one line. Raise it
    ``from exc.__cause__`` (the ``ValidationError``): the SDK then logs the argument names
    only. ``exc`` is returned unchanged when its cause is not a ``ValidationError``.
    """
    cause = exc.__cause__
    if not isinstance(cause, ValidationError):
        return exc
    return ToolError(f"{name}: {_validation_sentence(cause)}; the tool's input schema lists what each argument takes")


def tool_failure(name: str, exc: BaseException, db: Path | None = None) -> ToolError:
    """The ToolError answering a call of tool ``name`` that raised ``exc`` unexpectedly (traceback logged)."""
    cause = root_cause(exc)
    log.error("tool %s failed: %s", name, explain(cause, db=db), exc_info=cause)
    return ToolError(f"{name} failed: {explain(cause, db=db)}")


def request_failure(what: str, exc: BaseException, db: Path | None = None) -> MCPError:
    """The JSON-RPC error answering a prompt or resource request ``what`` (e.g. ``prompt recall_context``).

    memvault's own argument errors and validation failures are INVALID_PARAMS with their
    text; anything else is INTERNAL_ERROR with ``explain``'s sentence, its traceback logged.
    """
    cause = root_cause(exc)
    if isinstance(cause, InvalidArgument | NotFound):
        return MCPError(code=INVALID_PARAMS, message=f"{what}: {cause}")
    if isinstance(cause, ValidationError):
        return MCPError(code=INVALID_PARAMS, message=f"{what}: {_validation_sentence(cause)}")
    if isinstance(cause, MemvaultError):
        return MCPError(code=INTERNAL_ERROR, message=f"{what}: {cause}")
    if isinstance(cause, ValueError) and str(cause).startswith(_SDK_ARGUMENT_ERRORS):
        return MCPError(code=INVALID_PARAMS, message=f"{what}: {cause}")
    sentence = explain(cause, db=db)
    log.error("%s failed: %s", what, sentence, exc_info=cause)
    return MCPError(code=INTERNAL_ERROR, message=f"{what} failed: {sentence}")


_SDK_BARE_INVALID_PARAMS = "Invalid request parameters"


class ReasonsMiddleware:
    """SDK server middleware: protocol-level rejections that name no cause get one.

    Params that fail the SDK's validation (``tools/call`` without ``name``, ``arguments``
    that are not an object) become INVALID_PARAMS naming each field and what it should
    be; a request other than ``initialize`` before the handshake says to send
    ``initialize`` first. Everything else passes through untouched.
    """

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            raise MCPError(code=INVALID_PARAMS,
                           message=f"{ctx.method}: {_validation_sentence(exc, 'invalid params')}") from exc
        except MCPError as exc:
            if exc.error.code == INVALID_PARAMS and exc.error.message == _SDK_BARE_INVALID_PARAMS:
                raise MCPError(code=INVALID_PARAMS,
                               message=f"{ctx.method}: this connection is not initialized yet; send initialize "
                                       "(then notifications/initialized) first") from exc
            raise
