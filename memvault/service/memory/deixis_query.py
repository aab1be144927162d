"""Recall of a query that only points ("continue", "上次那个方案"): search for the current task.

``detect_deixis`` (policy) decides whether a query only points; this module looks up the
scope's most recent open task and builds the query recall searches instead.
"""

from __future__ import annotations

from memvault.policy.deixis import detect_deixis, enrich_query
from memvault.policy.tasks import task_step
from memvault.service.memory.models import Scope
from memvault.service.profile.tasks import open_tasks
from memvault.service.runtime import Runtime


async def deictic_query(rt: Runtime, scope: Scope, query: str) -> tuple[str, str | None]:
    """The query recall should search, and a note when it was changed.

    A query that only points ("continue", "上次那个方案") is replaced by the scope's most
    recent open task (title, current step) followed by the query; otherwise the query
    is returned unchanged with no note.
    """
    d = detect_deixis(query)
    if not d.deictic:
        return query, None
    rows = await open_tasks(rt, scope, 1)
    if not rows:
        return query, (f"the query {query!r} {d.reason}, but there is no open task in this scope to resolve it; "
                       "searched as written")
    t = rows[0]
    enriched = enrich_query(query, t.title, task_step(t.state))
    return enriched, (f"the query {query!r} {d.reason}; searched for the current task instead: {enriched!r} "
                      f"(task {t.task_id!r}, {t.status}, version {t.version})")
