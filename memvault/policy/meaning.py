"""The tokens whose change changes a fact, and the one guard that keeps two memories apart on them (pure).

Two memories may be merged (at write time by ``dedup``, later by ``consolidation``) only
when ``same_meaning`` holds for their ``marks``: cosine and word overlap cannot see that
``5 ms`` is not ``5 s``, ``100 Mb`` not ``100 MB`` or 上午十点 not 下午十点, since the
word tests fold case, drop one-letter words and treat a memory with an extra word as a
more specific restatement. The marks of a text:

- **quantities**: each number (with a currency sign before it) and the unit written after
  it: letters right after the digits, a unit of ``UNITS`` after a space, ``°C``, ``%``, or a
  Chinese / Japanese unit (``CJK_UNITS``), the unit's case kept:
  ``5 ms`` / ``5 s``, ``100 Mb`` / ``100 MB``, ``10 KiB`` / ``10 KB``, ``20 °C`` / ``20 °F``,
  ``5秒`` / ``5毫秒`` differ; (the numbers themselves, ``3.10`` / ``3.1``, ``v2`` / ``v3``,
  are content words both word tests compare);
- **units named without a number** after ``in`` / ``per`` / ``/`` (``in ms`` / ``in s``,
  ``per GB`` / ``per Gb``), case kept;
- **times of day**: ``AM`` / ``a.m.`` after a number, ``morning``, 上午, 早上, 午前, 오전 ... are
  one class, and so on for ``PM`` / afternoon / 下午, evening / night / 晚上, small hours /
  凌晨 / midnight, noon / 中午 (``TIME_CLASSES``), counted per class;
- **negation**: whether the text says not / no / never / without / 不 / 没 ... (or a verb
  that reads as "not" + a verb: dislikes, avoids, hates).

Marks are compared where both texts have them (``same_meaning``): a number both write must
carry the same units, both naming a time of day must name the same ones; a mark only one
text has is a detail the word tests judge. Linear in the length of the text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["TIME_CLASSES", "Marks", "marks", "same_meaning"]

TIME_CLASSES: dict[str, tuple[str, ...]] = {
    "am": ("am", "morning", "上午", "早上", "早晨", "清晨", "午前", "오전", "아침"),
    "pm": ("pm", "afternoon", "下午", "午後", "오후"),
    "evening": ("evening", "night", "tonight", "晚上", "晚间", "夜里", "夜间", "傍晚", "夕方", "저녁"),
    "small-hours": ("midnight", "凌晨", "半夜", "午夜", "深夜", "새벽"),
    "noon": ("noon", "midday", "中午", "正午", "정오"),
}
"""Words for a part of the day, by class: two texts must name the same classes as often."""
UNITS = frozenset("""
ns µs us ms s sec secs second seconds m min mins minute minutes h hr hrs hour hours d day days wk week weeks
mo month months y yr yrs year years b bit bits byte bytes kb kib mb mib gb gib tb tib pb pib eb
kbps mbps gbps kbit mbit gbit hz khz mhz ghz k c f mm cm km ft mi g kg mg lb lbs oz t l ml v mv kv a ma w kw
mw wh kwh mah x rpm qps rps tps req reqs dpi px pt em rem
""".split())
"""Units written after a number with a space (matched in any case, kept in the case written)."""
CJK_UNITS = ("毫秒", "微秒", "纳秒", "秒钟", "秒", "分钟", "小时", "个月", "星期", "摄氏度", "华氏度", "字节", "点钟",
             "天", "日", "周", "月", "年", "岁", "度", "元", "倍", "点", "分", "时", "兆", "吉", "个", "次", "人")
"""Units written after a number in Chinese and Japanese (longest first)."""
_CASE_FREE_UNIT = 4  # a spelt-out unit longer than this ("seconds", "hours") has no case-sensitive twin

_TIME_OF = {w: c for c, words in TIME_CLASSES.items() for w in words}
_LATIN_TIME = sorted((w for w in _TIME_OF if w.isascii() and w not in ("am", "pm")), key=len, reverse=True)
_CJK_TIME = sorted((w for w in _TIME_OF if not w.isascii()), key=len, reverse=True)

# A number (sign, decimal and thousands separators, clock times), with a currency sign before it.
_NUMBER = re.compile(r"([$€£¥₹]\s?)?(?<![\d.,:])([-+]?\d+(?:[.,:]\d+)*)")
_ADJACENT = re.compile(r"\s?°\s?[A-Za-z]|\s?[%‰]|[^\W\d_]{1,4}(?![^\W\d_])")  # "5ms", "100Mb", "20°C", "50 %"
_SPACED = re.compile(r" (°\s?[A-Za-z]|[^\W\d_]{1,12}(?:/s)?)(?![^\W\d_])")
_CJK_UNIT = re.compile(r"\s?(" + "|".join(CJK_UNITS) + ")")
_AMPM = re.compile(r"(?<![\w.])\d{1,2}(?:[:.]\d{2})?\s?([ap])\.?\s?m\b\.?", re.IGNORECASE)
_NAMED_UNIT = re.compile(r"(?:\b(?:in|per)\s+|/\s?)([A-Za-zµ°]{1,4})\b")
_LATIN_TIME_RE = re.compile(r"\b(" + "|".join(map(re.escape, _LATIN_TIME)) + r")\b", re.IGNORECASE)
_CJK_TIME_RE = re.compile("|".join(map(re.escape, _CJK_TIME)))
# Negation words, and verbs that read as "not" + a verb ("dislikes" = "does not like").
_NEGATION = re.compile(r"\b(?:not|no|never|without|none|nobody|nothing|neither|nor|cannot|\w+n't|"
                       r"dislike[sd]?|hate[sd]?|avoid(?:s|ed)?)\b", re.IGNORECASE)
_CJK_NEGATION = re.compile("[不没別别勿无未非莫]")


@dataclass(frozen=True)
class Marks:
    """The meaning-bearing tokens of one text (module docstring), in groups: each number
    with the units written after its occurrences (``""`` for none), ``"per"`` with the units
    named without a number, ``"time"`` with the time-of-day classes; and whether the text
    is negated."""

    groups: tuple[tuple[str, tuple[str, ...]], ...]
    negated: bool

    def group(self) -> dict[str, tuple[str, ...]]:
        """The groups as a mapping."""
        return dict(self.groups)


def _unit_after(text: str, end: int) -> str:
    """The unit written right after a number ending at ``end`` ('' when none)."""
    if m := _ADJACENT.match(text, end):
        return m.group().replace(" ", "")
    if m := _CJK_UNIT.match(text, end):
        return m.group(1)
    if (m := _SPACED.match(text, end)) and m.group(1) != "a" and (
            m.group(1).startswith("°") or m.group(1).removesuffix("/s").casefold() in UNITS):  # "5 a month": an article
        unit = m.group(1).replace(" ", "")
        return unit.casefold() if len(unit) > _CASE_FREE_UNIT else unit
    return ""


def marks(text: str) -> Marks:
    """The :class:`Marks` of ``text`` (NFKC first, so full-width digits and units count as ASCII)."""
    text = unicodedata.normalize("NFKC", text).replace("\u2212", "-")
    groups: dict[str, list[str]] = {}
    clock = set()
    for m in _AMPM.finditer(text):
        groups.setdefault("time", []).append(m.group(1).lower() + "m")
        clock.add(m.start(1))
    for m in _NUMBER.finditer(text):
        unit = _unit_after(text, m.end())
        gap = len(text[m.end():]) - len(text[m.end():].lstrip(" "))
        if m.end() + gap in clock:
            unit = ""  # "10 a.m.": a time of day, counted above
        sign = (m.group(1) or "").strip()  # "$5" / "€5": one number, two currencies
        groups.setdefault(m.group(2).replace(",", "."), []).append(f"{sign} {unit}".strip())
    for m in _NAMED_UNIT.finditer(text):
        if m.group(1).casefold() in UNITS:
            groups.setdefault("per", []).append(m.group(1))
    for m in _LATIN_TIME_RE.finditer(text):
        groups.setdefault("time", []).append(_TIME_OF[m.group(1).lower()])
    for m in _CJK_TIME_RE.finditer(text):
        groups.setdefault("time", []).append(_TIME_OF[m.group()])
    negated = _NEGATION.search(text) is not None or _CJK_NEGATION.search(text) is not None
    return Marks(tuple(sorted((k, tuple(sorted(v))) for k, v in groups.items())), negated)


def same_meaning(a: Marks, b: Marks) -> bool:
    """Whether two texts agree on every mark they share (the guard of write-time dedup and of
    consolidation): a number both write has the same units in both, as often; units named
    without a number, and times of day, are the same when both name some; both or neither
    are negated. A mark only one text has (``PostgreSQL`` / ``PostgreSQL 15``, ``at ten`` /
    ``at 10 am``) adds detail and is left to the word tests."""
    if a.negated != b.negated:
        return False
    ga, gb = a.group(), b.group()
    return all(ga[k] == gb[k] for k in ga.keys() & gb.keys())
