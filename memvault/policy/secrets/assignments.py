"""Values assigned to credential names in English and code: ``DB_PASSWORD=…``, ``"api_key": "…"``,
``<password>…</password>``, ``mysql -u root -p…``, "my password is …", and long random values
assigned to key-like names."""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.values import (
    NON_VALUES,
    UNITS,
    clean_value,
    entropy,
    identifier_like,
    is_placeholder,
    looks_secret,
    token_placeholder,
)

# --- 7-8. assignments -------------------------------------------------------------

# Names whose value is a password: any non-placeholder value counts after ":"/"=".
_PASSWORD_NAMES = r"pass(?:word|wd|phrase|code)|pwd|(?:wi-?fi|wpa2?|wlan)[ _\-]?key"
# Names whose value is a secret only if it looks like one.
_SECRET_NAMES = (
    r"secret|token|credentials?|"
    r"(?:api|access|secret|private|signing|encryption|client|master|auth|app|license|account|service)"
    r"[ _.\-]?key|apikey|client[ _.\-]?secret"
)

# Case-sensitive boundaries so that camelCase names count (accessToken, dbPassword) while
# longer words do not (passwords, tokenizer, dbPasswordHash).
_NAME_EN = re.compile(
    r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=(?:PASSWORD|PASSWD|TOKEN|SECRET)(?![A-Za-z])))"
    rf"(?i:(?P<pw>{_PASSWORD_NAMES})|(?P<sec>{_SECRET_NAMES})|(?P<weak>pass|pw|pin))(?![A-Za-z])"
)
# After the name: an optional closing quote, an optional short "for X" phrase (prose),
# then a connector. Matched right after a name (whose last character is a letter); the
# lookbehind keeps a search from trying again at every character of a run of spaces.
_AFTER_NAME = re.compile(
    r"(?<!\s)[\"'\]]?"
    r"(?P<phrase>\s+(?:for|of|on|to|in|at)\s+(?:the\s+|my\s+|our\s+|your\s+)?[\w.\-@]+(?:\s+(?:account|server|database|db|instance|user|env))?)?"
    r"\s*(?:(?P<sym>:=|=>|==|[:=：])"
    r"|\s(?P<word>(?:(?:is|was|has been|got)\s+)?(?:set|changed|updated|reset)\s+to|is|was|are|were|becomes)\b)"
    r"\s*(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;]+)"
    r"(?P<rest>[ \t]*[A-Za-z]*)",
    re.IGNORECASE,
)

_KEYISH_NAME = re.compile(
    r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{0,40}?(?:key|salt|signature|seed|hmac|auth|cookie|session|nonce|pepper)[\"']?\s*(?:[:=]|=>)\s*[\"']?(?P<value>[A-Za-z0-9+/=_\-.~]{20,})",
    re.IGNORECASE,
)
_BARE_VALUE = re.compile(r"(?<![ \t])[ \t]+(?P<value>[^\s,;]+)")  # right after a name, as _AFTER_NAME
_CLI_PASSWORD = re.compile(r"(?<!\S)-p(?:[ \t]+)?(?P<value>[^\s-][^\s]*)")
_CLI_USER = re.compile(r"(?<!\S)(?:-u|--user(?:name)?)(?:[ \t=]+)?\S")
_CLI_USER_PASSWORD = re.compile(r"(?<!\S)(?:-u|--user)(?:[ \t]+|=)[\"']?[^\s:\"']{1,64}:(?P<value>[^\s\"']+)")


def _strong_password(value: str) -> bool:
    """Without a connector ("password admin123"), only a value mixing letters with
    digits or symbols counts: "password manager", "password policy" do not, nor a word
    in Markdown or punctuation ("**Password Managers:**")."""
    value = value.strip(_PROSE_MARKS)
    return (
        not identifier_like(value)
        and len(value) >= 6
        and any(c.isalpha() for c in value)
        and any(not c.isalpha() and c not in "'’-" for c in value)
        and not is_placeholder(value)
        and not _WORD_PATH.fullmatch(value)
    )


_WORD_PATH = re.compile(r"(?<![\w\-])[A-Za-z][\w\-]*(?:/[\w\-.]+)+")  # secret/shop/db: a vault path, a name


_MONEY = re.compile(r"[$€£¥]\d")
_PROSE_MARKS = "*_:;,.!?()[]\"'`"


def _key_position(text: str, start: int) -> bool:
    """Whether the name at ``start`` stands where a key does: first on its line (YAML,
    .env), after ``{ , ( [`` (JSON, call arguments), or joined to a word (``DB_PASS``,
    ``userPass``), not after a word in prose ("Monthly pass: $100")."""
    if start > 0 and text[start - 1] in "\"'":
        start -= 1
    before = text[text.rfind("\n", 0, start) + 1 : start]
    stripped = before.rstrip()
    if not stripped:
        return True
    if before[-1] in "_.-" or before[-1].isalnum():
        return True
    return stripped[-1] in "{,(["


def english_assignment(text: str) -> SecretFinding | None:
    for nm in _NAME_EN.finditer(text):
        m = _AFTER_NAME.match(text, nm.end())
        if not m:
            if nm.group("pw") is not None:
                bare = _BARE_VALUE.match(text, nm.end())
                if bare and _strong_password(clean_value(bare.group("value"))[0]):
                    return finding("password", "a password")
            continue
        value, quoted = clean_value(m.group("value"))
        if not value or is_placeholder(value) or value.casefold() in NON_VALUES:
            continue
        rest = m.group("rest").strip()
        if value.isdigit() and UNITS.match(rest):
            continue  # "password is 12 characters long"
        is_password = nm.group("pw") is not None
        symbolic = m.group("sym") is not None and not m.group("phrase")
        if nm.group("weak") is not None:
            # "pass"/"pw" name a password only as a key ("pass": "…", pw=…) or, for "pw",
            # in prose ("the root pw is …"), and the value must look like one: "pass: 3 of
            # 5 tests" is a count.
            weak = nm.group("weak").lower()
            named = (symbolic and _key_position(text, nm.start())) or (
                weak in ("pw", "pin") and m.group("word") is not None)
            if weak == "pin":
                # a PIN is 4 to 8 digits ("PIN: 4829", "my PIN is 4829")
                if named and value.isdigit() and 4 <= len(value) <= 8 and not UNITS.match(rest):
                    return finding("password", "a PIN")
            elif named and not _MONEY.match(value) and looks_secret(value, quoted, password=True):
                return finding("password", "a password")
            continue
        if is_password and symbolic:
            # "password: x", DB_PASSWORD=hunter2 -- any value, unless it opens a phrase
            # ("password: changed yesterday").
            if not quoted and value.isalpha() and rest:
                continue
            ok = True
        elif is_password:
            # Prose: "my password is hunter2" / "... is 483920".
            ok = looks_secret(value, quoted, password=True) or (value.isdigit() and len(value) >= 4)
        else:
            ok = looks_secret(value, quoted, password=False) and not token_placeholder(value)
        if ok:
            if is_password:
                return finding("password", "a password")
            return finding("secret_assignment", "a secret or token value assigned to a credential name")
    return None


# <password>…</password>, <add key="DbPassword" value="…" /> (.NET, NuGet): the name is
# the element's tag or the key attribute.
_XML_ELEMENT = re.compile(r"<(?P<tag>[A-Za-z_][\w.:\-]{0,40})(?:[ \t][^<>\n]{0,200})?>(?P<value>[^<>\n]{1,200})</(?P=tag)>")
_XML_KEY_VALUE = re.compile(r"\bkey[ \t]*=[ \t]*\"(?P<tag>[^\"\n]{1,60})\"[ \t]+value[ \t]*=[ \t]*\"(?P<value>[^\"\n]{1,200})\"",
                            re.IGNORECASE)


def xml_assignment(text: str) -> SecretFinding | None:
    if "<" not in text:
        return None
    for pat in (_XML_ELEMENT, _XML_KEY_VALUE):
        for m in pat.finditer(text):
            nm = _NAME_EN.search(m.group("tag"))
            value = m.group("value").strip()
            if nm is None or nm.group("weak") is not None or not value or is_placeholder(value):
                continue
            if nm.group("pw") is not None:
                return finding("password", "a password")
            if looks_secret(value, True, password=False) and not token_placeholder(value):
                return finding("secret_assignment", "a secret or token value assigned to a credential name")
    return None


def cli_password(text: str) -> SecretFinding | None:
    """``mysql -u root -pHunter22``, ``docker login -u bob -p S3cret``: a -p value on a
    line that also names a user (elsewhere -p is often a port or a flag)."""
    for m in _CLI_USER_PASSWORD.finditer(text):  # curl -u user:password
        value = m.group("value")
        if not is_placeholder(value) and looks_secret(value, False, password=True):
            return finding("password", "a password on a command line")
    for line in text.splitlines():
        if not _CLI_USER.search(line):
            continue
        for m in _CLI_PASSWORD.finditer(line):
            if _strong_password(m.group("value")):
                return finding("password", "a password on a command line")
    return None


_KEYISH_WORDS = ("key", "salt", "signature", "seed", "hmac", "auth", "cookie", "session", "nonce", "pepper")

def keyish_high_entropy(text: str) -> SecretFinding | None:
    low = text.lower()
    if not (("=" in text or ":" in text) and any(w in low for w in _KEYISH_WORDS)):
        return None
    for m in _KEYISH_NAME.finditer(text):
        value = m.group("value")
        if is_placeholder(value) or token_placeholder(value):
            continue
        classes = sum(
            (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
        )
        hex_only = all(c in "0123456789abcdefABCDEF-" for c in value)  # digests, UUIDs
        if hex_only or classes < 2 or entropy(value) < 3.5:
            continue  # hex digests/cache keys, words joined by underscores
        return finding("high_entropy_secret", "a long random-looking value assigned to a key-like name")
    return None
