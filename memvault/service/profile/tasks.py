"""The task-state handlers (working memory): ``set_task_state``, ``get_task_state``.

Task state is not memory: it never enters recall. A task is a versioned JSON object
with a title and a status (active | blocked | done | abandoned). Writes replace the
state, apply a JSON Merge Patch (RFC 7396), or only change the status; each write
raises the version by one, and ``expected_version`` makes concurrent writers fail
loudly instead of overwriting each other. Open tasks expire after an idle TTL;
finished ones after a retention period. Finishing a task with an ``outcome`` leaves
one episode memory behind, written through the ``remember`` handler.

The pure pieces (the current step read from a state, the episode text) are in
``memvault.policy.tasks``; the rewriting of pointing recall queries ("continue") in
``memvault.service.memory.deixis_query``.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvault.clock import to_iso
from memvault.policy.budget import REPLY_BUDGET_CHARS, whole_within_budget
from memvault.policy.merge_patch import merge_patch
from memvault.policy.tasks import MAX_STATE_DEPTH, episode_text, json_overflow, state_json, task_step
from memvault.policy.units import SECONDS_PER_DAY
from memvault.service import validation as v
from memvault.service.errors import Conflict, InvalidArgument, NotFound
from memvault.service.memory.models import Scope
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.profile.task_models import GetTaskResult, SetTaskResult, TaskOut, TaskSummary, TaskVersionOut
from memvault.service.runtime import Runtime
from memvault.service.secret_scan import find_secret
from memvault.storage.tasks import TaskRow, TaskStore, TaskVersion
from memvault.vocabulary import FINISHED_TASK_STATUSES, TaskStatus

if TYPE_CHECKING:
    from memvault.policy.secrets import SecretFinding

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 200
MAX_OUTCOME_CHARS = 2_000
TASK_STATE_MAX_BYTES = 65_536
"""Largest task state, UTF-8 bytes of its JSON: a plan with its steps and notes, not a file."""
TASK_HISTORY_MAX = 50
"""Versions kept per task (the oldest dropped)."""
TASK_LIST_MAX = 20
"""Tasks listed by get_task_state without a task_id, and by get_profile."""


@dataclass
class SetTaskArgs:
    """Arguments of ``set_task_state`` as the tool received them (validated here)."""

    task_id: str
    state: dict[str, Any] | None = None
    patch: dict[str, Any] | None = None
    title: str | None = None
    status: str | None = None
    expected_version: int | None = None
    ttl_days: float | None = None
    outcome: str | None = None
    actor: str | None = None


# ---------------------------------------------------------------------- checks and views
def _check_text(name: str, value: str | None, limit: int, *, control_ok: bool = False) -> str | None:
    if value is None:
        return None
    t = value.strip()
    if not t:
        raise InvalidArgument(f"{name} is empty; leave it out or give some text")
    if len(t) > limit or (not control_ok and v.has_control_chars(t)):
        raise InvalidArgument(f"{name} is too long or has control characters; at most {limit} printable characters")
    return t


def _too_big(what: str, size: int, limit: int, *, at_least: bool = False) -> str:
    return (f"{what} {'more than ' if at_least else ''}{size} bytes; the limit is {limit} bytes. Keep "
            "bulky text in files or memories and store references (paths, ids) in the state.")


def _check_bounds(name: str, value: dict[str, Any], limit: int) -> None:
    """Refuse a state or patch over the size limit or nested deeper than MAX_STATE_DEPTH, reading
    no more of it than the limit (``json_overflow``)."""
    over = json_overflow(value, max_bytes=limit, max_depth=MAX_STATE_DEPTH)
    if over is None:
        return
    if over.what == "size":
        raise InvalidArgument(_too_big(f"{name} is", over.at_least, limit, at_least=True) + " Nothing was written.")
    raise InvalidArgument(
        f"{name} is nested {over.at_least} levels deep at {over.where}; at most {MAX_STATE_DEPTH} levels of objects "
        "and arrays are allowed (the state object itself is level 1), since deeper JSON cannot be read back by "
        "every client. Flatten it (e.g. keep a list of steps rather than steps inside steps). Nothing was written."
    )


def _first_secret(fields: list[tuple[str, Any]]) -> tuple[str, SecretFinding] | None:
    """Blocking (worker thread): the first (field name, secret found) among ``fields``; JSON values
    are scanned as their JSON text. None when every field is clean."""
    for name, value in fields:
        if value is not None and (found := find_secret(value if isinstance(value, str) else
                                                        json.dumps(value, ensure_ascii=False))):
            return name, found
    return None


def _iso(ts: float) -> str:
    return to_iso(ts) or ""


def task_out(row: TaskRow) -> TaskOut:
    """A stored task as the tools return it."""
    return TaskOut(task_id=row.task_id, version=row.version, title=row.title, status=row.status,
                   state=row.state, step=task_step(row.state), project=row.project,
                   created_at=_iso(row.created_at), updated_at=_iso(row.updated_at),
                   expires_at=_iso(row.expires_at), outcome=row.outcome, episode_id=row.episode_id)


def task_summary(row: TaskRow) -> TaskSummary:
    """A stored task as a list entry (no state)."""
    return TaskSummary(task_id=row.task_id, title=row.title, status=row.status, step=task_step(row.state),
                       version=row.version, project=row.project, updated_at=_iso(row.updated_at),
                       expires_at=_iso(row.expires_at))


def _version_out(h: TaskVersion) -> TaskVersionOut:
    return TaskVersionOut(version=h.version, title=h.title, status=h.status, state=h.state, at=_iso(h.at),
                          actor=h.actor)


def _where(projects: list[str]) -> str:
    names = [f"project {p!r}" if p else "the global scope" for p in projects]
    return " or ".join(names)


# ---------------------------------------------------------------------- handlers
async def set_task_state(rt: Runtime, scope: Scope, args: SetTaskArgs) -> SetTaskResult:
    """Create or update one task in ``scope.project``; returns the task as stored.

    Raises InvalidArgument (nothing written) for bad arguments, a version conflict (the message
    carries the current version), a state or patch over ``TASK_STATE_MAX_BYTES`` or nested
    deeper than MAX_STATE_DEPTH (checked before any scan, reading no more than the limit), or
    when an episode is due and the model is not loaded.
    """
    s = rt.settings
    task_id = v.check_task_id(args.task_id)
    title = _check_text("title", args.title, MAX_TITLE_CHARS)
    outcome = _check_text("outcome", args.outcome, MAX_OUTCOME_CHARS, control_ok=True)
    ttl_days = v.check_ttl(args.ttl_days)
    status_arg = v.check_status(args.status)
    if args.state is not None and args.patch is not None:
        raise InvalidArgument("give either state (replaces the whole object) or patch (JSON Merge Patch), not both")
    for name, value in (("state", args.state), ("patch", args.patch)):
        if value is not None and not isinstance(value, dict):
            raise InvalidArgument(f"{name} must be a JSON object, got {type(value).__name__}")
    if args.expected_version is not None and args.expected_version < 0:
        raise InvalidArgument("expected_version must be 0 (the task must not exist yet) or a version number")
    if outcome is not None and status_arg not in FINISHED_TASK_STATUSES:
        raise InvalidArgument("outcome is recorded when a task finishes; pass it with status='done' or 'abandoned'")
    # Size and nesting before any scan: a 20 MB state is refused after reading 64 kB of it.
    for name, value in (("state", args.state), ("patch", args.patch)):
        if value is not None:
            _check_bounds(name, value, TASK_STATE_MAX_BYTES)
    # Within bounds the state is at most a few hundred kilobytes: the scan runs in a worker thread.
    found = await rt.run_sync(_first_secret, [("task_id", task_id), ("task_id", args.task_id), ("title", title),
                                              ("outcome", outcome), ("state", args.state), ("patch", args.patch)])
    if found is not None:
        name, finding = found
        raise InvalidArgument(f"{name}: {finding.reason} Task state is stored and versioned; keep secrets out of it.")
    if outcome is not None:
        await rt.started()  # the episode needs the model: fail before writing anything

    store = TaskStore.on(rt.facts)
    user, project = scope.user_id, scope.project
    async with rt.write_lock:
        now = rt.clock.now()
        await store.sweep(now)
        cur = await store.get(user, [project], task_id, now)
        current = cur.version if cur is not None else 0
        if args.expected_version is not None and args.expected_version != current:
            seen = (f"it is at version {current} (updated {_iso(cur.updated_at)}, status {cur.status})"
                    if cur is not None else "it does not exist (current version 0)")
            raise Conflict(
                f"version conflict on task {task_id!r}: expected_version={args.expected_version} but {seen}; "
                f"current_version={current}. Another writer changed it: read it with get_task_state, "
                f"re-apply your change and pass expected_version={current}."
            )
        base = cur.state if cur is not None else {}
        if args.state is not None:
            new_state = args.state
        elif args.patch is not None:
            new_state = merge_patch(base, args.patch)
        else:
            new_state = base
        try:
            size = len(state_json(new_state).encode("utf-8"))
        except (ValueError, TypeError) as exc:
            raise InvalidArgument(f"state is not valid JSON: {exc}") from None
        if size > TASK_STATE_MAX_BYTES:
            raise InvalidArgument(_too_big("task state would be", size, TASK_STATE_MAX_BYTES))
        status: TaskStatus = status_arg or (cur.status if cur is not None else "active")
        finished = status in FINISHED_TASK_STATUSES
        task_ttl = ttl_days if ttl_days is not None else (cur.ttl_days if cur is not None else None)
        days = s.policies.task_retention_days if finished else (task_ttl or s.policies.task_idle_ttl_days)
        expires_at = now + days * SECONDS_PER_DAY
        if not math.isfinite(expires_at):
            raise InvalidArgument(f"ttl_days={days} is too large")
        row = TaskRow(
            user_id=user, project=project, task_id=task_id,
            title=title or (cur.title if cur is not None else task_id), status=status, version=current + 1,
            state=new_state, created_at=cur.created_at if cur is not None else now, updated_at=now,
            expires_at=expires_at, ttl_days=task_ttl,
            outcome=outcome or (cur.outcome if cur is not None and finished else None),
            episode_id=cur.episode_id if cur is not None and finished else None, actor=args.actor,
        )
        await store.write(row, history_max=TASK_HISTORY_MAX)

    episode = None
    if outcome is not None:
        episode = await remember(rt, scope, RememberArgs(
            content=episode_text(row.title, row.state, outcome), kind="episode", tags=["task"],
            source=f"task:{task_id}", force=True,
        ))
        if episode.id is not None:
            async with rt.write_lock:
                await store.set_episode(row, episode.id)
    return SetTaskResult(**task_out(row).model_dump(), created=cur is None, episode=episode, scope=scope)


async def get_task_state(rt: Runtime, scope: Scope, task_id: str | None = None, *, include_done: bool = False,
                         include_history: bool = False) -> GetTaskResult:
    """One task (``task_id`` given; looked up in ``scope.projects_read`` in order) or the scope's tasks.

    Lists are open tasks (plus finished ones with ``include_done``), active before
    blocked, newest first, at most ``TASK_LIST_MAX``. ``include_history`` adds the
    stored versions of one task, newest first, within the reply budget. Raises
    NotFound when the named task does not exist (or has expired).
    """
    s = rt.settings
    store = TaskStore.on(rt.facts)
    now = rt.clock.now()
    if task_id is None:
        rows, total = await store.list_tasks(scope.user_id, scope.projects_read, now, include_done=include_done,
                                             limit=TASK_LIST_MAX)
        return GetTaskResult(scope=scope, tasks=[task_summary(r) for r in rows], total=total,
                             truncated=total > len(rows))
    tid = v.check_task_id(task_id)
    row = await store.get(scope.user_id, scope.projects_read, tid, now)
    if row is None:
        raise NotFound(
            f"no task {tid!r} in {_where(scope.projects_read)}; it may have expired "
            f"(open tasks vanish after {s.policies.task_idle_ttl_days:g} idle days, finished ones after "
            f"{s.policies.task_retention_days:g} days). Call get_task_state without task_id to list the open tasks."
        )
    history: list[TaskVersionOut] = []
    truncated = False
    if include_history:
        versions = await store.history(scope.user_id, row.project, tid, TASK_HISTORY_MAX)
        kept, truncated = whole_within_budget(versions, lambda h: len(state_json(h.state)), total=REPLY_BUDGET_CHARS)
        history = [_version_out(h) for h in kept]
    return GetTaskResult(scope=scope, task=task_out(row), history=history, total=1, truncated=truncated)


async def open_tasks(rt: Runtime, scope: Scope, limit: int) -> list[TaskRow]:
    """Open tasks over ``scope.projects_read``: active before blocked, newest first."""
    rows, _ = await TaskStore.on(rt.facts).list_tasks(scope.user_id, scope.projects_read, rt.clock.now(),
                                                      limit=limit)
    return rows


async def sweep_tasks(rt: Runtime) -> int:
    """Purge tasks past their idle TTL or retention (rows and history); returns how many went."""
    total = 0
    async with rt.write_lock:
        store = TaskStore.on(rt.facts)
        while n := await store.sweep(rt.clock.now()):
            total += n
    if total:
        log.info("swept %d expired tasks", total)
    return total
