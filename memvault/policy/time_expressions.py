"""Time expressions in a query ("last May", "yesterday", "on 13 October 2023", "上周",
"去年五月") -> the spans of time they name, and which memories were stored then.

Pure functions; times are unix seconds, calendar arithmetic in UTC (as the server reads
naive times). A memory about an event is usually stored during it or soon after, so a
memory counts as *of* a span when it was created inside it or within a short slack after
it (:func:`in_spans`). Recall ranks such memories up (a boost, not a filter: ``since`` /
``until`` are the filter), since "what did Melanie paint in July?" asks for memories
from July, but a question's date words are rarely in the memory's text.

Recognised (case-insensitive; several per query are all kept):

- English, relative to ``now``: today, yesterday, the day before yesterday, this / last
  week, weekend, month, year, ``N days / weeks / months / years ago`` (N in digits or
  one to twelve, "a", "a few" = 3, "a couple of" = 2), last night, recently is *not* a
  span (too vague).
- English, absolute: a month name with an optional day and year ("October 13, 2023",
  "13 October 2023", "May 2023", "in June"), ``2023-10-13``, and a year alone
  ("in 2023"). A month without a year names that month of every year (the question may
  be about any of them); "last May" is the latest May before this month.
- Chinese: 今天 昨天 前天, 本周 这周 上周 上星期 上个星期, 本月 这个月 上个月, 今年 去年 前年,
  ``N天前 / N周前 / N个星期前 / N个月前 / N年前`` (N in digits or 一 to 十二, 几 = 3),
  ``2023年``, ``5月`` / ``五月`` with an optional year (``2023年5月``, ``去年五月``) and day
  (``5月3日`` / ``5月3号``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from memvault.policy.units import SECONDS_PER_DAY

__all__ = ["Span", "time_spans", "in_spans", "time_boosted", "SLACK_DAYS", "YEARS_BACK", "TIME_BOOST"]

Span = tuple[float, float]
"""[start, end) in unix seconds."""

SLACK_DAYS = 14.0
"""How long after a span a memory still counts as of it (stored after the event), at most:
the slack is also at most the span's own length (a day's slack after "yesterday")."""

YEARS_BACK = 30
"""A month named without a year stands for that month in each of this many years up to now;
"N units ago" further back than this names nothing."""

_MONTHS = {m: i + 1 for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"))}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_NUM_EN = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "a couple of": 2,
           "few": 3, "couple of": 2}
_NUM_ZH = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
           "十一": 11, "十二": 12, "几": 3}

_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_EN_DATE = re.compile(
    r"\b(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON.replace("mon", "m1") + r"|"
    + _MON + r"(?:\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?)?)(?:,?\s+(?P<y>(?:19|20)\d\d))?\b", re.I)
_EN_LAST_MONTH_NAME = re.compile(r"\blast\s+" + _MON + r"\b", re.I)
_ISO = re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
_YEAR = re.compile(r"\b(?:in|of|during|since)\s+(?P<y>(?:19|20)\d\d)\b", re.I)
_EN_AGO = re.compile(r"\b(?P<n>\d+|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|"
                     r"nine|ten|eleven|twelve)\s+(?P<u>day|week|month|year)s?\s+ago\b", re.I)
_EN_REL = re.compile(r"\b(?P<w>this|last|past|previous)\s+(?P<u>week|weekend|month|year)\b", re.I)
_EN_DAY = re.compile(r"\b(?P<w>the day before yesterday|yesterday|today|tonight|last night)\b", re.I)

# Bounded repeats only ({0,2} spaces, at most 4 digits after a non-digit): every start
# position costs O(1), so a search stays linear on any input (tests/unit/test_regex_linear.py).
_ZH_N = r"(?P<n>(?<!\d)\d{1,4}|十[一二]?|[一两二三四五六七八九十几])"
_ZH_AGO = re.compile(_ZH_N + r"\s{0,2}(?:个)?\s{0,2}(?P<u>天|日|周|星期|礼拜|月|年)(?:之|以)?前")
_ZH_MONTH = re.compile(r"(?:(?P<y>(?:19|20)\d\d)\s{0,2}年|(?P<ry>今年|去年|前年))?\s{0,2}"
                       r"(?P<m>\d{1,2}|十[一二]?|[一二三四五六七八九十])\s{0,2}月(?:份)?"
                       r"(?:\s{0,2}(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})\s{0,2}[日号])?")
_ZH_YEAR = re.compile(r"(?P<y>(?:19|20)\d\d)\s{0,2}年(?!\s{0,2}(?:\d{1,2}|十[一二]?|[一二三四五六七八九十])\s{0,2}月)")
_ZH_WORDS = {"今天": ("day", 0), "昨天": ("day", 1), "前天": ("day", 2), "本周": ("week", 0), "这周": ("week", 0),
             "这个星期": ("week", 0), "上周": ("week", 1), "上星期": ("week", 1), "上个星期": ("week", 1),
             "上个礼拜": ("week", 1), "本月": ("month", 0), "这个月": ("month", 0), "上个月": ("month", 1),
             "上月": ("month", 1), "今年": ("year", 0), "去年": ("year", 1), "前年": ("year", 2)}
_ZH_WORD = re.compile("|".join(sorted(_ZH_WORDS, key=len, reverse=True)))


def _year_span(year: int) -> tuple[float, float]:
    """The calendar year ``year`` (UTC) as a span of epoch seconds."""
    return (_ts(datetime(year, 1, 1, tzinfo=timezone.utc)), _ts(datetime(year + 1, 1, 1, tzinfo=timezone.utc)))


def _date_spans(at: datetime, year: int | None, month: int, day: int | None) -> list[tuple[float, float]]:
    """A named day or month: of ``year`` when one is given (none when the date does not
    exist), else of each past year up to ``at`` (``_month_any_year``)."""
    if year is None:
        return _month_any_year(at, month, day)
    sp = _day_span(year, month, day) if day else _month_span(year, month)
    return [sp] if sp else []


def _zh_int(s: str) -> int:
    if s.isdigit():
        return int(s)
    if s in _NUM_ZH:
        return _NUM_ZH[s]
    if s.startswith("十"):  # 十三
        return 10 + _NUM_ZH.get(s[1:], 0)
    if s.endswith("十"):  # 二十
        return 10 * _NUM_ZH.get(s[:-1], 0)
    if "十" in s:  # 二十三
        a, b = s.split("十", 1)
        return 10 * _NUM_ZH.get(a, 0) + _NUM_ZH.get(b, 0)
    return 0


def _ts(d: datetime) -> float:
    return d.timestamp()


def _day_start(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_span(year: int, month: int) -> Span:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return _ts(start), _ts(end)


def _day_span(year: int, month: int, day: int) -> Span | None:
    try:
        start = datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None
    return _ts(start), _ts(start + timedelta(days=1))


def _shift_months(year: int, month: int, back: int) -> tuple[int, int]:
    idx = year * 12 + (month - 1) - back
    return idx // 12, idx % 12 + 1


def _unit_span(now: datetime, unit: str, back: int) -> Span:
    """The calendar day / week (Monday first) / month / year ``back`` units before the current one."""
    today = _day_start(now)
    if unit == "day":
        s = today - timedelta(days=back)
        return _ts(s), _ts(s + timedelta(days=1))
    if unit == "week":
        s = today - timedelta(days=today.weekday() + 7 * back)
        return _ts(s), _ts(s + timedelta(days=7))
    if unit == "weekend":
        sat = today - timedelta(days=(today.weekday() - 5) % 7 + 7 * back)  # latest Saturday (today if Saturday)
        return _ts(sat), _ts(sat + timedelta(days=2))
    if unit == "month":
        y, m = _shift_months(now.year, now.month, back)
        return _month_span(y, m)
    return _ts(datetime(now.year - back, 1, 1, tzinfo=timezone.utc)), _ts(datetime(now.year - back + 1, 1, 1,
                                                                                   tzinfo=timezone.utc))


def _ago_span(now: datetime, unit: str, n: int) -> Span | None:
    """Around the instant ``n`` units ago: that day widened by a quarter of the distance each way
    ("ten days ago" is rarely exact), at least the day itself; None beyond ``YEARS_BACK``."""
    days = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}[unit] * n
    if days > YEARS_BACK * 365.25:
        return None
    center = _day_start(now) - timedelta(days=days)
    half = timedelta(days=days / 4)
    return _ts(center - half), _ts(center + timedelta(days=1) + half)


def _month_any_year(now: datetime, month: int, day: int | None) -> list[Span]:
    out: list[Span] = []
    for y in range(now.year - YEARS_BACK + 1, now.year + 1):
        sp = _day_span(y, month, day) if day else _month_span(y, month)
        if sp is not None and sp[0] <= _ts(now):
            out.append(sp)
    return out


def time_spans(query: str, now: float) -> list[Span]:
    """The spans of time ``query`` names, relative to ``now`` (unix seconds), in UTC.

    Returns a list of [start, end) pairs (unix seconds), empty when the query names no
    time; see the module docstring for what is recognised. Never raises on any text.
    """
    at = datetime.fromtimestamp(now, tz=timezone.utc)
    spans: list[Span] = []
    text = query
    for m in _EN_LAST_MONTH_NAME.finditer(text):  # "last May": the latest May before this month
        month = _MONTHS[m.group("mon").lower()]
        back = (at.month - month) % 12 or 12
        spans.append(_month_span(*_shift_months(at.year, at.month, back)))
    text = _EN_LAST_MONTH_NAME.sub(" ", text)
    for m in _ISO.finditer(text):
        if sp := _day_span(int(m.group("y")), int(m.group("m")), int(m.group("d"))):
            spans.append(sp)
    text = _ISO.sub(" ", text)
    for m in _EN_DATE.finditer(text):
        mon = (m.group("m1") or m.group("mon")).lower()
        if mon == "may" and not (m.group("d1") or m.group("d2") or m.group("y")) and not re.search(
                r"\b(?:in|of|during|since|until|by|early|late|mid)\s+may\b", text[max(0, m.start() - 8): m.end()], re.I):
            continue  # "may" the verb
        month = _MONTHS[mon]
        day = int(m.group("d1") or m.group("d2") or 0) or None
        spans += _date_spans(at, int(m.group("y")) if m.group("y") else None, month, day)
    text = _EN_DATE.sub(" ", text)
    spans += [_year_span(int(m.group("y"))) for m in _YEAR.finditer(text)]
    for m in _EN_AGO.finditer(text):
        word = m.group("n").lower()
        n = int(word) if word.isdigit() else _NUM_EN.get(word, 1)
        if sp := _ago_span(at, m.group("u").lower(), max(1, n)):
            spans.append(sp)
    for m in _EN_REL.finditer(text):
        unit, this = m.group("u").lower(), m.group("w").lower() == "this"
        # "last weekend" on a weekday is the latest one; on a Saturday or Sunday, the one before
        back = 0 if this or (unit == "weekend" and at.weekday() < 5) else 1
        spans.append(_unit_span(at, unit, back))
    for m in _EN_DAY.finditer(text):
        w = m.group("w").lower()
        back = {"today": 0, "tonight": 0, "yesterday": 1, "last night": 1, "the day before yesterday": 2}[w]
        spans.append(_unit_span(at, "day", back))
    # Chinese
    for m in _ZH_AGO.finditer(query):
        unit = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}[m.group("u")]
        if sp := _ago_span(at, unit, max(1, _zh_int(m.group("n")))):
            spans.append(sp)
    zh = _ZH_AGO.sub(" ", query)
    for m in _ZH_MONTH.finditer(zh):
        month = _zh_int(m.group("m"))
        if not 1 <= month <= 12:
            continue
        day = _zh_int(m.group("d")) if m.group("d") else None
        year = (int(m.group("y")) if m.group("y")
                else at.year - {"今年": 0, "去年": 1, "前年": 2}[m.group("ry")] if m.group("ry") else None)
        spans += _date_spans(at, year, month, day)
    zh = _ZH_MONTH.sub(" ", zh)
    spans += [_year_span(int(m.group("y"))) for m in _ZH_YEAR.finditer(zh)]
    for m in _ZH_WORD.finditer(zh):
        unit, back = _ZH_WORDS[m.group(0)]
        spans.append(_unit_span(at, unit, back))
    return sorted(set(spans))


def in_spans(created_at: float, spans: Iterable[Span], slack_days: float = SLACK_DAYS) -> bool:
    """Whether a memory created at ``created_at`` (unix seconds) is of one of ``spans``:
    created inside it or less than ``slack_days`` after its end (and less than the span's
    own length after it)."""
    slack = slack_days * SECONDS_PER_DAY
    return any(start <= created_at < end + min(slack, end - start) for start, end in spans)


TIME_BOOST = 0.2
"""How much being of a span the query names adds to a candidate's fused score (in [0, 1])."""


def time_boosted(score: float, created_at: float, spans: Iterable[Span], boost: float = TIME_BOOST) -> float:
    """``score`` (a fused score in [0, 1]) raised for a memory of one of ``spans``
    (:func:`in_spans`): ``(score + boost) / (1 + boost)``, else ``score / (1 + boost)``,
    so the result stays in [0, 1] and the order among memories alike in time is kept.
    No spans -> ``score`` unchanged."""
    spans = list(spans)
    if not spans:
        return score
    return (score + boost * in_spans(created_at, spans)) / (1.0 + boost)
