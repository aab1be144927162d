"""The page's views as HTML bodies: memories (list and search), one memory, consolidation,
profile, tasks, documents, health. Pure rendering of what the services returned (see ``memvault.web.app``)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memvault.service.browse import (
    LIFE_STATES,
    PAGE_SIZES,
    Consolidation,
    DocCollection,
    DocFile,
    Filters,
    MemoryDetail,
    MemoryPage,
    MemoryView,
    TaskLine,
    TaskVersion,
)
from memvault.service.documents.models import SearchDocsResult
from memvault.service.documents.owner import split_key
from memvault.service.memory.explain import Explained
from memvault.service.profile.task_models import ProfileResult
from memvault.service.upkeep.health import Check
from memvault.vocabulary import KINDS
from memvault.web.html import Html, bidi_controls, bidi_note, field, h, join, post_button, select, table, tag, url, void

PREVIEW_CHARS = 160


def _iso(ts: float | None) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


def _short(iso: str | None) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM`` (UTC)."""
    return "" if not iso else iso[:16].replace("T", " ")


def _preview(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= PREVIEW_CHARS else one[: PREVIEW_CHARS - 1] + "…"


def _ttl(m: MemoryView) -> Html:
    if m.expires_at is None:
        return h("never")
    return tag("span", f"{_short(m.expires_at)} ({m.ttl_days_left:g} d)", title=m.expires_at)


def _memory_link(base: str, m: MemoryView) -> Html:
    return tag("a", _preview(m.content), href=f"{base}/m/{m.id}")


def _memory_cell(base: str, m: MemoryView) -> Html:
    """The memory's text (the widest column) with its kind, key, tags, project, readers and source under it."""
    parts = [m.kind, m.project_name, *([f"key {m.key}"] if m.key else []),
             *([f"tags {', '.join(m.tags)}"] if m.tags else []), _seen_by(m), *([f"from {m.source}"] if m.source else [])]
    return join([_memory_link(base, m), tag("div", " · ".join(parts), class_="meta")])


def filter_form(base: str, f: Filters, q: str, per_page: int, projects: Sequence[tuple[str, str, int]],
                tags: Sequence[str]) -> Html:
    """The GET form of the memory list: text search, project, kind, tag, status, visibility, time range,
    page size."""
    project_opts = [("", "all projects"), *[(p or "-", f"{name} ({n})") for p, name, n in projects]]
    return tag("form", join([
        field("Search", type="search", name="q", value=q, placeholder="what recall would be asked", size=32),
        select("project", project_opts, f.project, "Project"),
        select("kind", [("", "all kinds"), *[(k, k) for k in KINDS]], f.kind, "Kind"),
        field("Tag", name="tag", value=f.tag, list="tags", size=12),
        tag("datalist", join(tag("option", value=t, label=t if bidi_controls(t) else None) for t in tags),
            id="tags"),
        select("status", [(s, s) for s in (*LIFE_STATES, "all")], f.status, "Status"),
        select("visibility", [("", "shared and private"), ("shared", "shared"), ("private", "private")], f.visibility,
               "Read by"),
        field("From", type="date", name="since", value=f.since),
        field("To", type="date", name="until", value=f.until),
        select("per_page", [(str(n), str(n)) for n in PAGE_SIZES], str(per_page), "Per page"),
        tag("button", "Show", type="submit"),
        bidi_note(q, f.tag),
    ]), method="get", action=f"{base}/", class_="filters")


def _seen_by(m: MemoryView) -> str:
    """Who reads memory ``m``: every agent (shared) or only its writer (private)."""
    return f"only {m.agent} (private)" if m.visibility == "private" else "every agent (shared)"


def memory_rows(base: str, page: MemoryPage, params: Mapping[str, object]) -> Html:
    """The paged table of memories with its pager (``params``: the filters, kept across pages)."""
    rows = [(_memory_cell(base, m), f"{m.importance:.2f}", tag("span", m.status, class_=f"st {m.status}"), _ttl(m),
             join([_short(m.created_at), void("br"), tag("span", f"updated {_short(m.updated_at)}", class_="meta")]))
            for m in page.memories]
    if not rows:
        return tag("p", "No memory matches these filters.", class_="empty")
    headers = ["Memory", "Importance", "Status", "Expires", "Created"]
    return join([tag("p", f"{page.total} memories · page {page.page} of {page.pages}", class_="count"),
                 table(headers, rows, class_="memories"), pager(base, page, params)])


def pager(base: str, page: MemoryPage, params: Mapping[str, object]) -> Html:
    """Links to the first, previous, next and last pages."""
    def go(n: int, text: str) -> Html:
        if n < 1 or n > page.pages or n == page.page:
            return tag("span", text, class_="off")
        return tag("a", text, href=url(base, "/", {**params, "page": n}))
    return tag("nav", join([go(1, "« first"), go(page.page - 1, "‹ previous"),
                            tag("span", f"{page.page} / {page.pages}"), go(page.page + 1, "next ›"),
                            go(page.pages, "last »")], " "), class_="pager")


def explained_rows(base: str, hits: Sequence[Explained], query: str, bar: float, show_all: bool = False,
                   more_href: str = "") -> Html:
    """The search results as recall ranks them, with why: each part of the rank. Those at or above
    the relevance ``bar`` (what recall counts as probably answering) are listed; the rest are
    counted ("N more below the relevance bar") and listed under them when ``show_all``
    (``more_href``: the address that shows them)."""
    if not hits:
        return tag("p", f"No active memory matches {query!r}.", class_="empty")
    place = {x.memory.id: x.rank for x in hits}
    headers = ["#", "Memory", "Score", "Relevance", "Dense rank", "Cosine",
               "Keyword rank", "Written beside", "Importance", "Recency"]

    def rows_of(xs: Sequence[Explained]) -> list[tuple[object, ...]]:
        return [(x.rank, _memory_cell(base, x.memory), f"{x.score:.3f}",
                 f"{x.relevance:.3f}", "—" if x.dense_rank is None else x.dense_rank,
                 "—" if x.similarity is None else f"{x.similarity:.3f}",
                 "—" if x.keyword_rank is None else x.keyword_rank,
                 "—" if x.neighbour_of is None else f"#{place[x.neighbour_of]}" if x.neighbour_of in place else "yes",
                 f"{x.importance:.2f}", f"{x.recency:.3f}") for x in xs]

    relevant = [x for x in hits if x.relevance >= bar]
    below = [x for x in hits if x.relevance < bar]
    note = ("Why this result: recall fuses the dense (meaning) and keyword channels into a relevance; a memory "
            "written just before or after one of the best hits in the same conversation is lifted near it "
            "(\"Written beside\": that hit's place); then results are ordered by a weighted mean of relevance, "
            "importance and recency (of the last access). Searches read active, unexpired memories; nothing here "
            "counts as an access.")
    out = [tag("p", note, class_="why")]
    if relevant:
        out.append(table(headers, rows_of(relevant), class_="memories why-table"))
    else:
        out.append(tag("p", f"No memory reaches the relevance bar ({bar:g}): nothing stored seems to answer "
                            f"{query!r}; recall would say so.", class_="empty nothing-relevant"))
    if below:
        more = f"{len(below)} more below the relevance bar ({bar:g}): recall would return them only as weak matches"
        if show_all:
            out.append(tag("p", more, class_="below-bar"))
            out.append(table(headers, rows_of(below), class_="memories why-table below"))
        else:
            out.append(tag("p", join([more, " · ", tag("a", "show them", href=more_href)]), class_="below-bar"))
    return join(out)


def detail(base: str, d: MemoryDetail) -> Html:
    """One memory: its fields, the edit form, forget or restore, and its history."""
    m = d.memory
    facts = table(["Field", "Value"], [
        ("id", m.id), ("status", tag("span", m.status, class_=f"st {m.status}")), ("project", m.project_name),
        ("kind", m.kind), ("key", m.key or "—"), ("tags", ", ".join(m.tags) or "—"),
        ("importance", f"{m.importance:.2f}"), ("expires", _ttl(m)), ("read by", _seen_by(m)),
        ("written by", m.agent or "—"), ("source", m.source or "—"), ("created", m.created_at), ("updated", m.updated_at),
        ("last access", f"{m.last_accessed_at} ({m.access_count} accesses)"),
        ("superseded by", tag("a", m.superseded_by, href=f"{base}/m/{m.superseded_by}") if m.superseded_by else "—"),
        ("replaces", _links(base, d.replaced) if d.replaced else "—"),
    ], class_="fields")
    versions = []
    if d.replaced:
        versions.append(join(["This version replaced ", _links(base, d.replaced), "."]))
    if m.superseded_by:
        versions.append(join(["A newer version replaced this one: ",
                              tag("a", m.superseded_by, href=f"{base}/m/{m.superseded_by}", class_="newer"), "."]))
    lineage = tag("p", join(versions, " "), class_="versions") if versions else ""
    actions = []
    if m.status in ("active", "expired"):
        actions.append(post_button(f"{base}/m/{m.id}/forget", "Forget", cls="danger"))
    if m.status in ("superseded", "deleted"):
        actions.append(post_button(f"{base}/m/{m.id}/restore", "Restore"))
    if d.can_undo_merge:
        actions.append(post_button(f"{base}/m/{m.id}/undo-merge", "Undo merge"))
    edit = ""
    if m.status == "active":
        edit = tag("form", join([
            tag("label", join(["Content", tag("textarea", m.content, name="content", rows=6, required=True)]),
                class_="wide"),
            field("Key", name="key", value=m.key or "", size=24),
            field("Tags (comma-separated)", name="tags", value=", ".join(m.tags), size=32),
            field("Importance", name="importance", value=f"{m.importance:g}", type="number", min=0, max=1,
                  step="0.01"),
            field("TTL days (blank: the kind's default)", name="ttl_days",
                  value="" if m.ttl_days_left is None else f"{m.ttl_days_left:g}", size=8),
            tag("button", "Save as a new version", type="submit"),
            bidi_note(m.content, m.key, ", ".join(m.tags)),
        ]), method="post", action=f"{base}/m/{m.id}/edit", class_="edit")
    hist_rows = [(_short(e.at), e.action, e.actor or "", e.reason or "", e.status or "", e.key or "",
                  tag("a", e.memory_id[:8], href=f"{base}/m/{e.memory_id}"),
                  tag("a", e.superseded_by[:8], href=f"{base}/m/{e.superseded_by}") if e.superseded_by else "",
                  _links(base, e.consolidated_from or [], short=True),
                  "(same text as above)" if e.content_repeated else (e.content or ""))
                 for e in d.history]
    hist = join([tag("h2", f"History ({d.history_total} changes)"),
                 table(["At", "What", "By", "Why", "Status", "Key", "Memory", "Superseded by", "Merged", "Text"],
                       hist_rows, class_="history")])
    merged = tag("p", join([f"It merged {len(d.merged_from)} memories: ", _links(base, d.merged_from)]),
                 class_="merged") if d.merged_from else ""
    return join([lineage, tag("pre", m.content, class_="content"), facts, merged,
                 tag("div", join(actions), class_="actions"),
                 tag("h2", "Edit") if edit else "", edit, hist])


def _links(base: str, ids: Sequence[str], *, short: bool = False) -> Html:
    """Links to the memories ``ids`` (their first 8 characters when ``short``), comma-separated."""
    return join((tag("a", i[:8] if short else i, href=f"{base}/m/{i}") for i in ids), ", ")


def consolidation(base: str, c: Consolidation, projects: Sequence[tuple[str, str, int]],
                  merged_now: Sequence[str] = ()) -> Html:
    """The merges proposed in one project: each group's members, the text kept and what the merged
    memory would hold, with an Apply button per group and one for all (``merged_now``: merged
    memories just written, linked)."""
    chosen = c.project or "-"
    opts = [(pid or "-", f"{name} ({n})") for pid, name, n in projects]
    if chosen not in {o for o, _ in opts}:
        opts.insert(0, (chosen, "global" if chosen == "-" else chosen))
    form = tag("form", join([select("project", opts, chosen, "Project"), tag("button", "Show", type="submit")]),
               method="get", action=f"{base}/consolidate", class_="filters")
    just = tag("p", join(["Merged just now: ", _links(base, merged_now)]), class_="merged") if merged_now else ""
    res = c.result
    note = ("Memories of one project that restate each other (the same meaning, no conflicting word), grouped "
            "within one owner: the shared memories, or one agent's private ones. Applying writes one merged "
            "memory per group and marks its members superseded by it (nothing is deleted); the merged "
            "memory's page can undo it.")
    if not res.proposals:
        return join([form, just, tag("p", note, class_="why"),
                     tag("p", f"No memories of this project restate each other ({res.scanned} active memories "
                              "compared).", class_="empty")])
    n_groups = len(res.proposals)
    shown = _plural(n_groups, "group") + (f" shown of {res.clusters_found}" if res.truncated else "")
    count = tag("p", f"{shown} of restatements among {_plural(res.scanned, 'active memory', 'active memories')} "
                     "compared" + ("; apply these, then look again for the rest" if res.truncated else ""),
                class_="count")
    action = f"{base}/consolidate"
    every = tag("div", post_button(action, f"Apply all {n_groups} merges", hidden=[
        ("project", chosen), *[("p", ",".join(p.member_ids)) for p in res.proposals]]), class_="actions") \
        if n_groups > 1 else ""
    groups = []
    for n, p in enumerate(res.proposals, 1):
        rows = []
        for mp in p.members:
            m = c.members.get(mp.id)
            rows.append((_memory_link(base, m) if m else mp.content_preview, mp.kind,
                         f"{m.importance:.2f}" if m else "", ", ".join(m.tags) if m else "",
                         _short(mp.created_at), "text kept" if mp.id == p.kept_id else ""))
        first = c.members.get(p.member_ids[0])
        holds = (f"kind {p.kind} · key {p.key or '—'} · importance {p.importance:.2f} · tags "
                 f"{', '.join(p.tags) or '—'} · expires {_short(p.expires_at) or 'never'} · read by "
                 f"{_seen_by(first) if first else '—'}")
        groups.append(tag("section", join([
            tag("h2", f"Group {n}: {len(p.member_ids)} memories"),
            table(["Member", "Kind", "Importance", "Tags", "Created", ""], rows, class_="memories"),
            tag("h3", "The merged memory would hold"),
            tag("pre", p.content + ("…" if p.content_truncated else ""), class_="content"),
            tag("p", holds, class_="count"),
            tag("div", post_button(action, "Apply this merge", hidden=[("project", chosen),
                                                                       ("p", ",".join(p.member_ids))]),
                class_="actions"),
        ]), class_="proposal"))
    return join([form, just, tag("p", note, class_="why"), count, every, *groups])


def _plural(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def profile(base: str, p: ProfileResult, projects: Sequence[tuple[str, str, int]], chosen: str,
            why: str = "") -> Html:
    """The profile of one project (with the global one under it): each key, the value that wins and why.
    ``why``: how ``chosen`` was picked (shown beside its name)."""
    opts = [("-", "global only"), *[(pid, f"{name} ({n})") for pid, name, n in projects if pid]]
    form = tag("form", join([select("project", opts, chosen, "Project"), tag("button", "Show", type="submit")]),
               method="get", action=f"{base}/profile", class_="filters")
    name = "global only" if chosen == "-" else next((n for pid, n, _ in projects if pid == chosen), chosen)
    showing = tag("p", f"Showing {name}" + (f" ({why})" if why else "") +
                  ("" if chosen == "-" else ", with the global keys and facts under it"), class_="showing")
    prefs = [(key, tag("a", pref.value, href=f"{base}/m/{pref.id}"), pref.won, pref.kind,
              "" if pref.overrides is None else tag("a", f"global: {pref.overrides.value}",
                                                    href=f"{base}/m/{pref.overrides.id}"),
              _short(pref.updated_at)) for key, pref in p.preferences.items()]
    facts = [(tag("a", f.content, href=f"{base}/m/{f.id}"), f.kind, f"{f.importance:.2f}",
              f.project and "project" or "global") for f in p.facts]
    counts = ", ".join(f"{k}: {n}" for k, n in p.counts.items()) or "no memories"
    return join([form, showing, tag("p", f"Active memories by kind: {counts}", class_="count"),
                 tag("h2", "Keys (the value that wins)"),
                 table(["Key", "Value", "Wins from", "Kind", "Overrides", "Updated"], prefs) if prefs
                 else tag("p", "No keyed memory.", class_="empty"),
                 tag("h2", "Most important facts"),
                 table(["Fact", "Kind", "Importance", "Scope"], facts) if facts
                 else tag("p", "No facts.", class_="empty")])


def tasks(items: Sequence[tuple[TaskLine, Sequence[TaskVersion]]], project_names: Mapping[str, str]) -> Html:
    """Every unexpired task with its stored versions (newest first) folded under it."""
    if not items:
        return tag("p", "No task.", class_="empty")
    out = []
    for t, versions in items:
        vrows = [(v.version, v.status, v.title, _iso(v.at), v.actor or "",
                  tag("pre", json.dumps(v.state, ensure_ascii=False, indent=1)[:4000])) for v in versions]
        summary = tag("summary", join([tag("strong", t.title), f" · {t.task_id} · ",
                                       tag("span", t.status, class_=f"st {t.status}"),
                                       f" · v{t.version} · {project_names.get(t.project, t.project or 'global')}"
                                       f" · updated {_iso(t.updated_at)} · expires {_iso(t.expires_at)}"]))
        out.append(tag("details", join([summary, table(["Version", "Status", "Title", "At", "By", "State"],
                                                       vrows, class_="history")]), class_="task"))
    return join(out)


def docs(base: str, items: Sequence[DocCollection], files: Sequence[DocFile], project_names: Mapping[str, str],
         q: str = "", project: str = "-", found: SearchDocsResult | None = None) -> Html:
    """Indexed documents: a search form (``q`` in ``project``, '-' = shared only) and its results
    (``found``), the collections, then every file with its chunk count and last index time."""
    if not items:
        return tag("p", "No document is indexed (memvault index <folder> adds some).", class_="empty")

    def name(key: str) -> str:  # a project id, or the key of documents one user indexed over HTTP
        project, owner = split_key(key)
        shown = project_names.get(project, project) if project else "global"
        return shown if owner is None else f"{shown} (only {owner})"

    projects = sorted({split_key(c.project)[0] for c in items})  # a user's own documents: under their project
    opts = [(p or "-", name(p)) for p in projects]
    form = tag("form", join([
        field("Search the documents", type="search", name="q", value=q, placeholder="what search_docs would be asked",
              size=36),
        select("project", opts, project, "Project"), tag("button", "Search", type="submit")]),
        method="get", action=f"{base}/docs", class_="filters")
    out = [form]
    if q and found is not None:
        if found.results:
            out.append(table(["Where", "Text", "Relevance", "Project"], [
                (join([tag("strong", f"{r.path}:{r.start_line}-{r.end_line}"),
                       tag("div", r.heading or r.symbol or "", class_="meta")]),
                 tag("pre", r.text[:600] + ("…" if len(r.text) > 600 or r.text_truncated else "")),
                 f"{r.relevance:.3f}", name(r.project)) for r in found.results], class_="memories docs-hits"))
        else:
            out.append(tag("p", f"No indexed chunk matches {q!r} in {name('' if project == '-' else project)}.",
                           class_="empty"))
    out += [tag("h2", "Collections"),
            table(["Project", "Collection", "Files", "Chunks", "Last indexed (UTC)"],
                  [(name(c.project), c.collection, c.files, c.chunks, _iso(c.last_indexed_at)) for c in items]),
            tag("h2", f"Files ({len(files)}, most recently indexed first)"),
            table(["File", "Project", "Collection", "Chunks", "Size", "Last indexed (UTC)"],
                  [(f.path, name(f.project), f.collection, f.chunks, _size(f.size), _iso(f.indexed_at))
                   for f in files], class_="memories doc-files")]
    return join(out)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def health(owner: Mapping[str, Any], checks: Sequence[Check], problem: str | None) -> Html:
    """The owner's status and the health checks (each with its fix when not fine)."""
    shown = {k: _iso(v) + " UTC" if k == "since" and isinstance(v, (int, float)) else v for k, v in owner.items()}
    own = table(["Owner", ""], list(shown.items()), class_="fields")
    if problem is not None:
        return join([own, tag("p", problem, class_="error")])
    rows = [(c.name, tag("span", "ok" if c.ok else "PROBLEM", class_="st " + ("active" if c.ok else "deleted")),
             c.detail) for c in checks]
    return join([own, tag("h2", "Checks"), table(["Check", "", "Detail"], rows)])
