"""The page's routes: each request read, handed to a service, and answered with a rendered view.

Paths as the app sees them (``memvault.web.guard`` has already checked the secret and
stripped it; every link carries it again through ``base``):

- ``GET /``: memories, paged, with filters (``project``, ``kind``, ``tag``, ``status``,
  ``since``, ``until``, ``page``, ``per_page``) or, with ``q``, recall's ranking of ``q``
  with why each hit ranks where it does;
- ``GET /m/<id>``: one memory and its history; ``POST /m/<id>/edit`` | ``/forget`` |
  ``/restore`` | ``/undo-merge``: the change, then a redirect (303) to the memory with a
  notice, or the page again with the refusal (a secret in an edit: 400, nothing written);
- ``GET /consolidate`` (``project``: a project id, ``-`` for global): the merges proposed;
  ``POST /consolidate`` (``project``, and one ``p`` per proposal chosen: its member ids
  joined by commas): applies those, then redirects to the merged memory (several: to the
  view, linking them); a proposal whose members changed since: 409, nothing written;
- ``GET /profile``, ``/tasks``, ``/docs``, ``/health``; ``GET /static/<file>``.

Errors of the services become the page with the message (400 bad input, 404 unknown,
409 conflict, 503 not ready).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from memvault.service import browse
from memvault.service.errors import Conflict, InvalidArgument, MemvaultError, NotFound, NotReady
from memvault.service.memory.explain import explain
from memvault.service.memory.recall import LIKELY_ANSWER
from memvault.service.profile.profile import get_profile
from memvault.service.runtime import Runtime
from memvault.service.scope.project import make_scope, readable_name
from memvault.service.upkeep.health import health
from memvault.web import pages
from memvault.web.html import Html, frame, url

STATIC_TYPES = {"style.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"}
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STATUS = {InvalidArgument: 400, NotFound: 404, Conflict: 409, NotReady: 503}


@dataclass
class PageContext:
    """What the routes need from the process serving them.

    ``runtime``: the open runtime, or a sentence saying why the store cannot be used;
    ``user_id``: whose memories the page shows (the owner's user); ``owner_status``: the
    owner's status (pid, version, connections, ...) for the health view.
    """

    runtime: Callable[[], Runtime | str]
    user_id: str
    owner_status: Callable[[], dict[str, Any]]


def _status(exc: MemvaultError) -> int:
    return next((code for cls, code in STATUS.items() if isinstance(exc, cls)), 500)


def build_app(ctx: PageContext, base: str) -> Starlette:
    """The page's ASGI app; ``base`` is the secret path prefix every link starts with (``/<secret>``)."""

    def render(title: str, active: str, body: object, *, status: int = 200, notice: str = "", error: str = ""
               ) -> HTMLResponse:
        return HTMLResponse(frame(base, title, active, body, user=ctx.user_id, notice=notice, error=error),
                            status_code=status)

    def view(title: str, active: str, fn: Callable[[Request, Runtime], Awaitable[Html]]
             ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            rt = ctx.runtime()
            if isinstance(rt, str):
                return render(title, active, "", status=503, error=rt)
            try:
                body = await fn(request, rt)
            except MemvaultError as exc:
                return render(title, active, "", status=_status(exc), error=str(exc))
            return render(title, active, body, notice=request.query_params.get("note", ""))
        return endpoint

    async def memories(request: Request, rt: Runtime) -> Html:
        qp = request.query_params
        f = browse.Filters(project=qp.get("project", ""), kind=qp.get("kind", ""), tag=qp.get("tag", "").strip(),
                           status=qp.get("status", "active"), since=qp.get("since", ""), until=qp.get("until", ""),
                           visibility=qp.get("visibility", ""))
        q = qp.get("q", "").strip()
        per_page = _int("per_page", qp.get("per_page", "50"))
        page = _int("page", qp.get("page", "1"))
        projects = await browse.user_projects(rt, ctx.user_id)
        form = pages.filter_form(base, f, q, per_page, projects, await browse.user_tags(rt, ctx.user_id))
        if q:
            hits = await explain(rt, ctx.user_id, q, browse.check_filters(f), limit=per_page)
            bar = max(LIKELY_ANSWER, rt.settings.ranking.min_relevance)  # what recall counts as relevant
            more = url(base, "/", {**dict(qp), "all": "1"})
            return Html(form + pages.explained_rows(base, hits, q, bar, show_all=qp.get("all") == "1",
                                                    more_href=more))
        found = await browse.list_memories(rt, ctx.user_id, f, page=page, per_page=per_page)
        params = {"project": f.project, "kind": f.kind, "tag": f.tag, "status": f.status, "since": f.since,
                  "until": f.until, "visibility": f.visibility, "per_page": per_page}
        return Html(form + pages.memory_rows(base, found, params))

    async def memory(request: Request, rt: Runtime) -> Html:
        return pages.detail(base, await browse.memory_detail(rt, ctx.user_id, request.path_params["id"]))

    async def consolidation_body(rt: Runtime, chosen: str | None, merged_now: list[str]) -> Html:
        projects = await browse.user_projects(rt, ctx.user_id)
        if chosen is None:  # the first project the list shows (global when it has memories)
            chosen = (projects[0][0] or "-") if projects else "-"
        found = await browse.consolidation(rt, ctx.user_id, "" if chosen == "-" else chosen)
        return pages.consolidation(base, found, projects, merged_now)

    async def consolidation(request: Request, rt: Runtime) -> Html:
        merged = [i for i in request.query_params.get("merged", "").split(",") if UUID_TEXT.fullmatch(i)]
        return await consolidation_body(rt, request.query_params.get("project"), merged)

    async def apply_merges(request: Request) -> Response:
        rt = ctx.runtime()
        if isinstance(rt, str):
            return render("Consolidation", "consolidate", "", status=503, error=rt)
        form = await request.form()
        chosen = str(form.get("project", "-"))
        try:
            done = await browse.apply_proposals(rt, ctx.user_id, "" if chosen == "-" else chosen,
                                                [str(p) for p in form.getlist("p")])
        except MemvaultError as exc:
            try:
                body: object = await consolidation_body(rt, chosen, [])
            except MemvaultError:
                body = ""
            return render("Consolidation", "consolidate", body, status=_status(exc), error=str(exc))
        merged = [p.merged_id for p in done.proposals if p.merged_id]
        if len(merged) == 1:
            note = (f"merged {len(done.proposals[0].member_ids)} memories into this one (Undo merge brings them "
                    "back)")
            return RedirectResponse(url(base, f"/m/{merged[0]}", {"note": note}), status_code=303)
        note = f"{len(merged)} merges applied; each merged memory's page can undo its merge"
        return RedirectResponse(url(base, "/consolidate", {"project": chosen, "merged": ",".join(merged),
                                                           "note": note}), status_code=303)

    async def profile(request: Request, rt: Runtime) -> Html:
        projects = await browse.user_projects(rt, ctx.user_id)
        chosen = request.query_params.get("project")
        why = "from the address"
        if chosen is None:  # the project with the most memories (the global scope counts as one)
            top = max(projects, key=lambda p: p[2], default=None)
            chosen = (top[0] or "-") if top is not None else "-"
            why = f"the project with the most memories, {top[2]}" if top is not None else "no memories yet"
        scope = make_scope(ctx.user_id, "" if chosen == "-" else chosen, "argument")
        return pages.profile(base, await get_profile(rt, scope), projects, chosen, why)

    async def tasks(request: Request, rt: Runtime) -> Html:
        names = {p: n for p, n, _ in await browse.user_projects(rt, ctx.user_id)}
        return pages.tasks(await browse.task_list(rt, ctx.user_id), names)

    async def docs(request: Request, rt: Runtime) -> Html:
        collections = await browse.doc_collections(rt)
        names = {c.project: readable_name(c.project) for c in collections}
        names.update({p: n for p, n, _ in await browse.user_projects(rt, ctx.user_id)})
        q = request.query_params.get("q", "").strip()
        chosen = request.query_params.get("project") or \
            next((c.project for c in collections if c.project), "") or "-"
        found = await browse.search_documents(rt, ctx.user_id, "" if chosen == "-" else chosen, q) if q else None
        return pages.docs(base, collections, await browse.doc_files(rt), names, q, chosen, found)

    async def health_view(request: Request) -> Response:
        rt = ctx.runtime()
        problem = rt if isinstance(rt, str) else None
        checks = [] if isinstance(rt, str) else await health(rt)
        return render("Health", "health", pages.health(ctx.owner_status(), checks, problem))

    async def change(request: Request) -> Response:
        mid, what = request.path_params["id"], request.path_params["what"]
        if what not in ("edit", "forget", "restore", "undo-merge"):
            return PlainTextResponse(f"no such change {what[:40]!r}; a memory takes edit, forget, restore or "
                                     "undo-merge\n", status_code=404)
        rt = ctx.runtime()
        if isinstance(rt, str):
            return render("Memory", "memories", "", status=503, error=rt)
        try:
            if what == "forget":
                done = await browse.forget_memory(rt, ctx.user_id, mid)
                note, target = ("forgotten (restore brings it back)" if done.count else "nothing to forget: it is "
                                "not active"), mid
            elif what == "restore":
                restored = await browse.restore_memory(rt, ctx.user_id, mid)
                note, target = restored.reason, mid
            elif what == "undo-merge":
                note, target = (await browse.undo_merge(rt, ctx.user_id, mid)).reason, mid
            else:
                form = await request.form()
                edit = browse.Edit(content=str(form.get("content", "")), key=str(form.get("key", "")),
                                   tags=str(form.get("tags", "")), importance=str(form.get("importance", "")),
                                   ttl_days=str(form.get("ttl_days", "")))
                result = await browse.edit_memory(rt, ctx.user_id, mid, edit)
                if result.id is None:  # declined: a secret (the reason says which), nothing written
                    detail = await browse.memory_detail(rt, ctx.user_id, mid)
                    return render("Memory", "memories", pages.detail(base, detail), status=400,
                                  error=f"not saved: {result.reason}")
                note, target = f"saved ({result.status}): {result.reason}", result.id
        except MemvaultError as exc:
            try:
                body: object = pages.detail(base, await browse.memory_detail(rt, ctx.user_id, mid))
            except MemvaultError:
                body = ""
            return render("Memory", "memories", body, status=_status(exc), error=str(exc))
        return RedirectResponse(url(base, f"/m/{target}", {"note": note}), status_code=303)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_TYPES:
            return PlainTextResponse("not found\n", status_code=404)
        data = resources.files("memvault.web").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC_TYPES[name])

    routes = [
        Route("/", view("Memories", "memories", memories), methods=["GET"]),
        Route("/m/{id}", view("Memory", "memories", memory), methods=["GET"]),
        Route("/m/{id}/{what:str}", change, methods=["POST"]),
        Route("/consolidate", view("Consolidation", "consolidate", consolidation), methods=["GET"]),
        Route("/consolidate", apply_merges, methods=["POST"]),
        Route("/profile", view("Profile", "profile", profile), methods=["GET"]),
        Route("/tasks", view("Tasks", "tasks", tasks), methods=["GET"]),
        Route("/docs", view("Documents", "docs", docs), methods=["GET"]),
        Route("/health", health_view, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]
    return Starlette(routes=routes)


def _int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, got {text[:40]!r}") from None
