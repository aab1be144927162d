"""Deictic recall queries: queries that only point at earlier work.

"继续", "continue", "that plan", "上次那个方案", "the fix from before" name nothing a search
can match; they mean "the thing we are working on". ``detect_deixis`` recognises them
(pure, no I/O); ``enrich_query`` turns one into a searchable query with the scope's
current task (title and step). A query is deictic when, after removing pointing cues,
function words and generic nouns ("plan", "fix", "方案"), nothing specific is left.
A specific query ("pnpm", "that Postgres plan") is never rewritten.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from memvault.policy.cjk import CJK_RUN as _CJK

__all__ = ["Deixis", "detect_deixis", "enrich_query"]

# Pointing cues (English, lowercase; matched as whole words / phrases).
_EN_CUES = (
    "continue", "continuing", "go on", "carry on", "keep going", "resume", "proceed", "next step", "next",
    "where were we", "where we left off", "pick up", "left off", "as before", "from before", "last time",
    "earlier", "previous", "previously", "before", "that", "this", "those", "these", "it", "same",
    "again", "the one", "what we did", "what we discussed", "what we decided", "we discussed", "we decided",
)
# Words that carry no subject of their own.
_EN_FUNCTION = frozenset("""
a an the of to for from with on in at by and or but so then now please pls ok okay yes yeah let lets let's
us we our i me my you your do did does doing done be is are was were been go going get got what which
where when how about up back with one ones thing things stuff work working task step steps
""".split())
_EN_GENERIC = frozenset("""
plan plans fix fixes approach approaches idea ideas solution solutions option options change changes
issue issues bug bugs problem problems decision decisions proposal design draft attempt way method
""".split())

# Chinese (and Japanese kana-free) cues and generic words, removed as substrings.
_ZH_CUES = (
    "继续", "接着", "接下来", "下一步", "上次", "上回", "之前", "以前", "刚才", "刚刚", "先前", "那个", "这个",
    "那些", "这些", "那", "这", "照旧", "按原计划", "原来的", "前面的", "我们讨论的", "我们说的", "说过的",
)
_ZH_GENERIC = (
    "方案", "计划", "办法", "方法", "问题", "任务", "事情", "事", "步骤", "修复", "思路", "想法", "决定",
    "做法", "处理", "搞", "弄", "做", "吧", "呢", "吗", "啊", "的", "了", "一下", "我们", "咱们", "你", "我",
    "请", "好", "个", "说", "讨论", "用",
)

# English cues as whole words / phrases, longest first (so "go on" goes before "on").
_EN_CUE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (cue, re.compile(rf"(?<![a-z0-9_]){re.escape(cue)}(?![a-z0-9_])"))
    for cue in sorted(_EN_CUES, key=len, reverse=True)
)
_LATIN_WORD = re.compile(r"[a-z0-9_']+(?:[-.][a-z0-9_']+)*")
MAX_DEICTIC_CHARS = 60


@dataclass(frozen=True)
class Deixis:
    """Whether a query only points (``deictic``), the cues found, and why in words."""

    deictic: bool
    cues: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""


def _strip_words(text: str) -> tuple[str, list[str]]:
    """``text`` with the English cues (whole words) replaced by spaces, and the cues found."""
    found = []
    for cue, pattern in _EN_CUE_PATTERNS:
        if pattern.search(text):
            found.append(cue)
            text = pattern.sub(" ", text)
    return text, found


def _strip_phrases(text: str, phrases: tuple[str, ...]) -> tuple[str, list[str]]:
    """``text`` with the substrings ``phrases`` (longest first) replaced by spaces, and the
    phrases found."""
    found = []
    for p in sorted(phrases, key=len, reverse=True):
        if p in text:
            found.append(p)
            text = text.replace(p, " ")
    return text, found


def detect_deixis(query: str) -> Deixis:
    """Classify ``query`` (any language). Pure; never raises.

    Deictic: at most MAX_DEICTIC_CHARS characters and no specific word left once cues,
    function words and generic nouns are removed. ``cues`` lists the pointing words
    found (may be empty for a query of function words only, e.g. "ok, go").
    """
    text = unicodedata.normalize("NFKC", query).strip().lower()
    if not text:
        return Deixis(False, (), "empty query")
    if len(text) > MAX_DEICTIC_CHARS:
        return Deixis(False, (), "long enough to search as it is")
    rest, cues = _strip_words(text)
    cjk_rest = " ".join(_CJK.findall(rest))
    cjk_rest, zh_cues = _strip_phrases(cjk_rest, _ZH_CUES)
    cjk_rest, _ = _strip_phrases(cjk_rest, _ZH_GENERIC)
    cues += zh_cues
    latin = [w for w in _LATIN_WORD.findall(_CJK.sub(" ", rest))
             if w not in _EN_FUNCTION and w not in _EN_GENERIC]
    specific_cjk = cjk_rest.replace(" ", "")
    if latin or specific_cjk:
        left = ", ".join(latin + ([specific_cjk] if specific_cjk else []))
        return Deixis(False, tuple(cues), f"names something specific ({left})")
    if cues:
        return Deixis(True, tuple(cues), f"only points at earlier work ({', '.join(cues)})")
    return Deixis(True, (), "names nothing specific")


def enrich_query(query: str, title: str, step: str | None = None) -> str:
    """The query to search for a deictic ``query``: the task's title and step, then the query.

    ``title``: the current task's title; ``step``: its current step as text, if known.
    """
    parts = [title.strip()]
    if step and step.strip() and step.strip().lower() != title.strip().lower():
        parts.append(step.strip())
    parts.append(query.strip())
    return ". ".join(p for p in parts if p)
