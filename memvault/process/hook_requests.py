"""The owner's answers to the Claude Code hooks' one-line requests (``context``, ``remember``).

A hook that finds an owner running asks it in one handshake line on its socket instead of
opening an MCP session (``memvault.process.context_client``); each answer is one line
(``memvault.process.handshake.answer``): ``ok: true`` with the result, or ``ok: false`` with why,
on which the hook falls back to doing the work itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio

from memvault.config import Settings
from memvault.process.handshake import answer
from memvault.service.errors import InvalidArgument
from memvault.service.runtime import Runtime

STORE_NOT_OPEN = "the store is not open"


def text_or_none(value: Any) -> str | None:
    """A handshake field that is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def user_of(hello: dict[str, Any], settings: Settings) -> str:
    """The user a request is for: its ``user_id``, else the owner's configured user."""
    return str(hello.get("user_id") or settings.server.user_id)


async def remember(rt: Runtime | None, settings: Settings, hello: dict[str, Any]) -> bytes:
    """The answer to a prompt hook's ``remember`` line: ``remember`` (the service, with all its
    policies) of ``content`` / ``kind`` in the project of the hook's folder (in the user's global
    scope when ``scope`` is ``"global"``), written for the
    agent ``agent_id`` (the hook's client name) with ``source``; ``ok: true`` with the
    result's ``status``, ``reason`` and project, or ``ok: false`` with why (the hook then
    falls back to an MCP session). ``rt`` None: the store is not open."""
    from memvault.service.memory.models import ScopeSource  # noqa: F401  (named in the cast below)
    from memvault.service.memory.remember import RememberArgs
    from memvault.service.memory.remember import remember as remember_service
    from memvault.service.profile.glance import HookProject, hook_project
    from memvault.service.scope.project import make_scope

    if rt is None:
        return answer(False, error=STORE_NOT_OPEN)
    cwd, project, content, kind = hello.get("cwd"), hello.get("project"), hello.get("content"), hello.get("kind")
    if not isinstance(cwd, str) or not isinstance(content, str) or not isinstance(kind, str):
        return answer(False, error="a remember request needs cwd (a folder), content and kind (strings)")
    try:
        where = HookProject(id="", name="", source="global") if hello.get("scope") == "global" else \
            await anyio.to_thread.run_sync(hook_project, Path(cwd), project if isinstance(project, str) else None)
    except Exception as exc:  # the hook falls back to an MCP session, which reports it
        return answer(False, error=f"{type(exc).__name__}: {exc}")
    try:
        scope = make_scope(user_of(hello, settings), where.id, cast("ScopeSource", where.source),
                           agent=text_or_none(hello.get("agent_id")))
        args = RememberArgs(content=content, kind=kind, source=text_or_none(hello.get("source")), force=True)
        res = await remember_service(rt, scope, args)
    except InvalidArgument as exc:
        return answer(True, status="declined", reason=str(exc), project=where.id, project_name=where.name)
    except Exception as exc:
        return answer(False, error=f"{type(exc).__name__}: {exc}")
    return answer(True, status=res.status, reason=res.reason, project=where.id, project_name=where.name)


async def context(rt: Runtime | None, settings: Settings, hello: dict[str, Any]) -> bytes:
    """The answer to a session hook's ``context`` line: the block for its user and folder, read in a
    worker thread (``memvault.service.profile.glance``), or ``ok: false`` with why. ``rt`` None: the
    store is not open."""
    from memvault.service.profile.glance import hook_project, session_context

    if rt is None:
        return answer(False, error=STORE_NOT_OPEN)
    cwd, project = hello.get("cwd"), hello.get("project")
    max_tokens = hello.get("max_tokens")
    if not isinstance(cwd, str) or not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return answer(False, error="a context request needs cwd (a folder) and max_tokens (a whole number)")
    user = user_of(hello, settings)

    def read() -> str:
        where = hook_project(Path(cwd), project if isinstance(project, str) else None)
        return session_context(settings.db_path, user, where, rt.clock.now(), max_tokens=max_tokens)

    try:
        return answer(True, text=await anyio.to_thread.run_sync(read))
    except Exception as exc:  # the hook falls back to reading the store itself
        return answer(False, error=f"{type(exc).__name__}: {exc}")
