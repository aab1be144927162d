"""What a client hook shows at the start of a session: ``session_context`` (blocking, read-only, no model).

The project is the one a memvault server started in ``cwd`` by a client without MCP
roots would use (``memvault.mcp.scope``): the folder's repository when it is in a git
work tree (other than ``/`` or home), else the configured project, else the folder
itself (unless it is ``/``, home or a system folder), else the user's global scope. Claude Code starts its servers in the project folder and its hooks get
that folder as ``cwd``, so the hook and the server agree.

With no query, "relevant" means: the profile's preferences (keyed memories, a project
value winning over the global one), the open tasks with their current step, then this
project's memories and the user's global ones, each list ranked by ``retention_score``
(importance x recency of last use: what memvault keeps when a scope is full, and what
``recall`` keeps fresh by touching what it returns). Everything is read in one
read-only snapshot (``storage.glance``); nothing is written, no model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memvault.clock import to_iso
from memvault.policy.ranking import HALF_LIFE_DAYS
from memvault.policy.session_context import (
    ContextMemory,
    ContextPreference,
    ContextTask,
    SessionContext,
    render_session_context,
)
from memvault.policy.tasks import task_step
from memvault.service.scope.project import project_of_start_dir, readable_name
from memvault.storage.glance import glance_snapshot, keyed_memories, open_tasks, ranked_memories

__all__ = ["HookProject", "hook_project", "session_context", "MAX_PREFERENCES", "MAX_TASKS", "MAX_MEMORIES"]

MAX_PREFERENCES = 20
"""Preferences read at most (the block's budget usually shows fewer)."""
MAX_TASKS = 10
"""Open tasks read at most."""
MAX_MEMORIES = 30
"""Memories read at most per section (this project, global)."""
GIT_TIMEOUT_S = 1.0
"""Longest wait for one git command while resolving the project, seconds (a hook must answer fast)."""


@dataclass(frozen=True)
class HookProject:
    """The project a hook speaks for: ``id`` (``""`` = global scope), readable ``name``, and ``source``
    (``cwd``: from the folder's repository, ``settings``: the configured project, ``global``)."""

    id: str
    name: str
    source: str


def hook_project(cwd: Path, configured: str | None) -> HookProject:
    """The project of a client working in ``cwd`` that offers no MCP roots (module docstring).

    ``configured``: the ``project`` setting (None or ``""`` = unset). Runs git, each
    command bounded by ``GIT_TIMEOUT_S``.
    """
    found = project_of_start_dir(cwd, timeout_s=GIT_TIMEOUT_S)
    if found is not None and found.kind != "folder":
        return HookProject(id=found.id, name=found.name, source="cwd")
    if configured:
        return HookProject(id=configured, name=readable_name(configured), source="settings")
    if found is not None:
        return HookProject(id=found.id, name=found.name, source="cwd")
    return HookProject(id="", name="", source="global")


def _day(ts: float) -> str:
    return to_iso(ts)[:10]


def session_context(db_path: Path, user_id: str, project: HookProject, now: float, *, max_tokens: int,
                    half_life_days: float = HALF_LIFE_DAYS) -> str:
    """The session block for ``user_id`` in ``project`` at ``now`` (unix seconds), at most ``max_tokens``
    estimated tokens (``policy.session_context``); ``""`` when there is nothing to show.

    Raises FileNotFoundError when ``db_path`` does not exist, SchemaMismatch when its
    schema is another version's, sqlite3.Error when it cannot be read, ValueError for a
    ``max_tokens`` under 60 or a bad ``half_life_days``.
    """
    reads = [project.id, ""] if project.id else [""]
    with glance_snapshot(db_path) as con:
        keyed = keyed_memories(con, user_id, reads, now, 2 * MAX_PREFERENCES + 1)
        tasks = open_tasks(con, user_id, reads, now, MAX_TASKS)
        mine = ranked_memories(con, user_id, project.id, now, MAX_MEMORIES, half_life_days=half_life_days) \
            if project.id else []
        shared = ranked_memories(con, user_id, "", now, MAX_MEMORIES, half_life_days=half_life_days)
    # newest first: the first row per (key, project) is the live one; the project's value wins
    slots: dict[str, dict[str, str]] = {}
    for m in keyed:
        slots.setdefault(m.key or "", {}).setdefault(m.project, m.content)
    prefs = []
    for key in sorted(slots)[:MAX_PREFERENCES]:
        values = slots[key]
        if project.id and project.id in values:
            prefs.append(ContextPreference(key=key, value=values[project.id], scope="project"))
        elif "" in values:
            prefs.append(ContextPreference(key=key, value=values[""], scope="global"))
    ctx = SessionContext(
        project_name=project.name,
        preferences=prefs,
        tasks=[ContextTask(task_id=t.task_id, title=t.title, status=t.status, step=task_step(t.state),
                           updated=_day(t.updated_at)) for t in tasks],
        project_memories=[ContextMemory(content=m.content, kind=m.kind, updated=_day(m.updated_at)) for m in mine],
        global_memories=[ContextMemory(content=m.content, kind=m.kind, updated=_day(m.updated_at)) for m in shared],
    )
    return render_session_context(ctx, max_tokens)
