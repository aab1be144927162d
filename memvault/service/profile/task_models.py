"""Pydantic result models of get_profile, set_task_state and get_task_state.

Times are ISO 8601 UTC strings. Field names are a public contract: they stay fixed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from memvault.service.memory.models import RememberResult, Scope
from memvault.vocabulary import TaskStatus, Visibility


class TaskSummary(BaseModel):
    """A task in a list: no state, only what tells the tasks apart."""

    task_id: str
    title: str
    status: TaskStatus
    step: str | None = Field(None, description="Current step, read from the state (current_step / step / next_step).")
    version: int
    project: str
    updated_at: str
    expires_at: str


class TaskVersionOut(BaseModel):
    """One stored version of a task (history), newest first."""

    version: int
    title: str
    status: TaskStatus
    state: dict[str, Any]
    at: str
    actor: str | None = None


class TaskOut(BaseModel):
    """One task with its full state."""

    task_id: str
    version: int
    title: str
    status: TaskStatus
    state: dict[str, Any]
    step: str | None = None
    project: str
    created_at: str
    updated_at: str
    expires_at: str = Field(description="When it vanishes: idle TTL if open, retention if finished.")
    outcome: str | None = None
    episode_id: str | None = Field(None, description="Episode memory written when the task finished.")


class SetTaskResult(TaskOut):
    """Outcome of ``set_task_state``: the task as now stored, plus the episode if one was written."""

    created: bool = Field(description="True when this call created the task.")
    episode: RememberResult | None = Field(None, description="The remember result of the episode memory.")
    scope: Scope


class GetTaskResult(BaseModel):
    """Outcome of ``get_task_state``: one task (``task``) or a list (``tasks``)."""

    scope: Scope
    task: TaskOut | None = None
    history: list[TaskVersionOut] = Field(default_factory=list, description="Past versions, newest first.")
    tasks: list[TaskSummary] = Field(default_factory=list)
    total: int = Field(0, description="Tasks matching before the list was cut.")
    truncated: bool = False


class Overridden(BaseModel):
    """A global keyed memory hidden by a project one with the same key."""

    id: str
    value: str
    project: str


class PreferenceOut(BaseModel):
    """One keyed memory of the profile."""

    value: str
    id: str
    updated_at: str
    source: str | None = None
    kind: str
    project: str = Field(description="Where it lives: the project name, or '' for global.")
    won: Literal["project", "global"] = Field(description="Which scope this value came from.")
    overrides: Overridden | None = Field(None, description="The global value this project value overrides.")
    value_truncated: bool = False
    visibility: Visibility = Field("shared", description="private: this agent's own value, which wins over a "
                                   "shared one of the same key and project.")


class ProfileFact(BaseModel):
    """One of the most important unkeyed memories."""

    id: str
    content: str
    kind: str
    importance: float
    project: str
    updated_at: str
    content_truncated: bool = False
    visibility: Visibility = "shared"


class ProfileResult(BaseModel):
    """Outcome of ``get_profile``: derived from keyed memories (no copy), bounded."""

    scope: Scope
    preferences: dict[str, PreferenceOut]
    facts: list[ProfileFact]
    open_tasks: list[TaskSummary]
    counts: dict[str, int] = Field(description="Active memories by kind over the scope read.")
    truncated: bool = Field(False, description="True when an entry or a list was cut by the bounds.")
