"""HTML building blocks of the page: escaping, the page frame, links, tables and forms.

Every value that comes from the store or the request goes through ``h`` (HTML-escaped,
quotes included); ``Html`` marks text that is already markup, so building blocks compose
without escaping twice. No script anywhere: the page works with links and forms alone.

Bidirectional controls (embeddings, overrides, isolates, the directional marks: ``BIDI``)
reorder how text around them is drawn, so a memory holding U+202E would read reversed and
could pass for another. Wherever the page prints a value, each such control is shown as a
visible mark instead (``⟨RLO⟩``, its code point and name on hover): in text (``h``), in
the text-only elements ``<title>`` and ``<option>``, and in the attributes a browser shows
(``title``, ``placeholder``, ``label``). Form values (``value`` attributes, ``<textarea>``)
keep the exact text, so saving a form never rewrites what is stored; a form holding such a
value says so (``bidi_note``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from urllib.parse import urlencode

# Every bidirectional formatting character (Unicode's Bidi_Control property) with its short name.
BIDI = {"\u061c": "ALM", "\u200e": "LRM", "\u200f": "RLM", "\u202a": "LRE", "\u202b": "RLE",
        "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO", "\u2066": "LRI", "\u2067": "RLI",
        "\u2068": "FSI", "\u2069": "PDI"}
_BIDI_RE = re.compile("[" + "".join(BIDI) + "]")
# Elements whose content is text only (markup inside is not drawn as markup).
_TEXT_ONLY = frozenset({"title", "option"})
# Elements whose content is a form value: kept exact.
_FORM_TEXT = frozenset({"textarea"})
# Attributes a browser draws for the person (the others are data: kept exact).
_SHOWN_ATTRS = frozenset({"title", "placeholder", "label", "alt", "aria-label"})


def _mark(ch: str) -> str:
    return f"\u27e8{BIDI[ch]}\u27e9"  # ⟨RLO⟩


def visible(text: str) -> str:
    """``text`` with each bidirectional control replaced by its plain-text mark (``⟨RLO⟩``)."""
    return _BIDI_RE.sub(lambda m: _mark(m.group()), text)


def bidi_controls(*texts: str | None) -> list[str]:
    """The short names of the bidirectional controls in ``texts``, in order of first appearance."""
    seen: dict[str, None] = {}
    for t in texts:
        for ch in _BIDI_RE.findall(t or ""):
            seen[BIDI[ch]] = None
    return list(seen)


def _marked(escaped: str) -> str:
    """Escaped text with each control as a styled mark naming its code point (markup)."""
    def one(m: re.Match[str]) -> str:
        ch = m.group()
        return (f'<span class="bidi" title="U+{ord(ch):04X} {unicodedata.name(ch)}">{_mark(ch)}</span>')
    return _BIDI_RE.sub(one, escaped)


class Html(str):
    """Text that is already HTML (built here from escaped parts); ``h`` leaves it as is."""

    __slots__ = ()


def h(value: object) -> Html:
    """``value`` as HTML text: markup kept when it is ``Html``, escaped otherwise ('' for None)."""
    if isinstance(value, Html):
        return value
    return Html("" if value is None else _marked(escape(str(value), quote=True)))


def bidi_note(*texts: str | None) -> Html:
    """A warning line when ``texts`` (a form's values) hold bidirectional controls ('' otherwise):
    the form keeps them exact, so the person learns they are there and reorder the text."""
    names = bidi_controls(*texts)
    if not names:
        return Html("")
    return tag("p", f"This form's text holds direction controls ({', '.join(names)}) that reorder how it is "
                    "drawn; the copy above shows each as a mark. Saving keeps them unless you delete them.",
               class_="error", role="note")


def join(parts: Iterable[object], sep: str = "") -> Html:
    """The parts, each through ``h``, joined by ``sep`` (markup)."""
    return Html(sep.join(h(p) for p in parts))


def tag(name: str, content: object = "", /, **attrs: object) -> Html:
    """``<name attrs>content</name>``: ``content`` through ``h``, except in ``<title>`` and
    ``<option>`` (escaped, controls as plain marks) and ``<textarea>`` (escaped, exact).
    Attribute names with ``_`` get ``-`` (``data_x`` -> ``data-x``), a trailing ``_`` is
    dropped (``class_``); True is a bare attribute, None/False leave it out."""
    if name in _TEXT_ONLY and not isinstance(content, Html):
        inner = escape(visible("" if content is None else str(content)), quote=True)
    elif name in _FORM_TEXT and not isinstance(content, Html):
        inner = escape("" if content is None else str(content), quote=True)
    else:
        inner = h(content)
    return Html(f"<{name}{_attrs(attrs)}>{inner}</{name}>")


def void(name: str, /, **attrs: object) -> Html:
    """An element without content (``<input ...>``)."""
    return Html(f"<{name}{_attrs(attrs)}>")


def _attrs(attrs: Mapping[str, object]) -> str:
    out = []
    for k, v in attrs.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        if v is True:
            out.append(f" {name}")
        elif isinstance(v, Html):
            out.append(f' {name}="{v}"')
        else:
            text = visible(str(v)) if name in _SHOWN_ATTRS else str(v)
            out.append(f' {name}="{escape(text, quote=True)}"')
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
