"""The page shows bidirectional controls as visible marks in every field it prints.

Each view is rendered (``memvault.web.pages`` and the frame) from values that carry one
of the controls in every field a store could hold (memory text, project, key, tags,
agent, source, history, task, document collection, health detail, the notice line), and
the HTML is parsed as a browser would: no control may reach drawn text (text nodes and
the attributes a browser shows), every field shows a mark, and form values keep the
exact stored text. The real-browser check is in tests/process/test_web_ui.py.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from memvault.service.browse import (
    Consolidation,
    DocCollection,
    DocFile,
    Filters,
    MemoryDetail,
    MemoryPage,
    MemoryView,
    TaskLine,
)
from memvault.service.memory.consolidate_models import ConsolidateResult, Proposal, ProposalMember
from memvault.service.memory.explain import Explained
from memvault.service.memory.history_models import HistoryItem
from memvault.service.memory.models import Scope
from memvault.service.profile.task_models import PreferenceOut, ProfileFact, ProfileResult
from memvault.service.upkeep.health import Check
from memvault.storage.tasks import TaskVersion
from memvault.web import pages
from memvault.web.html import frame

# Unicode's Bidi_Control characters with their short names (the marks the page shows).
BIDI = {"\u061c": "ALM", "\u200e": "LRM", "\u200f": "RLM", "\u202a": "LRE", "\u202b": "RLE",
        "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO", "\u2066": "LRI", "\u2067": "RLI",
        "\u2068": "FSI", "\u2069": "PDI"}
CONTROLS = list(BIDI)
ID1, ID2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
SHOWN_ATTRS = {"title", "placeholder", "label", "alt", "aria-label"}


def _with(n: int, word: str) -> str:
    """``word`` with the n-th control (cycling through all twelve) inside it."""
    return f"{word[:2]}{CONTROLS[n % len(CONTROLS)]}{word[2:]}"


class Drawn(HTMLParser):
    """What a browser draws: text outside ``<textarea>`` and the shown attributes; and the form values."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.drawn: list[str] = []
        self.text: list[str] = []
        self.values: list[str] = []
        self._in_textarea = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_textarea = tag == "textarea"
        for name, value in attrs:
            if value is None:
                continue
            if name in SHOWN_ATTRS:
                self.drawn.append(value)
            elif name == "value":
                self.values.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._in_textarea = False

    def handle_data(self, data: str) -> None:
        if self._in_textarea:
            self.values.append(data)
        else:
            self.drawn.append(data)
            self.text.append(data)


def _parse(html: str) -> Drawn:
    d = Drawn()
    d.feed(html)
    return d


def _memory(n: int, mid: str = ID1) -> MemoryView:
    return MemoryView(id=mid, project="p1", project_name=_with(n, "billing"), kind="fact",
                      key=_with(n + 1, "pref.editor"), content=_with(n + 2, "The price is 1000 USD"),
                      tags=[_with(n + 3, "money"), _with(n + 4, "ops")], importance=0.5,
                      source=_with(n + 5, "cursor"), created_at="2026-01-01T00:00:00Z",
                      updated_at="2026-01-01T00:00:00Z", last_accessed_at="2026-01-01T00:00:00Z", access_count=0,
                      expires_at=None, status="active", superseded_by=None, ttl_days_left=None,
                      visibility="private", agent=_with(n + 6, "claude"))


def _views() -> dict[str, str]:
    """Every view rendered with hostile values, as full pages."""
    base = "/s"
    m, m2 = _memory(0), _memory(7, ID2)
    page = MemoryPage(memories=[m, m2], total=2, page=1, per_page=50)
    projects = [("p1", _with(3, "billing"), 2)]
    history = [HistoryItem(memory_id=ID1, action="added", at="2026-01-01T00:00:00Z", actor=_with(4, "claude"),
                           reason=_with(5, "user said so"), key=_with(6, "pref.editor"),
                           content=_with(7, "old text here"))]
    scope = Scope(user_id="u", project="p1", project_name=_with(8, "billing"), source="argument")
    proposal = Proposal(member_ids=[ID1, ID2], kept_id=ID1, content=_with(9, "merged text"), kind="fact",
                        key=_with(10, "pref.editor"), importance=0.5, tags=[_with(11, "money")],
                        created_at="2026-01-01T00:00:00Z",
                        members=[ProposalMember(id=ID1, content_preview=_with(1, "first"), kind="fact",
                                                created_at="2026-01-01T00:00:00Z"),
                                 ProposalMember(id="33333333-3333-4333-8333-333333333333",
                                                content_preview=_with(2, "unknown member"), kind="fact",
                                                created_at="2026-01-01T00:00:00Z")])
    result = ConsolidateResult(applied=False, proposals=[proposal], clusters_found=1, scanned=2, truncated=False,
                               hint="", scope=scope)
    profile = ProfileResult(scope=scope, preferences={_with(1, "pref.editor"): PreferenceOut(
        value=_with(2, "vim"), id=ID1, updated_at="2026-01-01T00:00:00Z", kind="preference", project="",
        won="global")}, facts=[ProfileFact(id=ID2, content=_with(3, "a fact"), kind="fact", importance=0.5,
                                           project="", updated_at="2026-01-01T00:00:00Z")],
        open_tasks=[], counts={"fact": 1})
    task = TaskLine(project="p1", task_id=_with(4, "web-page"), title=_with(5, "Build it"), status="active", version=1,
                    updated_at=0.0, expires_at=0.0)
    version = TaskVersion(version=1, title=_with(6, "Build it"), status="active", state={"step": _with(7, "list")},
                          actor=_with(8, "claude"))
    hit = Explained(memory=m, rank=1, score=0.5, relevance=0.5, importance=0.5, recency=0.5, dense_rank=1,
                    keyword_rank=None, similarity=0.9)
    bodies = {
        "list": pages.filter_form(base, Filters(tag=_with(9, "money")), _with(10, "price"), 50, projects,
                                  [_with(11, "money")]) + pages.memory_rows(base, page, {}),
        "search": pages.explained_rows(base, [hit], _with(0, "price"), 0.3),
        "search-empty": pages.explained_rows(base, [], _with(1, "price"), 0.3),
        "detail": pages.detail(base, MemoryDetail(memory=m, history=history, history_total=1)),
        "consolidate": pages.consolidation(base, Consolidation(project="p1", result=result,
                                                               members={ID1: m, ID2: m2}), projects),
        "profile": pages.profile(base, profile, projects, "p1"),
        "tasks": pages.tasks([(task, [version])], {"p1": _with(9, "billing")}),
        "docs": pages.docs(base, [DocCollection(project="p1", collection=_with(10, "handbook"), files=1, chunks=2,
                                                last_indexed_at=0.0)],
                           [DocFile(project="p1", collection=_with(12, "handbook"), path=_with(13, "docs/a.md"),
                                    chunks=2, size=10, indexed_at=0.0)], {"p1": _with(11, "billing")}),
        "health": pages.health({"pid": 1, "data_dir": _with(0, "/home/u/data")},
                               [Check("vector index", False, _with(1, "missing: /home/u/docs/a.md"))], None),
    }
    return {name: frame(base, _with(2, "Memory"), "memories", body, user=_with(3, "alice"),
                        notice=_with(4, "saved"), error=_with(5, "refused"))
            for name, body in bodies.items()}


@pytest.mark.parametrize("view", ["list", "search", "search-empty", "detail", "consolidate", "profile", "tasks",
                                  "docs", "health"])
def test_no_bidi_control_reaches_drawn_text_and_each_shows_as_a_mark(view: str) -> None:
    html = _views()[view]
    d = _parse(html)
    drawn = "".join(d.drawn)
    leaked = sorted({f"U+{ord(c):04X}" for c in drawn if c in BIDI})
    assert leaked == [], f"{view}: controls drawn raw: {leaked}"
    assert "⟨" in drawn and "⟩" in drawn, view
    assert '<span class="bidi" title="U+' in html  # the styled mark, naming its code point on hover


def test_every_control_has_its_own_mark_with_code_point_and_name() -> None:
    for n, ch in enumerate(CONTROLS):
        one = pages.memory_rows("/s", MemoryPage(memories=[_memory(n)], total=1, page=1, per_page=50), {})
        name = BIDI[ch]
        assert f"⟨{name}⟩" in one, name
        assert f"U+{ord(ch):04X}" in one, name
        assert ch not in "".join(_parse(one).drawn), name


def test_every_field_of_a_memory_shows_its_mark() -> None:
    m = _memory(0)
    drawn = "".join(_parse(pages.detail("/s", MemoryDetail(memory=m))).text)
    fields = {"content": m.content, "project": m.project_name, "key": m.key, "tags": m.tags[0], "agent": m.agent,
              "source": m.source}
    for name, value in fields.items():
        assert value is not None
        ch = next(c for c in value if c in BIDI)
        assert value.replace(ch, f"⟨{BIDI[ch]}⟩") in drawn, name


def test_form_values_keep_the_exact_text_and_the_form_says_what_it_holds() -> None:
    m = _memory(0)
    html = pages.detail("/s", MemoryDetail(memory=m))
    d = _parse(html)
    assert m.content in d.values  # the textarea posts back what is stored
    assert m.key in d.values and ", ".join(m.tags) in d.values
    drawn = "".join(d.drawn)
    assert "direction controls" in drawn and BIDI[m.content[2]] in drawn
    plain = MemoryView(**{**m.__dict__, "content": "plain", "key": "k", "tags": ["t"]})
    assert "direction controls" not in pages.detail("/s", MemoryDetail(memory=plain))


def test_hidden_values_and_links_are_not_rewritten() -> None:
    tag = "mo\u202eney"
    html = pages.filter_form("/s", Filters(), "", 50, [("p\u202e1", "billing", 1)], [tag])
    d = _parse(html)
    assert "p\u202e1" in d.values and tag in d.values  # option values and datalist values exact
    assert "\u202e" not in "".join(d.drawn)
