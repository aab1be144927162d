"""Judging a candidate value: placeholder or credential, word or password, its entropy.

Shared by every detector family. Token-shaped stand-ins (``token_placeholder``): documented
examples, placeholder words, runs, low entropy; value-shaped stand-ins (``is_placeholder``:
``${X}``, ``<your key>``, ``os.environ[...]``); whether a value looks like a credential
(``looks_secret``); cleaning a value of quotes and punctuation (``clean_value``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter

TOKEN_START = r"(?<![A-Za-z0-9_\-])"  # left boundary for token prefixes
TOKEN_END = r"(?![A-Za-z0-9_\-])"  # right boundary

# Words and runs that mark a token-shaped string as a stand-in ("ghp_xxxx…",
# "AKIAIOSFODNN7EXAMPLE", "sk-your-key-here", "dop_v1_000…"). A random token of 16 or more
# characters holds none of these but by a chance of about one in a million.
_PLACEHOLDER_WORDS = ("example", "sample", "xxxx", "your", "here", "placeholder", "dummy", "fake", "redacted",
                      "changeme", "...", "***", "<", ">", "{", "$")
_REPEAT_RUN = re.compile(r"(.)\1{5}")


# Tokens published in vendors' documentation as examples (sha256 of the token, so that
# this file does not hold them): Stripe's API reference test keys, the jwt.io example's
# signature, Slack's API docs bot token. AWS's (AKIAIOSFODNN7EXAMPLE, …EXAMPLEKEY) say
# EXAMPLE themselves.
_DOCUMENTED_EXAMPLES = frozenset({
    "2cafc0970149a84f3b9e62eaf169f36f59907a3b3e31f7b82e68c69cd27f7326",
    "f2d6ca16515033e5dce14eba840b979d27b5cbae24bb3e5bf484339667f86397",
    "051d093c4bdedbf23f905ad01d9c6111414d54e2170e1d7f76657c4e76e3e65b",
    "2ddc147f3a3b5a1722b8ed6be3c45c49a7156b17fca5d11410137a6d04def6eb",
})


def documented_example(token: str) -> bool:
    return hashlib.sha256(token.encode()).hexdigest() in _DOCUMENTED_EXAMPLES


def _sequential(token: str) -> bool:
    """Half or more of the neighbouring characters run up the alphabet or the digits
    ("1234567890abcdef…"): typed, not generated."""
    steps = sum(ord(b) - ord(a) == 1 for a, b in zip(token, token[1:], strict=False))
    return len(token) >= 12 and steps * 2 >= len(token) - 1


def token_placeholder(token: str, *, repeats: bool = True) -> bool:
    """A token-shaped stand-in rather than a credential: a documented example, a
    placeholder word in it, one character six times in a row (unless ``repeats`` is
    False: some long tokens carry binary headers, ``fm2_lJPECAAAAAAAA…``), a run up the
    alphabet, or (16 characters or more) under 3 bits of entropy per character, where
    random tokens have 3.5 to 6."""
    low = token.lower()
    return (
        documented_example(token)
        or any(w in low for w in _PLACEHOLDER_WORDS)
        or (repeats and _REPEAT_RUN.search(token) is not None)
        or _sequential(token)
        or (len(token) >= 16 and entropy(token) < 3.0)
    )


_PLACEHOLDER = re.compile(
    r"""^(?:
        \*+ | x{3,} | X{3,} | \.{3,} | … | -+ | _+ | \?+ | \#+
      | <.* | \[.* | \{.* | \$\{.* | \$\(.* | \$[A-Za-z_][A-Za-z0-9_]* | %[sd] | %\([^)]*\)s
      | (?:~|\.{1,2})?/[\w.\-/]* | [A-Za-z]:\\.*
      | %[A-Za-z_][A-Za-z0-9_]*% | \$\$\{.* | @[A-Za-z_][A-Za-z0-9_]*@
      | [A-Za-z_][\w.]{0,60}[(\[].*
      | (?:str|string|int|bytes|bool|text|varchar|char|SecretStr|Optional|Column|Field)\b.*
      | [\w.\-/\\:]{0,200}\.(?:json|pem|key|crt|cer|p12|pfx|txt|ya?ml|env|ini|cfg|conf|toml|kdbx|gpg|asc)
      | (?:self|this|config|conf|cfg|settings|env|options|opts|args|params|creds|credentials|vault|props|app)
        \.[A-Za-z_][\w.]{0,60}
      | (?:os\.)?(?:environ|getenv)\b.* | process\.env\b.* | env\(.* | ENV\[.* | System\.getenv.*
      | secrets?\.[A-Za-z_].*
      | !(?:vault|Ref|Sub|GetAtt|ImportValue|Secret|env|include)\b.*
      | (?:your|the)[_\-\s]?(?:api[_\-\s]?)?(?:key|token|password|passwd|pass|secret|pwd)\w*
      | example\w* | changeme | change_me | changeit | replace_?me | redacted | hidden | none | null | nil | undefined
      | n/?a | tbd | todo | empty | unset | required | optional | true | false | yes | no
    )$""",
    re.IGNORECASE | re.VERBOSE,
)

# English words that follow "password is"/"password:" in prose without being a value
# (a credential word as its own value, "password: password", is a template's stand-in).
NON_VALUES = frozenset(
    """
    password passwd pass pwd secret token
    a an the this that it its my our your their his her required optional needed missing
    wrong incorrect invalid valid correct expired expiring stored saved kept set changed
    reset rotated updated hashed encrypted salted same different secure insecure weak
    strong long short too not never always also in on at for from to of by with via see
    stored managed generated provided sent shown printed case sensitive case-sensitive
    ignored disabled enabled blank protected mandatory new old current default unknown
    here there below above attached ok fine good bad what which
    """.split()
)

UNITS = re.compile(
    r"^(?:characters?|chars?|digits?|letters?|symbols?|bytes?|bits?|days?|weeks?|months?|years?|"
    r"hours?|minutes?|mins?|seconds?|secs?|times?|attempts?|tries|long|max|min|or|and|to)\b",
    re.IGNORECASE,
)
ZH_UNITS = re.compile(r"^(?:位|个|個|字符|天|小时|分钟|秒|次|月|年|周|文字|桁|자|글자|символ|знак|caract|Zeichen|car)", re.IGNORECASE)


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip()))


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_IDENTIFIER_PART = re.compile(r"[A-Za-z]+\d{0,2}|\d{1,4}")
_IDENTIFIER_JOINER = re.compile(r"[-_.]")


def identifier_like(value: str) -> bool:
    """Names of things (``my-app-secret-v2``, ``settings.api_key``, ``getToken()``), not values."""
    if "(" in value:
        return True  # a call: getToken(), env("X")
    parts = [p for p in _IDENTIFIER_JOINER.split(value) if p]
    return len(parts) > 1 and all(_IDENTIFIER_PART.fullmatch(p) for p in parts) and value[0].isalpha()


def looks_secret(value: str, quoted: bool, password: bool) -> bool:
    """A value that looks like a credential rather than a word, a name or a number.

    Passwords are held to a lower bar (people pick words with a digit or capitals);
    tokens and keys are machine-made, so they need digits or symbols mixed with letters
    or a long high-entropy run.
    """
    n = len(value)
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    # "is config-v2" reads as a name, but after "my password is", letters mixed with
    # digits ("hunter2-Blue-Falcon") are a password even when shaped like an identifier.
    if identifier_like(value) and not quoted and not (password and has_digit and has_alpha):
        return False
    has_upper_inside = any(c.isupper() for c in value[1:])
    has_lower = any(c.islower() for c in value)
    has_symbol = any(c in "!@#$%^&*+=?~|<>" for c in value)
    if n >= 20 and entropy(value) >= 3.5:
        return True
    if password:
        return (
            (n >= 6 and has_digit and has_alpha)
            or (n >= 8 and has_upper_inside and has_lower)
            or (n >= 6 and has_symbol and has_alpha)
            or (quoted and n >= 6 and has_alpha)
        )
    return (n >= 8 and has_digit and has_alpha) or (n >= 8 and has_symbol and has_alpha)


_STRING_PREFIX = re.compile(r"[rbfuRBFU]{1,2}[\"']")


def clean_value(raw: str) -> tuple[str, bool]:
    """Value without its quotes or trailing sentence punctuation / unbalanced brackets."""
    prefix = _STRING_PREFIX.match(raw)  # r'…', b"…": a Python string literal's prefix
    if prefix and len(raw) > prefix.end() and raw[-1] == raw[prefix.end() - 1]:
        raw = raw[prefix.end() - 1 :]
    quoted = len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'`"
    if quoted:
        return raw[1:-1], True
    value = raw.rstrip(".!?:;")
    while value and value[-1] in "\"'`" and value.count(value[-1]) % 2:  # a quote closing the line's string
        value = value[:-1].rstrip(".!?:;")
    for open_, close in ("()", "[]", "{}"):
        while value.endswith(close) and value.count(close) > value.count(open_):
            value = value[:-1].rstrip(".!?:")
    return value, False
