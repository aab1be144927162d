"""What the local web page shows and changes, for the owner's user: pages of memories,
one memory with its history, the edits, forgets and restores made there, and the
consolidation proposals of one project, applied one by one or all at once, and undone.

Reads go through ``memvault.storage.browse`` (paged SQL over every status); changes go
through the same services as the tools, so every policy holds: an edit is a ``remember``
of the new text that ``supersedes`` the old memory (secrets refused, key slots, history
kept), a forget is ``forget`` by id (soft, restorable), a restore is ``restore``, applying
proposals is ``consolidate``'s ``apply_chosen`` and undoing a merge its ``undo_merge_of``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memvault.clock import to_iso
from memvault.service import validation as v
from memvault.service.documents.models import SearchDocsResult
from memvault.service.documents.search import search_docs
from memvault.service.errors import Conflict, InvalidArgument, NotFound
from memvault.service.memory.consolidate import MAX_LIMIT, ConsolidateArgs, apply_chosen, consolidate, undo_merge_of
from memvault.service.memory.consolidate_models import ConsolidateResult
from memvault.service.memory.forget import ForgetArgs, forget
from memvault.service.memory.history import HistoryArgs, history
from memvault.service.memory.history_models import HistoryItem, RestoreResult
from memvault.service.memory.models import ForgetResult, RememberResult
from memvault.service.memory.remember import RememberArgs, remember
from memvault.service.memory.restore import restore
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope, readable_name
from memvault.storage.browse import LIFE_STATES, BrowseReader, DocCollection, DocFile, MemoryQuery, TaskLine
from memvault.storage.facts import MEMORY_STATUSES, MemoryRow
from memvault.storage.tasks import TaskStore, TaskVersion

PAGE_SIZES = (25, 50, 100)
UI_ACTOR = "memvault-ui"
"""The ``source`` of a memory written by an edit in the page, and the actor in its history."""

__all__ = ["LIFE_STATES", "DocCollection", "DocFile", "TaskLine", "TaskVersion"]


@dataclass(frozen=True)
class MemoryView:
    """One memory as the page shows it. Times are ISO 8601 UTC strings (None: not set)."""

    id: str
    project: str
    project_name: str
    kind: str
    key: str | None
    content: str
    tags: list[str]
    importance: float
    source: str | None
    created_at: str
    updated_at: str
    last_accessed_at: str
    access_count: int
    expires_at: str | None
    status: str  # active | expired | superseded | deleted
    superseded_by: str | None
    ttl_days_left: float | None  # days until expiry (None: no expiry; 0 once expired)
    visibility: str = "shared"  # shared | private (read only by ``agent``)
    agent: str | None = None  # the agent that wrote it (None: unknown)


def memory_view(row: MemoryRow, now: float) -> MemoryView:
    """The page's view of a stored row at time ``now`` (unix s)."""
    expired = row.expires_at is not None and row.expires_at <= now
    status = "expired" if row.status == "active" and expired else row.status
    left = None if row.expires_at is None else max(0.0, (row.expires_at - now) / 86400)
    return MemoryView(
        id=row.id, project=row.project, project_name=readable_name(row.project) if row.project else "global",
        kind=row.kind, key=row.key, content=row.content, tags=list(row.tags), importance=row.importance,
        source=row.source, created_at=to_iso(row.created_at) or "", updated_at=to_iso(row.updated_at) or "",
        last_accessed_at=to_iso(row.last_accessed_at) or "", access_count=row.access_count,
        expires_at=to_iso(row.expires_at), status=status, superseded_by=row.superseded_by,
        ttl_days_left=None if left is None else round(left, 2), visibility=row.visibility, agent=row.agent,
    )


@dataclass(frozen=True)
class Filters:
    """The page's memory filters as typed in (strings; '' = no condition), checked by ``check_filters``.

    ``project``: a project id, or ``"-"`` for the global scope; ``status``: one of
    ``LIFE_STATES`` or ``"all"``; ``since``/``until``: ISO 8601 dates or times (UTC);
    ``visibility``: ``shared`` or ``private`` (any agent's).
    """

    project: str = ""
    kind: str = ""
    tag: str = ""
    status: str = "active"
    since: str = ""
    until: str = ""
    visibility: str = ""


@dataclass(frozen=True)
class Checked:
    """Filters after validation: storage conditions plus the projects a search reads."""

    query: MemoryQuery
    projects: list[str] | None  # None: every project of the user


def check_filters(f: Filters) -> Checked:
    """Validate ``f``; raises InvalidArgument naming the field and what is allowed."""
    projects = None
    if f.project:
        projects = [""] if f.project == "-" else [f.project]
    kinds = v.check_kinds([f.kind]) if f.kind else None
    tag = v.check_tags([f.tag])[0] if f.tag else None
    if f.status == "all":
        states: tuple[str, ...] = LIFE_STATES
    elif f.status in LIFE_STATES:
        states = (f.status,)
    else:
        raise InvalidArgument(f"status {v.shown(f.status)} is not known; use one of: all, {', '.join(LIFE_STATES)}")
    visibility = v.check_visibility(f.visibility) if f.visibility else None
    since = v.check_time("since", f.since or None)
    until = v.check_time("until", f.until or None, end=True)
    if since is not None and until is not None and since > until:
        raise InvalidArgument("since is after until; give a time range that runs forwards")
    return Checked(query=MemoryQuery(projects=projects, kinds=kinds, tag=tag, states=states, created_from=since,
                                     created_to=until, visibility=visibility), projects=projects)


@dataclass(frozen=True)
class MemoryPage:
    """One page of memories, newest first: ``total`` match in all; ``page`` counts from 1."""

    memories: list[MemoryView]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        """How many pages the matches fill (at least 1)."""
        return max(1, -(-self.total // self.per_page))


async def list_memories(rt: Runtime, user_id: str, f: Filters, *, page: int = 1, per_page: int = 50) -> MemoryPage:
    """Page ``page`` (from 1) of the user's memories matching ``f``, ``per_page`` (one of PAGE_SIZES) each.

    Raises InvalidArgument on a bad filter, page or page size. Touches no access statistics.
    """
    if per_page not in PAGE_SIZES:
        raise InvalidArgument(f"per_page must be one of {', '.join(map(str, PAGE_SIZES))}, got {v.shown(per_page)}")
    if page < 1:
        raise InvalidArgument(f"page counts from 1, got {page}")
    checked = check_filters(f)
    now = rt.clock.now()
    rows, total = await BrowseReader.on(rt.facts).page(user_id, checked.query, now, offset=(page - 1) * per_page,
                                                       limit=per_page)
    return MemoryPage(memories=[memory_view(r, now) for r in rows], total=total, page=page, per_page=per_page)


async def user_projects(rt: Runtime, user_id: str) -> list[tuple[str, str, int]]:
    """(project id, readable name, memories in any status) of each project of the user; '' is global."""
    found = await BrowseReader.on(rt.facts).projects(user_id)
    return [(p, readable_name(p) if p else "global", n) for p, n in found]


async def user_tags(rt: Runtime, user_id: str) -> list[str]:
    """The user's tags, most used first (for the tag filter's suggestions)."""
    return await BrowseReader.on(rt.facts).tags(user_id)


@dataclass(frozen=True)
class MemoryDetail:
    """One memory with its recorded changes, newest first (``history_total`` in all)."""

    memory: MemoryView
    history: list[HistoryItem] = field(default_factory=list)
    history_total: int = 0
    merged_from: list[str] = field(default_factory=list)
    """The memories its latest merge joined (newest history entry naming ``consolidated_from``); [] if none."""
    replaced: list[str] = field(default_factory=list)
    """The earlier versions this memory replaced (an edit or a restatement superseded them by it), newest first."""

    @property
    def can_undo_merge(self) -> bool:
        """Active and merged others: ``undo_merge`` applies (it may still refuse, saying why)."""
        return self.memory.status == "active" and bool(self.merged_from)


async def memory_detail(rt: Runtime, user_id: str, memory_id: str) -> MemoryDetail:
    """The memory ``memory_id`` of ``user_id`` (any status) and its history (the ``history`` tool's).

    Raises InvalidArgument (not an id) or NotFound (no such memory of this user: never
    stored, or erased).
    """
    mid = v.check_ids("id", [memory_id])[0]
    found = await rt.facts.select(user_id, ids=[mid], statuses=MEMORY_STATUSES)
    if not found:
        raise NotFound(f"no memory with id {mid} for this user (it may have been erased)")
    hist = await history(rt, make_scope(user_id, found[0].project, "argument", include_global=False),
                         HistoryArgs(id=mid, limit=100))
    merged = next((e.consolidated_from for e in hist.entries if e.memory_id == mid and e.consolidated_from), None)
    replaced = await rt.facts.superseded_by_ids(user_id, mid)
    return MemoryDetail(memory=memory_view(found[0], rt.clock.now()), history=hist.entries, history_total=hist.total,
                        merged_from=list(merged or []), replaced=[r for r in replaced if r not in (merged or [])])


@dataclass(frozen=True)
class Edit:
    """New values of a memory edited in the page (strings as typed; see ``edit_memory``)."""

    content: str
    key: str = ""
    tags: str = ""  # comma-separated
    importance: str = ""
    ttl_days: str = ""


def _number(name: str, text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be a number, got {v.shown(text)}") from None


async def edit_memory(rt: Runtime, user_id: str, memory_id: str, e: Edit) -> RememberResult:
    """Replace active memory ``memory_id`` by one with the edited content, key, tags, importance and TTL.

    A ``remember`` in the memory's project, kind and visibility (a private memory's new
    version is written for its agent, so it stays private to it) with ``supersedes=[memory_id]`` and
    ``force`` (the person chose to keep it): the old memory stays in history, a secret is
    declined as everywhere (``status == "declined"``, nothing written). Blank importance:
    scored as ``remember`` scores it; blank TTL: the kind's default. Raises InvalidArgument
    (a bad value, named), NotFound (no such memory) or Conflict (not active: restore it first).
    """
    mid = v.check_ids("id", [memory_id])[0]
    found = await rt.facts.select(user_id, ids=[mid], statuses=MEMORY_STATUSES, now=rt.clock.now())
    if not found:
        raise NotFound(f"no unexpired memory with id {mid} for this user")
    row = found[0]
    if row.status != "active":
        raise Conflict(f"memory {mid} is {row.status}; restore it before editing it")
    tags = [t.strip() for t in e.tags.split(",") if t.strip()]
    args = RememberArgs(content=e.content, kind=row.kind, key=e.key.strip() or None, tags=tags,
                        importance=_number("importance", e.importance), ttl_days=_number("ttl_days", e.ttl_days),
                        supersedes=[mid], source=UI_ACTOR, force=True, visibility=row.visibility)
    # The new version keeps the old one's visibility and writer: a private memory stays its agent's.
    agent = row.agent if row.visibility == "private" else None
    return await remember(rt, make_scope(user_id, row.project, "argument", include_global=False, agent=agent), args)


async def forget_memory(rt: Runtime, user_id: str, memory_id: str) -> ForgetResult:
    """Forget memory ``memory_id`` (soft: restorable, history kept). Raises InvalidArgument on a bad id."""
    mid = v.check_ids("id", [memory_id])[0]
    return await forget(rt, make_scope(user_id, "", "argument"), ForgetArgs(ids=[mid]))


async def restore_memory(rt: Runtime, user_id: str, memory_id: str) -> RestoreResult:
    """Restore memory ``memory_id`` (see ``memvault.service.memory.restore``; its errors)."""
    return await restore(rt, user_id, memory_id, actor=UI_ACTOR)


@dataclass(frozen=True)
class Consolidation:
    """The merges proposed in one project (``consolidate``'s dry run, for the user: every
    memory, clustered within one owner) with the page's view of each member."""

    project: str  # '' = global
    result: ConsolidateResult
    members: dict[str, MemoryView]  # id -> view, for every member of every proposal


async def consolidation(rt: Runtime, user_id: str, project: str) -> Consolidation:
    """The proposals of ``project`` ('' = global; at most ``MAX_LIMIT``, within the reply
    budget), nothing written. Raises InvalidArgument (a bad project name) or NotFound (a
    project where this user has no memory; the global scope is never unknown)."""
    project = v.check_project(project) or ""
    res = await consolidate(rt, make_scope(user_id, project, "argument", include_global=False),
                            ConsolidateArgs(dry_run=True, limit=MAX_LIMIT, project_given=bool(project)), actor=None)
    ids = [i for p in res.proposals for i in p.member_ids]
    now = rt.clock.now()
    rows = await rt.facts.select(user_id, ids=ids, statuses=MEMORY_STATUSES) if ids else []
    return Consolidation(project=project, result=res, members={r.id: memory_view(r, now) for r in rows})


async def apply_proposals(rt: Runtime, user_id: str, project: str, chosen: list[str]) -> ConsolidateResult:
    """Apply the proposals ``chosen`` in ``project`` ('' = global), each given as its member ids
    joined by commas (as the page's forms send them); see ``consolidate.apply_chosen`` (its
    errors: a proposal whose members changed since it was shown is refused, nothing written)."""
    project = v.check_project(project) or ""
    sets = [[i for i in (x.strip() for x in c.split(",")) if i] for c in chosen]
    return await apply_chosen(rt, make_scope(user_id, project, "argument", include_global=False), sets,
                              actor=UI_ACTOR)


async def undo_merge(rt: Runtime, user_id: str, memory_id: str) -> RestoreResult:
    """Undo the merge recorded on active memory ``memory_id``: its members come back, it is
    retired when the merge created it (see ``consolidate.undo_merge_of``; its errors)."""
    return await undo_merge_of(rt, user_id, memory_id, actor=UI_ACTOR)


async def task_list(rt: Runtime, user_id: str, *, limit: int = 100, versions: int = 10
                    ) -> list[tuple[TaskLine, list[TaskVersion]]]:
    """The user's unexpired tasks (any project and status, newest first), each with its newest ``versions``."""
    store = TaskStore.on(rt.facts)
    lines = await BrowseReader.on(rt.facts).tasks(user_id, rt.clock.now(), limit)
    return [(t, await store.history(user_id, t.project, t.task_id, versions)) for t in lines]


DOC_FILES_SHOWN = 500
"""Files the Documents view lists at most (the most recently indexed)."""


async def doc_files(rt: Runtime) -> list[DocFile]:
    """Indexed files of every project with their chunk counts and last index time, newest first."""
    return await BrowseReader.on(rt.facts).doc_files(DOC_FILES_SHOWN)


async def search_documents(rt: Runtime, user_id: str, project: str, query: str, k: int = 10) -> SearchDocsResult:
    """``search_docs`` as the page asks it: ``query`` over ``project``'s documents and the shared ones
    (``project`` '' : the shared ones only), best ``k``. Raises what ``search_docs`` raises."""
    scope = make_scope(user_id, project, "argument")
    return await search_docs(rt, scope, query, k, None, None, 0.0)


async def doc_collections(rt: Runtime) -> list[DocCollection]:
    """Indexed document collections of every project with file and chunk counts and last index time."""
    return await BrowseReader.on(rt.facts).doc_collections()
