"""Explicit memory requests in a user's prompt: "remember that …", "from now on …", "记住…", "以后…".

Pure functions (no I/O). A client hook (``memvault hook prompt-submit``) calls
:func:`find_memory_requests` on every prompt and stores what it returns through
``remember``; everything else in the prompt is left to the assistant. The rules favour
missing a request over storing something the user never asked to keep:

* A request is one sentence (split at ``. ! ? 。！？；`` and line ends) that **starts** with
  its cue, after at most a lead-in word ("ok", "also", "btw", "另外", "对了") and a polite
  form ("please", "can you", "请", "帮我", "能不能"). "I remember that …" is the user's own
  memory, not a request; "remember that" inside a sentence is not a cue.
* Cues for a fact: "remember that / remember: / remember, / remember this:", "don't forget
  that", "keep in mind that", "记住 / 记下 / 记一下 / 牢记" (traditional 記住 / 記下 too).
  The content is what follows the cue.
* Cues for a preference (a standing instruction): "from now on" (anywhere in the
  sentence), "going forward" / "henceforth" at its start, "从现在开始 / 从今以后 / 今后 /
  以后" at its start; "以后 / 今后" only when a word of instruction follows (都, 请, 要,
  别, 不要, 一律, 每次, …) or a comma, so "以后再说" ("later") is not one. The content is
  the whole sentence, cue included ("From now on, answer in English.").
* Not requests: questions ("do you remember when …?", "remember that bug?", "你还记得吗？",
  "记住了吗"), except a polite question that asks to remember ("can you remember that I use
  tabs?", "能帮我记住…吗"); "remember to run the tests" and "记得跑测试" (an instruction for
  this conversation, a to-do, not something to keep across sessions; write "remember that
  …" or "from now on …" to keep it); a bare "always …" (too often a description: "it
  always fails when …"); "don't remember …" / "forget that …"; text in fenced code
  blocks and quoted lines (``>``).
* A content shorter than ``MIN_CONTENT_CHARS`` or longer than ``MAX_CONTENT_CHARS`` is
  not taken (a cue with nothing after it, or a paste rather than a sentence).
* Scope: a preference holds everywhere (``"global"``: "from now on, answer in English"),
  unless it names something of the project: an identifier, a file name or a path
  (``ORDER_RETRY_MAX``, ``src/api``, ``package.json``) or the project itself ("in this repo",
  "这个项目"), then it is the project's, as every fact is ("remember that the staging DB
  is …" is about the project the user works in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["MemoryRequest", "find_memory_requests", "MIN_CONTENT_CHARS", "MAX_CONTENT_CHARS", "MAX_REQUESTS"]

MIN_CONTENT_CHARS = 4
"""Shortest content taken (characters, after trimming): "remember that" alone is no request."""
MAX_CONTENT_CHARS = 1000
"""Longest content taken (characters): a request is one sentence, not a paste."""
MAX_REQUESTS = 3
"""At most this many requests are taken from one prompt (the first ones)."""

RequestKind = Literal["fact", "preference"]
RequestScope = Literal["global", "project"]


@dataclass(frozen=True)
class MemoryRequest:
    """One request found in a prompt.

    ``content``: what to store (one sentence, trimmed, English first letter capitalised);
    ``kind``: ``fact`` ("remember that …") or ``preference`` ("from now on …");
    ``cue``: the words that made it a request, as written (for a log line);
    ``scope``: ``global`` for a preference that names nothing of the project, else
    ``project`` (module docstring).
    """

    content: str
    kind: RequestKind
    cue: str
    scope: RequestScope = "project"


_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
# Sentence ends: ASCII . ! ? followed by a blank or the end; CJK ends anywhere; line ends.
_SENTENCE = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|[。！？；!?]|(?=\n)|$)")

_LEAD_EN = r"(?:(?:ok(?:ay)?|so|and|also|oh|hey|btw|by\s+the\s+way|one\s+more\s+thing|one\s+last\s+thing)[\s,:;-]+)*"
_POLITE_EN = r"(?P<polite>(?:please|pls|(?:can|could|would|will)\s+you(?:\s+please)?)\s+)?"
_FACT_EN = re.compile(
    rf"^{_LEAD_EN}{_POLITE_EN}(?:please\s+)?"
    r"(?P<cue>remember(?:\s+this)?\s*[:,\u2014-]|remember\s+that|(?:don'?t|do\s+not|never)\s+forget\s+(?:that|this\s*:|:)"
    r"|keep\s+in\s+mind\s+(?:that|:))\s*(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PREF_EN_START = re.compile(
    rf"^{_LEAD_EN}(?P<cue>going\s+forward|henceforth|from\s+now\s+on)\b", re.IGNORECASE)
_PREF_EN_ANYWHERE = re.compile(r"\bfrom\s+now\s+on\b", re.IGNORECASE)

_LEAD_ZH = r"(?:(?:好的|好|嗯|另外|还有|对了|顺便说一下|顺便|最后)[，,、:：\s]*)*"
_POLITE_ZH = r"(?P<polite>(?:你)?(?:能不能|可不可以|能否|能|可以)(?:帮我|给我)?)?"
_FACT_ZH = re.compile(
    rf"^{_LEAD_ZH}{_POLITE_ZH}(?:请你?|麻烦你?|你要|务必|一定要)?(?:帮我|给我)?"
    r"(?P<cue>记住|記住|记下|記下|记一下|記一下|牢记|牢記)(?:一下)?[：:，,\s]*(?P<rest>.*)$",
    re.DOTALL,
)
_PREF_ZH = re.compile(
    rf"^{_LEAD_ZH}(?:请|麻烦)?(?P<cue>从现在(?:开始|起)|從現在(?:開始|起)|从今(?:以后|往后)|從今(?:以後|往後)"
    r"|(?:今后|今後|以后|以後)(?=[，,：:\s]|都|请|請|要|别|別|不要|不准|不许|不許|一律|每次|总是|總是|一定|统一|統一|只|必须|必須|务必|務必|尽量|儘量|记得|記得|全部|默认|默認))"
)
# Content that follows a Chinese cue but makes no request: "记住了" (got it), "记住了吗".
_ZH_NOT_CONTENT = re.compile(r"^(?:了|吗|嗎|没|沒|不)")
_QUESTION_END = re.compile(r"(?:[?？]|[吗嗎呢][。.]?)\s*$")
# A courtesy word at the very end, searched in a bounded tail only (a regex anchored at the
# end but searched from every position of a long text would take quadratic time).
_THANKS_AT_END = re.compile(r"(?:thanks|thank\s{1,8}you|thx|please|pls|谢谢|謝謝|多谢|多謝|谢啦)\Z", re.IGNORECASE)
_THANKS_TAIL = 32
# What ties a preference to the project it was said in: an identifier, file name or path (a
# token of letters joined by _ . / or : to more, one part of two characters or more:
# ORDER_RETRY_MAX, src/api, package.json; not "e.g."), or words naming the project itself. A
# tool's name or a flag is not: "prefer `uv` over pip", "run pytest -x first" hold everywhere.
_TOKEN = re.compile(r"[\w./:-]+")
_JOINED = re.compile(r"[_./:]")
_NAMES_PROJECT = re.compile(
    r"\b(?:this|the|our)\s+(?:project|repo|repository|codebase|code\s*base|service|app)\b|\bin\s+here\b"
    r"|(?:这个|這個|本|该|該)(?:项目|項目|仓库|倉庫|代码库|代碼庫|服务|服務|应用|應用|工程)"
    r"|(?:项目|項目|仓库|倉庫)(?:里|裡|中|内|內)", re.IGNORECASE)


def _names_something_of_the_project(content: str) -> bool:
    """Whether ``content`` holds an identifier, file name or path, or names the project (above)."""
    for token in _TOKEN.findall(content):
        parts = [p for p in _JOINED.split(token.strip("./:-_")) if p]
        if len(parts) >= 2 and any(c.isalpha() for c in token) and any(len(p) >= 2 for p in parts):
            return True
    return _NAMES_PROJECT.search(content) is not None


def _sentences(prompt: str) -> list[str]:
    """The prompt's sentences outside fenced code and quoted lines, each trimmed, in order."""
    text = _FENCE.sub("\n", prompt)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(">")]
    out: list[str] = []
    for line in lines:
        for m in _SENTENCE.finditer(line):
            s = m.group(0).strip()
            if s:
                out.append(s)
    return out


def _rstrip(text: str, chars: str) -> str:
    """``text`` without its trailing whitespace and ``chars``, in any mix (linear time)."""
    while True:
        shorter = text.rstrip().rstrip(chars)
        if shorter == text:
            return text
        text = shorter


def _drop_thanks(text: str) -> str:
    """``text`` without trailing courtesy words ("…, thanks!", "…，谢谢。") and the punctuation around them."""
    out = text
    while True:
        tail = _rstrip(out, ".!！。")
        m = _THANKS_AT_END.search(tail[-_THANKS_TAIL:])
        if m is None:
            return out
        out = _rstrip(tail[: len(tail) - len(m.group(0))], ",，.。!！")


def _clean(content: str, *, question_ok: bool) -> str:
    text = content.strip()
    if question_ok:
        text = text.rstrip()
        text = text[:-1] if text.endswith(("?", "？")) else text
        text = text[:-1] if text.endswith(("吗", "嗎")) else text
    text = _drop_thanks(text)
    text = _rstrip(text, ",，;；:：、").strip()
    # "the staging DB is ..." reads as a sentence with a capital; an identifier never changes
    # case ("userId ...", "shop-api ..."): only a first word of lowercase letters alone is capitalised
    first = text.split(maxsplit=1)[0].rstrip(",.:;!?") if text else ""
    if first.isascii() and first.isalpha() and first.islower():
        text = text[0].upper() + text[1:]
    return text


def _request(sentence: str) -> MemoryRequest | None:
    question = bool(_QUESTION_END.search(sentence))
    for pattern in (_FACT_EN, _FACT_ZH):
        m = pattern.match(sentence)
        if m is None:
            continue
        polite = bool(m.group("polite"))
        if question and not polite:
            return None
        rest = m.group("rest")
        if pattern is _FACT_ZH and _ZH_NOT_CONTENT.match(rest):
            return None
        return _make(_clean(rest, question_ok=polite), "fact", m.group("cue"))
    if question:
        return None
    m = _PREF_EN_START.match(sentence) or _PREF_ZH.match(sentence) or _PREF_EN_ANYWHERE.search(sentence)
    if m is None:
        return None
    if "cue" in m.re.groupindex:  # a cue at the start: the lead-in ("also,", "另外，") is not kept
        return _make(_clean(sentence[m.start("cue"):], question_ok=False), "preference", m.group("cue"))
    return _make(_clean(sentence, question_ok=False), "preference", m.group(0))


def _make(content: str, kind: RequestKind, cue: str) -> MemoryRequest | None:
    if not MIN_CONTENT_CHARS <= len(content) <= MAX_CONTENT_CHARS:
        return None
    scope: RequestScope = "global" if kind == "preference" and not _names_something_of_the_project(content) \
        else "project"
    return MemoryRequest(content=content, kind=kind, cue=" ".join(cue.split()).rstrip(":,\u2014- "), scope=scope)


def find_memory_requests(prompt: str) -> list[MemoryRequest]:
    """The explicit memory requests in ``prompt`` (see the module docstring), in order.

    Returns at most ``MAX_REQUESTS`` requests, each one sentence; ``[]`` when the prompt
    asks to remember nothing. Never raises; any ``str`` is accepted.
    """
    found: list[MemoryRequest] = []
    seen: set[str] = set()
    for sentence in _sentences(prompt):
        req = _request(sentence)
        if req is not None and req.content.casefold() not in seen:
            seen.add(req.content.casefold())
            found.append(req)
            if len(found) >= MAX_REQUESTS:
                break
    return found
