"""The closed word lists of memvault's public contract: memory kinds, visibilities and task statuses.

Each list is written once, as a ``Literal`` type (what tool signatures and result
models use, so the MCP schemas enumerate the values); the tuples are derived from it
(what checks and SQL use). Pure constants: every layer may import this module.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

__all__ = [
    "Kind", "KINDS", "Visibility", "VISIBILITIES", "TaskStatus", "TASK_STATUSES", "OPEN_TASK_STATUSES", "FINISHED_TASK_STATUSES",
    "is_kind", "is_task_status",
]

Kind = Literal["preference", "fact", "decision", "episode", "procedure", "note"]
"""What a memory is. ``Settings.policies.ttl_days_<kind>`` gives each its default TTL."""

KINDS: tuple[Kind, ...] = get_args(Kind)
"""Every memory kind, in the order error messages list them."""

Visibility = Literal["shared", "private"]
"""Who reads a memory: every client (agent) of its user, or only the agent that wrote it."""

VISIBILITIES: tuple[Visibility, ...] = get_args(Visibility)
"""Every visibility, the default first."""

TaskStatus = Literal["active", "blocked", "done", "abandoned"]
"""Where a task (working memory) stands; the first two are open, the last two finished."""

TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
"""Every task status, open ones first."""

OPEN_TASK_STATUSES: tuple[TaskStatus, ...] = ("active", "blocked")
"""Statuses of a task still in progress (listed by default; expire after the idle TTL)."""

FINISHED_TASK_STATUSES: tuple[TaskStatus, ...] = tuple(s for s in TASK_STATUSES if s not in OPEN_TASK_STATUSES)
"""Statuses of a finished task (kept for the retention period; may carry an outcome)."""


def is_kind(value: str) -> TypeGuard[Kind]:
    """Whether ``value`` is one of ``KINDS`` (narrows a ``str`` to ``Kind`` for type checkers)."""
    return value in KINDS


def is_task_status(value: str) -> TypeGuard[TaskStatus]:
    """Whether ``value`` is one of ``TASK_STATUSES`` (narrows a ``str`` to ``TaskStatus``)."""
    return value in TASK_STATUSES
