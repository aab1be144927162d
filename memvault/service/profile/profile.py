"""The profile: ``get_profile``, its Markdown form, and the ``recall_context`` block.

The profile is derived, never stored: keyed memories (``remember(..., key="pref.language")``)
become ``preferences``, the most important unkeyed facts / preferences / decisions /
procedures become ``facts``, open tasks come from the task store and counts from the
fact store. A project value of a key overrides the global value of the same key, and
the entry says which won. Only the memories the calling agent reads (``scope.agent``):
shared ones and its own private ones; where it holds a private value of a key in the
same project as a shared one, its private value wins (the entry says ``private``). Every list is bounded by settings (``profile_*``).
"""

from __future__ import annotations

from memvault.clock import to_iso
from memvault.policy.text import cut
from memvault.service.errors import NotReady
from memvault.service.memory.models import Scope
from memvault.service.memory.recall import RecallArgs, recall
from memvault.service.profile.task_models import Overridden, PreferenceOut, ProfileFact, ProfileResult, TaskSummary
from memvault.service.profile.tasks import TASK_LIST_MAX, open_tasks, task_summary
from memvault.service.runtime import Runtime
from memvault.storage.facts import MemoryRow
from memvault.storage.profile import ProfileReader

FACT_KINDS = ("fact", "preference", "decision", "procedure")
CONTEXT_MEMORIES = 8
CONTEXT_BUDGET_CHARS = 8_000
"""Size of the recall_context prompt block and the profile resource, characters (about 2,000
tokens, the session hooks' default block)."""
MAX_PREFERENCES = 100
"""Keyed entries (preferences and other keyed memories) listed by get_profile."""
MAX_FACTS = 10
"""Unkeyed facts listed by get_profile, by importance."""
VALUE_CHARS = 500
"""Cut of each profile value and fact, characters (a preference is a sentence or two)."""


async def get_profile(rt: Runtime, scope: Scope) -> ProfileResult:
    """The profile over ``scope.projects_read`` (project values win over global ones). Read-only."""
    now = rt.clock.now()
    reader = ProfileReader.on(rt.facts)
    projects = scope.projects_read
    fetch = 2 * MAX_PREFERENCES + 1
    keyed = await reader.keyed(scope.user_id, projects, now, fetch, reader=scope.agent)
    truncated = len(keyed) >= fetch

    # Newest first; the first row per (key, project) is the live one, the agent's private one first.
    by_key: dict[str, dict[str, MemoryRow]] = {}
    for row in sorted(keyed, key=lambda r: r.visibility != "private"):  # stable: newest first within each
        by_key.setdefault(row.key or "", {}).setdefault(row.project, row)
    prefs: dict[str, PreferenceOut] = {}
    for key in sorted(by_key):
        if len(prefs) >= MAX_PREFERENCES:
            truncated = True
            break
        slots = by_key[key]
        proj = slots.get(scope.project) if scope.project else None
        glob = slots.get("")
        winner = proj or glob or next(iter(slots.values()))
        value, cut_ = cut(winner.content, VALUE_CHARS)
        truncated |= cut_
        overrides = None
        if proj is not None and glob is not None:
            overrides = Overridden(id=glob.id, value=cut(glob.content, VALUE_CHARS)[0],
                                   project="")
        prefs[key] = PreferenceOut(
            value=value, id=winner.id, updated_at=to_iso(winner.updated_at) or "", source=winner.source,
            kind=winner.kind, project=winner.project, won="global" if winner.project == "" else "project",
            overrides=overrides, value_truncated=cut_,
            visibility="private" if winner.visibility == "private" else "shared",
        )

    facts = []
    for row in await reader.top_unkeyed(scope.user_id, projects, FACT_KINDS, now, MAX_FACTS,
                                        reader=scope.agent):
        text, cut_ = cut(row.content, VALUE_CHARS)
        truncated |= cut_
        facts.append(ProfileFact(id=row.id, content=text, kind=row.kind, importance=row.importance,
                                 project=row.project, updated_at=to_iso(row.updated_at) or "",
                                 content_truncated=cut_,
                                 visibility="private" if row.visibility == "private" else "shared"))
    tasks = await open_tasks(rt, scope, TASK_LIST_MAX)
    counts = await rt.facts.counts_by_kind(scope.user_id, projects, now, reader=scope.agent)
    return ProfileResult(scope=scope, preferences=prefs, facts=facts, open_tasks=[task_summary(t) for t in tasks],
                         counts=dict(sorted(counts.items())), truncated=truncated)


def _scope_line(scope: Scope) -> str:
    where = f"project `{scope.project}`" if scope.project else "the global scope"
    also = " (+ global)" if "" in scope.projects_read and scope.project else ""
    return f"Scope: {where}{also}, user `{scope.user_id}` (project from {scope.source})."


def profile_markdown(p: ProfileResult, budget: int) -> str:
    """The profile as Markdown, at most ``budget`` characters (cut with a marker)."""
    lines = ["# Profile", "", _scope_line(p.scope), ""]
    if p.preferences:
        lines.append("## Preferences")
        for key, e in p.preferences.items():
            note = " _(private)_" if e.visibility == "private" else ""
            if e.overrides is not None:
                note += f" _(project value; overrides global: {e.overrides.value})_"
            elif e.won == "global" and p.scope.project:
                note += " _(global)_"
            lines.append(f"- **{key}**: {e.value}{note}")
        lines.append("")
    if p.facts:
        lines.append("## Facts")
        lines += [f"- {f.content} _({f.kind}{', private' if f.visibility == 'private' else ''})_" for f in p.facts]
        lines.append("")
    lines.append("## Open tasks")
    lines += tasks_markdown(p.open_tasks) or ["- none"]
    lines.append("")
    if p.counts:
        lines.append("Memories by kind: " + ", ".join(f"{k} {n}" for k, n in p.counts.items()) + ".")
    return cut("\n".join(lines).rstrip() + "\n", budget)[0]


def tasks_markdown(tasks: list[TaskSummary]) -> list[str]:
    """One Markdown bullet per task summary."""
    out = []
    for t in tasks:
        step = f" — now: {t.step}" if t.step else ""
        out.append(f"- `{t.task_id}` {t.title} [{t.status}, v{t.version}, updated {t.updated_at}]{step}")
    return out


async def context_block(rt: Runtime, scope: Scope, topic: str) -> str:
    """One bounded Markdown block for a client to insert: profile + memories for ``topic`` + open tasks.

    At most ``CONTEXT_BUDGET_CHARS`` characters: the profile gets about 40 %, the
    memories the rest. When the model is not loaded the memories part says so.
    """
    budget = CONTEXT_BUDGET_CHARS
    profile = await get_profile(rt, scope)
    tasks = profile.open_tasks
    profile.open_tasks = []  # listed once, at the end
    head = profile_markdown(profile, int(budget * 0.4)).replace("## Open tasks\n- none\n", "")
    parts = [head.rstrip(), "", f"# Memories about: {topic.strip()}"]
    try:
        found = await recall(rt, scope, RecallArgs(query=topic, k=CONTEXT_MEMORIES))
        if found.query_note:
            parts.append(f"_({found.query_note})_")
        parts += [f"- {m.content} _({m.kind}, {m.created_at[:10]}, id {m.id})_" for m in found.memories] or ["- none"]
    except NotReady as exc:
        parts.append(f"- (memory search unavailable: {exc})")
    parts += ["", "# Open tasks"]
    parts += tasks_markdown(tasks) or ["- none"]
    parts += ["", "Use get_task_state(task_id) for a task's full state; recall for more memories."]
    return cut("\n".join(parts), budget)[0]
