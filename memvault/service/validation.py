"""Argument checks shared by the tool handlers.

Each check raises ``InvalidArgument`` with what was wrong and what is allowed, before
anything is written, so a bad call changes nothing and the server keeps serving.

Identifiers (every argument that names something rather than says something) go
through one path, :func:`check_name`, with a :class:`NameRule` per argument:

=============  ==============  =========================================================
argument       case            shape (after NFKC; surrounding whitespace trimmed)
=============  ==============  =========================================================
key            folded          1-128 letters, digits and . _ - : /
tags           folded          1-64 printable characters, inner whitespace runs -> one space
task_id        folded          1-128 letters, digits and . _ - : / #
project        kept            1-200 printable characters ('' = global scope)
source         kept            up to 200 printable characters
collection     kept            1-64 ASCII letters, digits, '_', '-', '.'
kind(s)        exact           one of the memory kinds
status         exact           one of the task statuses
visibility     exact           shared or private
=============  ==============  =========================================================

"Folded" fields are case-insensitive: they are stored and compared casefolded
(``pref.Language`` is ``pref.language``). Project names keep their case because project
ids come from repositories and folders, whose names may differ only in case; a
source is a label shown as given; collections are ASCII and compared as given.
NFKC first folds full-width and compatibility forms (``ｐｒｅｆ`` is ``pref``). Every
identifier refuses invisible characters (format characters such as zero-width spaces
and bidirectional controls, control characters) and look-alike mixed scripts (Latin
with Cyrillic or Greek in one word): see :mod:`memvault.policy.scripts`. The errors
name the character (``U+0430 CYRILLIC SMALL LETTER A``) and say what is allowed.

Sizes are checked before anything else, so a huge argument is refused before any
scan of its text; then secrets (``find_secret``), so that a token pasted into a key is
refused as a secret, before its shape is judged. Messages show a refused value only
through :func:`shown`: cut and masked, never whole.
"""

from __future__ import annotations

import math
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from memvault.clock import parse_iso_span
from memvault.policy.scripts import char_label, first_invisible, mixed_script
from memvault.policy.units import SECONDS_PER_DAY
from memvault.service.errors import InvalidArgument
from memvault.service.secret_scan import find_secret, masked
from memvault.vocabulary import (
    KINDS,
    TASK_STATUSES,
    VISIBILITIES,
    Kind,
    TaskStatus,
    Visibility,
    is_kind,
    is_task_status,
)

MAX_K = 50
"""Most results one recall / search_docs may ask for: past it a reply is cut by
``policy.budget.REPLY_BUDGET_CHARS`` anyway."""
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_KEY_CHARS = 128
MAX_TASK_ID_CHARS = 128
MAX_PROJECT_CHARS = 200
MAX_SOURCE_CHARS = 200
MAX_COLLECTION_CHARS = 64
MAX_QUERY_CHARS = 2_000
MAX_IDS = 500
MIN_TTL_DAYS = 60 / SECONDS_PER_DAY  # one minute
MAX_KINDS = 2 * len(KINDS)  # a list of kinds longer than this repeats itself

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_WS = re.compile(r"\s+")


def has_control_chars(text: str) -> bool:
    """True if ``text`` holds an ASCII control character: U+0000..U+001F (tab and newline
    included) or U+007F. Names, tags, labels and paths must not; free text may."""
    return _CONTROL_RE.search(text) is not None


def shown(value: object) -> str:
    """A refused value as an error message may show it (``memvault.policy.secrets.masked``):
    a secret not at all, other text cut to a short prefix with token-like runs masked, a
    short plain word (an unknown kind) whole, lists and objects by their size. Replies and
    the server's log never quote a refused value whole; invisible and direction
    characters come out escaped (``\\u202e``), never raw."""
    return masked(value)


def shown_path(path: object) -> str:
    """A path named in an error: whole (the person must see which one; a path is where a
    file is, not what it holds), unless it holds a secret, then as :func:`shown`."""
    text = str(path)
    return shown(text) if find_secret(text[:4_000]) is not None else text


@dataclass(frozen=True)
class NameRule:
    """How one identifier argument is normalised and what it may hold.

    arg: the argument's name in messages (``"key"``); plural: its name for many (``"keys"``).
    max_chars: longest value after normalisation, characters.
    fold_case: compared case-insensitively (stored casefolded).
    pattern: the shape the normalised value must match, or None (any printable text).
    shape: what is allowed, for messages; example: a good value, for messages.
    collapse_spaces: inner runs of whitespace become one space.
    """

    arg: str
    plural: str
    max_chars: int
    fold_case: bool
    pattern: re.Pattern[str] | None
    shape: str
    example: str
    collapse_spaces: bool = False


KEY = NameRule("key", "keys", MAX_KEY_CHARS, True, re.compile(r"^\w[\w.\-:/]*$"),
               "letters, digits and . _ - : /", "'pref.package_manager'")
TAG = NameRule("tag", "tags", MAX_TAG_CHARS, True, None, "printable characters", "'billing'", collapse_spaces=True)
TASK_ID = NameRule("task_id", "task ids", MAX_TASK_ID_CHARS, True, re.compile(r"^\w[\w.\-:/#]*$"),
                   "letters, digits and . _ - : / #", "'migrate-billing' or 'issue-42'")
PROJECT = NameRule("project", "projects", MAX_PROJECT_CHARS, False, None, "printable characters",
                   "'billing-service'")
SOURCE = NameRule("source", "sources", MAX_SOURCE_CHARS, False, None, "printable characters", "'claude-code'")
COLLECTION = NameRule("collection", "collections", MAX_COLLECTION_CHARS, False,
                      re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"), "ASCII letters, digits, '_', '-' or '.'",
                      "'handbook'")


def check_name(rule: NameRule, value: object) -> str:
    """``value`` as the identifier ``rule`` describes, normalised (see the module docstring).

    Raises InvalidArgument naming the argument, the bad character (code point and name)
    or the broken limit, and what is allowed.
    """
    what = f"{rule.arg} {shown(value)}"
    allowed = f"use 1-{rule.max_chars} {rule.shape} such as {rule.example}"
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} is not text; {allowed}")
    if len(value) > 4 * rule.max_chars + 64:  # checked before any scan of the text
        raise InvalidArgument(f"{rule.arg} has {len(value)} characters; {allowed}")
    secret = find_secret(value)  # before the shape: a token in a key is refused as a secret, never quoted
    if secret is not None:
        raise InvalidArgument(f"{rule.arg} holds what looks like {secret.what}; secrets never go in "
                              f"{rule.plural} (they are stored and listed as given): remove it; {allowed}")
    if has_control_chars(value):
        raise InvalidArgument(f"{what} is not allowed; {rule.plural} are 1-{rule.max_chars} printable characters "
                              "(no tabs, newlines or other control characters)")
    bad = first_invisible(value)
    if bad is not None:
        raise InvalidArgument(
            f"{what} contains {char_label(bad)}, an invisible or text-direction character; {rule.plural} may not "
            "hold format characters (zero-width spaces and joiners, bidirectional controls, ...) since two "
            f"{rule.plural} that look the same would differ. Remove it; {allowed}"
        )
    norm = unicodedata.normalize("NFKC", value).strip()
    if rule.fold_case:
        norm = unicodedata.normalize("NFKC", norm.casefold())
    if rule.collapse_spaces:
        norm = _WS.sub(" ", norm)
    if not norm or len(norm) > rule.max_chars or (rule.pattern is not None and not rule.pattern.match(norm)):
        raise InvalidArgument(f"{what} is not allowed; {allowed}")
    mixed = mixed_script(norm)
    if mixed is not None:
        word, odd, scripts = mixed
        if len(scripts) > 1:
            why = f"{char_label(odd)} is a {scripts[-1] if scripts[0] == 'Latin' else 'mismatched'} letter " \
                  f"among {scripts[0]} ones"
        else:
            why = f"it is written in {scripts[0]} letters that look like Latin ones ({char_label(odd)})"
        raise InvalidArgument(
            f"{what} mixes scripts in {word!r}: {why}. Each word of a {rule.arg} must be written in one script "
            "(Latin may go with Chinese, Japanese or Korean), so that two names that look the same are the same; "
            f"retype it, e.g. {rule.example}"
        )
    return norm


def check_names(rule: NameRule, values: Sequence[str] | None, limit: int) -> list[str]:
    """Several identifiers of ``rule``: at most ``limit`` (counted before any is read),
    each checked by :func:`check_name`, duplicates (after normalisation) removed, order kept."""
    if values is None:
        return []
    if len(values) > limit:
        raise InvalidArgument(f"{len(values)} {rule.plural} given; at most {limit} are allowed")
    return list(dict.fromkeys(check_name(rule, x) for x in values))


def check_kind(kind: str) -> Kind:
    """One of the memory kinds."""
    if not isinstance(kind, str) or not is_kind(kind):
        raise InvalidArgument(f"kind {shown(kind)} is not known; use one of: {', '.join(KINDS)}")
    return kind


def check_visibility(visibility: str) -> Visibility:
    """``shared`` (every agent of the user reads the memory) or ``private`` (only the agent writing it)."""
    if visibility == "shared":
        return "shared"
    if visibility == "private":
        return "private"
    raise InvalidArgument(f"visibility {shown(visibility)} is not known; use one of: {', '.join(VISIBILITIES)} "
                          "(shared: every client of this user reads it; private: only this agent)")


def empty_filter(name: str, what: str) -> InvalidArgument:
    """The error for a filter given as an empty list. Every tool refuses one: [] would read as
    "all" to some and "none" to others, so a filter is either left out (no condition) or names
    at least one value. (A list of values to store, such as remember's tags, may be empty.)"""
    return InvalidArgument(f"{name} is an empty list; leave it out for {what}, or name at least one "
                           "(an empty filter is refused by every tool rather than read as all or none)")


def check_kinds(kinds: Sequence[str] | None) -> list[Kind] | None:
    """None (no condition) or a non-empty list of memory kinds; [] is refused (``empty_filter``)."""
    if kinds is None:
        return None
    if not kinds:
        raise empty_filter("kinds", f"all kinds ({', '.join(KINDS)})")
    if len(kinds) > MAX_KINDS:
        raise InvalidArgument(f"kinds has {len(kinds)} entries; name each of {', '.join(KINDS)} at most once")
    return list(dict.fromkeys(check_kind(k) for k in kinds))


def check_status(status: str | None) -> TaskStatus | None:
    """None or one of the task statuses."""
    if status is None:
        return None
    if not isinstance(status, str) or not is_task_status(status):
        raise InvalidArgument(f"status {shown(status)} is not known; use one of: {', '.join(TASK_STATUSES)}")
    return status


def check_key(key: str | None) -> str | None:
    """None or a stable slot name such as ``pref.package_manager`` (see ``KEY``)."""
    return None if key is None else check_name(KEY, key)


def check_tags(tags: Sequence[str] | None) -> list[str]:
    """Up to MAX_TAGS short tags (see ``TAG``), duplicates removed, order kept."""
    return check_names(TAG, tags, MAX_TAGS)


def check_tag_filter(tags: Sequence[str] | None) -> list[str] | None:
    """None (no condition) or tags to match (any of them); [] is refused (``empty_filter``)."""
    if tags is None:
        return None
    if not tags:
        raise empty_filter("tags", "memories with any tags or none")
    return check_tags(tags)


def check_task_id(task_id: str) -> str:
    """A task id such as ``migrate-billing`` (see ``TASK_ID``)."""
    return check_name(TASK_ID, task_id)


def check_collection(name: str | None) -> str | None:
    """None or a document collection name (see ``COLLECTION``)."""
    return None if name is None else check_name(COLLECTION, name)


def check_project(project: str | None) -> str | None:
    """None (the current project), '' (the user's global scope) or a project name (see ``PROJECT``)."""
    if project is None or project == "":
        return project
    if isinstance(project, str) and not project.strip():
        raise InvalidArgument("project is only whitespace; use '' for the global scope or leave it out "
                              "for the current project")
    return check_name(PROJECT, project)


def check_unit(name: str, value: float | None) -> float | None:
    """None or a finite number in [0, 1]."""
    if value is None:
        return None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name} is {value}; it must be between 0 and 1")
    return float(value)


def check_ttl(ttl_days: float | None) -> float | None:
    """None (the default) or a finite number of days from MIN_TTL_DAYS (one minute) to 36500.

    A TTL shorter than a minute would store something already expired by the time anyone
    reads it: refused, never stored as if it would last.
    """
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float)) or not math.isfinite(ttl_days) \
            or ttl_days <= 0:
        raise InvalidArgument(f"ttl_days is {shown(ttl_days)}; it must be a positive number of days "
                              "(or left out for the default)")
    if ttl_days < MIN_TTL_DAYS:
        raise InvalidArgument(
            f"ttl_days is {ttl_days:g} ({ttl_days * SECONDS_PER_DAY:.3g} s): it would expire before it could be "
            f"read, so nothing was stored. The shortest is {MIN_TTL_DAYS:.6f} days (one minute); leave it out "
            "for the default"
        )
    if ttl_days > 365 * 100:
        raise InvalidArgument(f"ttl_days is {ttl_days}; at most 36500 days, or leave it out for no expiry by default")
    return float(ttl_days)


def check_age(name: str, days: float | None) -> float | None:
    """None or an age in days: finite, 0 or more, at most 36500 (fractions allowed: 0.5 = 12 hours)."""
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not math.isfinite(days) \
            or not 0 <= days <= 365 * 100:
        raise InvalidArgument(f"{name} is {shown(days)}; it must be a number of days from 0 to 36500 "
                              "(fractions allowed: 0.5 = 12 hours)")
    return float(days)


def check_ids(name: str, ids: Sequence[str] | None, *, filter_: bool = False) -> list[str]:
    """Memory ids (UUID strings), at most MAX_IDS. ``filter_``: the ids select what a call acts
    on, so [] is refused (``empty_filter``); otherwise [] and None mean none."""
    if ids is not None and not ids and filter_:
        raise empty_filter(name, "no condition on ids")
    if not ids:
        return []
    if len(ids) > MAX_IDS:
        raise InvalidArgument(f"{name} has {len(ids)} ids; at most {MAX_IDS} per call")
    out = []
    for i in ids:
        try:
            out.append(str(uuid.UUID(str(i).strip())))
        except ValueError:
            raise InvalidArgument(f"{name} contains {shown(i)}, which is not a memory id (ids are UUIDs returned by remember/recall)") from None
    return list(dict.fromkeys(out))


def check_k(k: int, max_k: int) -> int:
    """Number of results: 1..max_k."""
    if k < 1 or k > max_k:
        raise InvalidArgument(f"k is {k}; it must be between 1 and {max_k}")
    return k


def check_min_relevance(value: float) -> float:
    """A relevance bar in [0, 1] (0 = return the k best whatever their relevance)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"min_relevance is {value!r}; it must be a number from 0 to 1 (0 returns the k best "
                              "matches whatever their relevance, 0.5 only those as likely relevant as not)")
    return float(value)


def check_query(query: str) -> str:
    """A non-empty search query of at most MAX_QUERY_CHARS characters."""
    q = query.strip()
    if not q:
        raise InvalidArgument("query is empty; say what to look for, e.g. 'package manager preference'")
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query has {len(q)} characters; at most {MAX_QUERY_CHARS} are allowed")
    return q


def check_time(name: str, value: str | None, *, end: bool = False) -> float | None:
    """None or an ISO 8601 date/time -> unix seconds, at the precision it was given.

    A value names a span (a date alone: the whole UTC day; ``T14:20``: that minute; see
    ``clock.parse_iso_span``). ``end=False`` (a lower bound, such as ``since``) gives the
    span's first instant; ``end=True`` (an inclusive upper bound, such as ``until``) its
    last, so ``until=<today>`` includes everything created today. Naive times are UTC.
    """
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidArgument(f"{name} {shown(value)} is not a date; use ISO 8601 such as 2026-11-29 or "
                              "2026-11-29T14:20:00Z")
    try:
        start, stop = parse_iso_span(value)
    except ValueError as exc:  # its text quotes the value whole: shown cut and masked instead
        raise InvalidArgument(f"{name}: {str(exc).replace(repr(value), shown(value), 1)}") from None
    if not end or stop == start:
        return start
    return math.nextafter(stop, -math.inf)  # the last instant before the next day / minute / ...


def check_source(source: str | None) -> str | None:
    """None or a short label of where the memory came from (see ``SOURCE``); blank is None."""
    if source is None or (isinstance(source, str) and not source.strip()):
        return None
    return check_name(SOURCE, source)


def clean_label(label: str | None, limit: int = MAX_SOURCE_CHARS) -> str | None:
    """A label the server did not get from an argument (a client's self-reported name) made fit
    for ``check_source``: NFKC, invisible and control characters dropped, cut to ``limit``;
    None when nothing is left. Never raises: a client's odd name must not fail its calls."""
    if not label:
        return None
    text = unicodedata.normalize("NFKC", label[: 4 * limit])
    text = "".join(ch for ch in text if first_invisible(ch) is None and not has_control_chars(ch)).strip()
    text = text[:limit]
    if not text or mixed_script(text) is not None:
        return None
    return text


MAX_AGENT_CHARS = 128


def agent_label(label: str | None) -> str | None:
    """The agent id of a client: its ``MEMVAULT_AGENT_ID`` or self-reported name made fit to
    compare (``clean_label``, cut to ``MAX_AGENT_CHARS``, casefolded: ``Claude-Code`` is
    ``claude-code``); None when nothing is left. Never raises."""
    cleaned = clean_label(label, MAX_AGENT_CHARS)
    return unicodedata.normalize("NFKC", cleaned.casefold()) if cleaned else None
