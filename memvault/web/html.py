"""HTML building blocks of the page: escaping, the page frame, links, tables and forms.

Every value that comes from the store or the request goes through ``h`` (HTML-escaped,
quotes included); ``Html`` marks text that is already markup, so building blocks compose
without escaping twice. No script anywhere: the page works with links and forms alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from urllib.parse import urlencode


class Html(str):
    """Text that is already HTML (built here from escaped parts); ``h`` leaves it as is."""

    __slots__ = ()


def h(value: object) -> Html:
    """``value`` as HTML text: markup kept when it is ``Html``, escaped otherwise ('' for None)."""
    if isinstance(value, Html):
        return value
    return Html("" if value is None else escape(str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Html:
    """The parts, each through ``h``, joined by ``sep`` (markup)."""
    return Html(sep.join(h(p) for p in parts))


def tag(name: str, content: object = "", /, **attrs: object) -> Html:
    """``<name attrs>content</name>``; attribute names with ``_`` get ``-`` (``data_x`` -> ``data-x``),
    a trailing ``_`` is dropped (``class_``); True is a bare attribute, None/False leave it out."""
    return Html(f"<{name}{_attrs(attrs)}>{h(content)}</{name}>")


def void(name: str, /, **attrs: object) -> Html:
    """An element without content (``<input ...>``)."""
    return Html(f"<{name}{_attrs(attrs)}>")


def _attrs(attrs: Mapping[str, object]) -> str:
    out = []
    for k, v in attrs.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f" {name}" if v is True else f' {name}="{h(v)}"')
    return "".join(out)


def url(base: str, path: str, params: Mapping[str, object] | None = None) -> str:
    """``base + path`` with the non-empty ``params`` as a query string (not yet escaped for HTML)."""
    query = urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
    return base + path + (f"?{query}" if query else "")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], **attrs: object) -> Html:
    """A table with a header row; each cell through ``h``."""
    head = tag("tr", join(tag("th", x) for x in headers))
    body = join(tag("tr", join(tag("td", c) for c in r)) for r in rows)
    return tag("table", join([tag("thead", head), tag("tbody", body)]), **attrs)


def select(name: str, options: Sequence[tuple[str, str]], chosen: str, label: str) -> Html:
    """A labelled ``<select>`` of (value, text) options with ``chosen`` selected."""
    opts = join(tag("option", text, value=value, selected=value == chosen) for value, text in options)
    return tag("label", join([label, " ", tag("select", opts, name=name)]))


def field(label: str, /, **attrs: object) -> Html:
    """A labelled ``<input>``."""
    return tag("label", join([label, " ", void("input", **attrs)]))


def post_button(action: str, text: str, *, cls: str = "", hidden: Sequence[tuple[str, str]] = ()) -> Html:
    """A form with one button that POSTs to ``action`` (a change: guarded as such), sending the
    ``hidden`` (name, value) fields with it."""
    fields = join(void("input", type="hidden", name=name, value=value) for name, value in hidden)
    return tag("form", join([fields, tag("button", text, type="submit", class_=cls or None)]), method="post",
               action=action, class_="inline")


def frame(base: str, title: str, active: str, body: object, *, user: str, notice: str = "",
          error: str = "") -> Html:
    """The whole page: head (the packaged stylesheet), navigation, a notice or error line, ``body``."""
    nav = join(tag("a", text, href=base + path, class_="on" if key == active else None)
               for key, path, text in (("memories", "/", "Memories"),
                                       ("consolidate", "/consolidate", "Consolidation"),
                                       ("profile", "/profile", "Profile"),
                                       ("tasks", "/tasks", "Tasks"), ("docs", "/docs", "Documents"),
                                       ("health", "/health", "Health")))
    messages = join([tag("p", notice, class_="notice", role="status") if notice else "",
                     tag("p", error, class_="error", role="alert") if error else ""])
    head = join([void("meta", charset="utf-8"), void("meta", name="viewport", content="width=device-width"),
                 tag("title", f"memvault · {title}"), void("link", rel="stylesheet", href=f"{base}/static/style.css"),
                 void("link", rel="icon", href=f"{base}/static/icon.svg")])
    top = tag("header", join([tag("strong", "memvault"), tag("nav", nav), tag("span", f"user {user}", class_="who")]))
    return Html("<!doctype html>" + tag("html", join([tag("head", head),
                                                      tag("body", join([top, tag("main", join([
                                                          tag("h1", title), messages, body]))]))]), lang="en"))
