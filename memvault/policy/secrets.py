"""Secret detection for memory writes: credentials must never be stored.

Pure function :func:`find_secret`; no I/O, no network verification. Own detectors for
prose, Chinese, cards and assignments; vendor token formats from two sources: the shapes
below, written from the vendors' published formats, and the long tail from gitleaks'
maintained rule set (``secret_rules``: the rules vetted for Python's backtracking regex
engine, about 110). The one well-known pure-Python detector on PyPI, ``detect-secrets``,
keeps plugin settings in process-global state, has no payment-card or Chinese-language
rules, and its keyword/entropy plugins are tuned for source files, not prose.

Detectors run from the most specific to the most generic; the first hit is returned:

1. private keys (``secret_blocks``): a PEM ``BEGIN``/``END … PRIVATE KEY`` line of any
   kind (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP, ssh.com SSH2), OpenVPN static
   keys, PuTTY key files;
2. vendor tokens with a recognisable shape: AWS access key ids and labelled AWS secret
   keys, GitHub, GitLab, Anthropic, OpenAI, Slack tokens and webhooks, Discord webhooks,
   Telegram bot tokens, Google API keys, Stripe, npm, PyPI, Hugging Face (``hf_``),
   SendGrid (``SG.….…``), DigitalOcean (``dop_v1_``/``doo_v1_``/``dor_v1_``), Atlassian
   (``ATATT3…``);
3. the vetted gitleaks rules (Shopify, Databricks, Twilio, Doppler, Postman, age, Vault,
   Atlassian, Alibaba ``LTAI``… : ``secret_rules``), each with its entropy floor;
4. JSON Web Tokens (three base64url parts whose header decodes to JSON);
5. credentials in an Authorization header (Bearer / Basic / Token);
6. URLs and connection strings with an inline password (``postgres://u:p@h/db``);
7. payment card numbers: 13-19 digits, optional single spaces/dashes between groups,
   a known card-network prefix and a valid Luhn check digit;
8. assignments to password/secret/token/API-key names, in code (``DB_PASSWORD=…``,
   ``"api_key": "…"``, ``{"pass": "…"}``), on command lines (``-p…``, ``curl -u u:p``),
   English prose ("my password is hunter2", "password: x"), Chinese ("密码是 abc123",
   "口令：…", "密碼是 …", "支付密钥 578f…") and other languages (Passwort, mot de passe,
   contraseña, senha, パスワード, 비밀번호, пароль…); the value must look like a value,
   not a word ("the password is required") or a placeholder (``${DB_PASSWORD}``,
   ``<your key>``, ``****``, ``os.environ[…]``, ``!vault``);
9. long high-entropy strings assigned to other key-ish names (``SIGNING_KEY=…``).

Token-shaped placeholders are not secrets (``_token_placeholder``): documentation
examples (``AKIAIOSFODNN7EXAMPLE``), ``xxxx``/``****``/``0000…``, one character six
times in a row, runs up the alphabet (``1234567890abcdef…``), ``your``/``here``/``sample``
words, under 3 bits of entropy per character. Passwords are held to none of these
("abc12345" is a real, bad, password). Text that only mentions secrets ("we rotate the
password monthly"), git SHAs, UUIDs, error codes, versions, phone numbers and ordinary
identifiers are not flagged. docs/secrets.md has the measured precision and recall.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memvault.policy.secret_blocks import find_secret_blocks
from memvault.policy.secret_rules import vendor_tokens

__all__ = ["SecretFinding", "find_secret"]

_ADVICE = (
    "Secrets must not be stored in memory; remove it, or remember where it is kept "
    "(e.g. the name of the environment variable or vault entry) instead."
)


@dataclass(frozen=True)
class SecretFinding:
    """What was found: ``kind`` (a stable slug such as ``github_token``) and ``reason``,
    an English sentence for the person, which never quotes the secret itself."""

    kind: str
    reason: str


def _finding(kind: str, what: str) -> SecretFinding:
    return SecretFinding(kind, f"The content contains {what}. {_ADVICE}")


# --- 1-2. shapes that are secrets wherever they appear -----------------------------

_B = r"(?<![A-Za-z0-9_\-])"  # left boundary for token prefixes
_E = r"(?![A-Za-z0-9_\-])"  # right boundary

_SHAPES: list[tuple[str, str, re.Pattern[str]]] = [
    (kind, what, re.compile(pat))
    for kind, what, pat in [
        (
            "aws_access_key_id",
            "an AWS access key id",
            _B + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z2-7]{16}" + _E,
        ),
        (
            "aws_secret_access_key",
            "an AWS secret access key",
            r"(?i:(?<![A-Za-z])(?:aws[_\- ]?)?secret[_\- ]?access[_\- ]?key|(?<![A-Za-z])aws[_\- ]?secret[_\- ]?key)"
            r"[\"']?\s*(?:[:=]|=>)\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ),
        (
            "github_token",
            "a GitHub token",
            _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E,
        ),
        ("gitlab_token", "a GitLab token", _B + r"glpat-[A-Za-z0-9_\-]{20,}" + _E),
        ("anthropic_api_key", "an Anthropic API key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
        # OpenAI: legacy sk-<48 base62> and project/service keys sk-proj-…, sk-svcacct-….
        # The body must mix letters and digits (checked below) so that prose such as
        # "sk-learn-is-a-typo-for-scikit-learn" is left alone.
        ("openai_api_key", "an OpenAI API key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + _E),
        ("slack_token", "a Slack token", _B + r"xox[abposre]-[A-Za-z0-9\-]{10,}" + _E),
        (
            "slack_webhook",
            "a Slack webhook URL",
            r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}",
        ),
        (
            "discord_webhook",
            "a Discord webhook URL",
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_\-]{60,68}",
        ),
        # Telegram bot tokens: the bot's id, a colon, then 35 characters starting "AA".
        ("telegram_bot_token", "a Telegram bot token", r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E),
        ("google_api_key", "a Google API key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
        ("stripe_key", "a Stripe secret key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _E),
        ("stripe_webhook_secret", "a Stripe webhook signing secret", _B + r"whsec_[A-Za-z0-9]{24,}" + _E),
        ("npm_token", "an npm access token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
        ("pypi_token", "a PyPI API token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
        # Hugging Face user tokens: hf_ and 34 letters (digits accepted too).
        ("huggingface_token", "a Hugging Face access token", _B + r"hf_[A-Za-z0-9]{30,40}" + _E),
        ("sendgrid_api_key", "a SendGrid API key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
        ("digitalocean_token", "a DigitalOcean token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E),
        # Atlassian API tokens (gitleaks has this shape only inside a rule left out as a whole).
        ("atlassian_api_token", "an Atlassian API token", _B + r"ATATT3[A-Za-z0-9_\-=]{150,250}" + _E),
    ]
]


# Lower-case strings one of which every match of a shape contains: a shape runs only when
# one is in the text (most memories run none).
_SHAPE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "aws_access_key_id": ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka"),
    "aws_secret_access_key": ("secret",),
    "github_token": ("gh", "github_pat_"),
    "gitlab_token": ("glpat-",),
    "anthropic_api_key": ("sk-ant-",),
    "openai_api_key": ("sk-",),
    "slack_token": ("xox",),
    "slack_webhook": ("hooks.slack.com",),
    "discord_webhook": ("discord",),
    "telegram_bot_token": (":aa",),
    "google_api_key": ("aiza",),
    "stripe_key": ("_live_", "_test_"),
    "stripe_webhook_secret": ("whsec_",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-age",),
    "huggingface_token": ("hf_",),
    "sendgrid_api_key": ("sg.",),
    "digitalocean_token": ("_v1_",),
    "atlassian_api_token": ("atatt3",),
}


def _mixed_body(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _shape_hits(text: str) -> SecretFinding | None:
    low = text.lower()
    for kind, what, pat in _SHAPES:
        if not any(k in low for k in _SHAPE_KEYWORDS[kind]):
            continue
        for m in pat.finditer(text):
            token = m.group("v") if "v" in pat.groupindex else m.group(0)
            if _token_placeholder(token):
                continue
            if kind in ("openai_api_key", "huggingface_token"):
                body = token.split("-" if kind == "openai_api_key" else "_", 1)[1]
                if not (any(c.isupper() for c in body) and any(c.islower() for c in body)
                        and (kind == "huggingface_token" or _mixed_body(body))):
                    continue
            return _finding(kind, what)
    return None


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


def _documented_example(token: str) -> bool:
    return hashlib.sha256(token.encode()).hexdigest() in _DOCUMENTED_EXAMPLES


def _sequential(token: str) -> bool:
    """Half or more of the neighbouring characters run up the alphabet or the digits
    ("1234567890abcdef…"): typed, not generated."""
    steps = sum(ord(b) - ord(a) == 1 for a, b in zip(token, token[1:], strict=False))
    return len(token) >= 12 and steps * 2 >= len(token) - 1


def _token_placeholder(token: str) -> bool:
    """A token-shaped stand-in rather than a credential: a documented example, a
    placeholder word in it, one character six times in a row, a run up the alphabet, or (16 characters or more) under
    3 bits of entropy per character, where random tokens have 3.5 to 6."""
    low = token.lower()
    return (
        _documented_example(token)
        or any(w in low for w in _PLACEHOLDER_WORDS)
        or _REPEAT_RUN.search(token) is not None
        or _sequential(token)
        or (len(token) >= 16 and _entropy(token) < 3.0)
    )


def _vendor_rules(text: str) -> SecretFinding | None:
    """Tokens of the vetted gitleaks rules (``secret_rules``), placeholders left out."""
    for hit in vendor_tokens(text):
        if not _token_placeholder(hit.secret):
            name = hit.rule.id.replace("-", " ")
            return _finding(hit.rule.id.replace("-", "_"), f"what looks like a {name} (a known credential format)")
    return None


def _private_key(text: str) -> SecretFinding | None:
    if find_secret_blocks(text):
        return _finding("private_key", "a private key block")
    return None


# --- 3. JWT ------------------------------------------------------------------------

_JWT = re.compile(_B + r"(eyJ[A-Za-z0-9_\-]{5,})\.(eyJ[A-Za-z0-9_\-]{5,})\.([A-Za-z0-9_\-]{8,})" + _E)


def _b64url_json(part: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return isinstance(json.loads(raw), dict)
    except (binascii.Error, ValueError):
        return False


def _jwt(text: str) -> SecretFinding | None:
    for m in _JWT.finditer(text):
        if _b64url_json(m.group(1)) and not _documented_example(m.group(3)):
            return _finding("jwt", "a JSON Web Token")
    return None


# --- 4. Authorization headers ------------------------------------------------------

_AUTH = re.compile(
    r"(?i:\b(?:proxy-)?authorization\b|\bauth\b)[\"']?\s*[:=]\s*[\"']?(?i:(bearer|basic|token|bot|digest))\s+([A-Za-z0-9\-._~+/]+=*)"
    r"|(?i:\bbearer)\s+([A-Za-z0-9\-._~+/]{20,}=*)"
)


def _auth_header(text: str) -> SecretFinding | None:
    for m in _AUTH.finditer(text):
        token = m.group(2) or m.group(3) or ""
        scheme = (m.group(1) or "bearer").lower()
        if len(token) < (8 if scheme == "basic" else 16) or _is_placeholder(token) or _token_placeholder(token):
            continue
        if token.isalpha() and token.islower():
            continue  # a word, not a credential
        what = "Basic credentials in an Authorization header" if scheme == "basic" else "a bearer token"
        return _finding("basic_auth" if scheme == "basic" else "bearer_token", what)
    return None


# --- 5. URLs with inline passwords -------------------------------------------------

_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://([^\s:/@?#]*):([^\s@/?#]+)@[^\s/@]+")


def _url_password(text: str) -> SecretFinding | None:
    for m in _URL_PASSWORD.finditer(text):
        if not _is_placeholder(m.group(2)):
            return _finding("connection_string_password", "a URL or connection string with an inline password")
    return None


# --- 6. payment cards --------------------------------------------------------------

_DIGIT_GROUPS = re.compile(r"(?<![\w+\-.])\d+(?:[ \-]\d+)*(?![\w\-]|\.\d)")
_GROUP_SEPARATOR = re.compile(r"[ \-]")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """Known issuer prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro)."""
    n = len(digits)
    if digits[0] not in "23456":
        return False
    p2, p3, p4, p6 = int(digits[:2]), int(digits[:3]), int(digits[:4]), int(digits[:6])
    return (
        (digits[0] == "4" and n in (13, 16, 19))
        or (51 <= p2 <= 55 and n == 16)
        or (222100 <= p6 <= 272099 and n == 16)
        or (p2 in (34, 37) and n == 15)
        or ((p4 == 6011 or p2 == 65 or 644 <= p3 <= 649) and 16 <= n <= 19)
        or (3528 <= p4 <= 3589 and 16 <= n <= 19)
        or ((300 <= p3 <= 305 or p2 in (36, 38, 39)) and 14 <= n <= 19)
        or (p2 == 62 and 16 <= n <= 19)
        or ((p2 == 50 or 56 <= p2 <= 69) and 12 <= n <= 19)
    )


def _card_number(text: str) -> SecretFinding | None:
    for m in _DIGIT_GROUPS.finditer(text):
        groups = _GROUP_SEPARATOR.split(m.group(0))
        # Any run of consecutive groups may be the card (a number may precede it).
        for i in range(len(groups)):
            digits = ""
            for g in groups[i:]:
                digits += g
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and _card_network(digits) and _luhn_ok(digits):
                    return _finding("card_number", "what looks like a payment card number")
    return None


# --- 7-8. assignments -------------------------------------------------------------

# Names whose value is a password: any non-placeholder value counts after ":"/"=".
_PASSWORD_NAMES = r"pass(?:word|wd|phrase|code)|pwd|(?:wi-?fi|wpa2?|wlan)[ _\-]?key"
# Names whose value is a secret only if it looks like one.
_SECRET_NAMES = (
    r"secret|token|credentials?|"
    r"(?:api|access|secret|private|signing|encryption|client|master|auth|app|license|account|service)"
    r"[ _.\-]?key|apikey|client[ _.\-]?secret"
)
_ZH_PASSWORD_NAMES = r"密码|密碼|口令|登录密码|支付密码|密钥|密鑰|秘钥|私钥|私鑰|金鑰|令牌|访问令牌|權杖|验证码|驗證碼|授权码|授權碼"
# Other languages. Scripts without spaces between words, or whose passwords are written in
# ASCII anyway (Japanese, Korean, Russian...): as Chinese, any ASCII value counts. Latin
# scripts: the value must look like a password ("Mein Passwort ist sicher" is prose).
_SCRIPT_PASSWORD_NAMES = r"パスワード|暗証番号|비밀번호|암호|пароль|пароля|парол|κωδικός|סיסמה|كلمة المرور|รหัสผ่าน"
_LATIN_PASSWORD_NAMES = (
    r"passwort|kennwort|mot de passe|mdp|contraseña|contrasena|senha|wachtwoord|hasło|haslo|şifre|sifre|"
    r"lösenord|losenord|adgangskode|passord|salasana|jelszó|jelszo|heslo|parolă|parola|mật khẩu|kata sandi"
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
_ZH_ASSIGN = re.compile(
    rf"(?:{_ZH_PASSWORD_NAMES}|(?<![A-Za-z])(?P<en>password|token|api\s?key|secret)(?![A-Za-z]))"
    r"(?:\s*(?P<conn>(?:就是|是|为|為|设为|設為|改为|改成)\s*[:：]?|[:：=])\s*|[ \t]*)"
    r"(?P<value>[\x21-\x7e]+)(?P<rest>\s*\S?)",
    re.IGNORECASE,
)

_INTL_ASSIGN = re.compile(
    rf"(?:(?P<script>{_SCRIPT_PASSWORD_NAMES})|(?<![^\W\d_])(?P<latin>{_LATIN_PASSWORD_NAMES})(?![^\W\d_]))"
    r"[ \t]*(?:(?:は|が|는|은|이|가|—|–)[ \t]*[:：]?"
    r"|(?:ist|lautet|war|est|était|etait|es|era|é|è|is|jest|je|är|er|on|это)(?![^\W\d_])[ \t]*[:：]?"
    r"|[:：=])[ \t]*"
    r"(?P<value>[\x21-\x7e]+)(?P<rest>[ \t]*\S?)",
    re.IGNORECASE,
)

_KEYISH_NAME = re.compile(
    r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{0,40}?(?:key|salt|signature|seed|hmac|auth|cookie|session|nonce|pepper)[\"']?\s*(?:[:=]|=>)\s*[\"']?(?P<value>[A-Za-z0-9+/=_\-.~]{20,})",
    re.IGNORECASE,
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
_NON_VALUES = frozenset(
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

_UNITS = re.compile(
    r"^(?:characters?|chars?|digits?|letters?|symbols?|bytes?|bits?|days?|weeks?|months?|years?|"
    r"hours?|minutes?|mins?|seconds?|secs?|times?|attempts?|tries|long|max|min|or|and|to)\b",
    re.IGNORECASE,
)
_ZH_UNITS = re.compile(r"^(?:位|个|個|字符|天|小时|分钟|秒|次|月|年|周|文字|桁|자|글자|символ|знак|caract|Zeichen|car)", re.IGNORECASE)


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip()))


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_IDENTIFIER_PART = re.compile(r"[A-Za-z]+\d{0,2}|\d{1,4}")
_IDENTIFIER_JOINER = re.compile(r"[-_.]")


def _identifier_like(value: str) -> bool:
    """Names of things (``my-app-secret-v2``, ``settings.api_key``, ``getToken()``), not values."""
    if "(" in value:
        return True  # a call: getToken(), env("X")
    parts = [p for p in _IDENTIFIER_JOINER.split(value) if p]
    return len(parts) > 1 and all(_IDENTIFIER_PART.fullmatch(p) for p in parts) and value[0].isalpha()


def _looks_secret(value: str, quoted: bool, password: bool) -> bool:
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
    if _identifier_like(value) and not quoted and not (password and has_digit and has_alpha):
        return False
    has_upper_inside = any(c.isupper() for c in value[1:])
    has_lower = any(c.islower() for c in value)
    has_symbol = any(c in "!@#$%^&*+=?~|<>" for c in value)
    if n >= 20 and _entropy(value) >= 3.5:
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


def _clean_value(raw: str) -> tuple[str, bool]:
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
        not _identifier_like(value)
        and len(value) >= 6
        and any(c.isalpha() for c in value)
        and any(not c.isalpha() and c not in "'’-" for c in value)
        and not _is_placeholder(value)
    )


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


def _english_assignment(text: str) -> SecretFinding | None:
    for nm in _NAME_EN.finditer(text):
        m = _AFTER_NAME.match(text, nm.end())
        if not m:
            if nm.group("pw") is not None:
                bare = _BARE_VALUE.match(text, nm.end())
                if bare and _strong_password(_clean_value(bare.group("value"))[0]):
                    return _finding("password", "a password")
            continue
        value, quoted = _clean_value(m.group("value"))
        if not value or _is_placeholder(value) or value.casefold() in _NON_VALUES:
            continue
        rest = m.group("rest").strip()
        if value.isdigit() and _UNITS.match(rest):
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
                if named and value.isdigit() and 4 <= len(value) <= 8 and not _UNITS.match(rest):
                    return _finding("password", "a PIN")
            elif named and not _MONEY.match(value) and _looks_secret(value, quoted, password=True):
                return _finding("password", "a password")
            continue
        if is_password and symbolic:
            # "password: x", DB_PASSWORD=hunter2 -- any value, unless it opens a phrase
            # ("password: changed yesterday").
            if not quoted and value.isalpha() and rest:
                continue
            ok = True
        elif is_password:
            # Prose: "my password is hunter2" / "... is 483920".
            ok = _looks_secret(value, quoted, password=True) or (value.isdigit() and len(value) >= 4)
        else:
            ok = _looks_secret(value, quoted, password=False) and not _token_placeholder(value)
        if ok:
            if is_password:
                return _finding("password", "a password")
            return _finding("secret_assignment", "a secret or token value assigned to a credential name")
    return None


# <password>…</password>, <add key="DbPassword" value="…" /> (.NET, NuGet): the name is
# the element's tag or the key attribute.
_XML_ELEMENT = re.compile(r"<(?P<tag>[A-Za-z_][\w.:\-]{0,40})(?:[ \t][^<>\n]{0,200})?>(?P<value>[^<>\n]{1,200})</(?P=tag)>")
_XML_KEY_VALUE = re.compile(r"\bkey[ \t]*=[ \t]*\"(?P<tag>[^\"\n]{1,60})\"[ \t]+value[ \t]*=[ \t]*\"(?P<value>[^\"\n]{1,200})\"",
                            re.IGNORECASE)


def _xml_assignment(text: str) -> SecretFinding | None:
    if "<" not in text:
        return None
    for pat in (_XML_ELEMENT, _XML_KEY_VALUE):
        for m in pat.finditer(text):
            nm = _NAME_EN.search(m.group("tag"))
            value = m.group("value").strip()
            if nm is None or nm.group("weak") is not None or not value or _is_placeholder(value):
                continue
            if nm.group("pw") is not None:
                return _finding("password", "a password")
            if _looks_secret(value, True, password=False) and not _token_placeholder(value):
                return _finding("secret_assignment", "a secret or token value assigned to a credential name")
    return None


def _cli_password(text: str) -> SecretFinding | None:
    """``mysql -u root -pHunter22``, ``docker login -u bob -p S3cret``: a -p value on a
    line that also names a user (elsewhere -p is often a port or a flag)."""
    for m in _CLI_USER_PASSWORD.finditer(text):  # curl -u user:password
        value = m.group("value")
        if not _is_placeholder(value) and _looks_secret(value, False, password=True):
            return _finding("password", "a password on a command line")
    for line in text.splitlines():
        if not _CLI_USER.search(line):
            continue
        for m in _CLI_PASSWORD.finditer(line):
            if _strong_password(m.group("value")):
                return _finding("password", "a password on a command line")
    return None


def _chinese_assignment(text: str) -> SecretFinding | None:
    low = text.lower()
    if not (any(n in text for n in _ZH_NAMES) or any(n in low for n in ("password", "token", "api", "secret"))):
        return None
    for m in _ZH_ASSIGN.finditer(text):
        value, quoted = _clean_value(m.group("value").rstrip("。，,；;！!？?）)\"'"))
        if not quoted and value[:1] in "\"'":
            value, quoted = value[1:], True  # '$pass'"; in code: the quotes are not the value
        if not value or _is_placeholder(value) or value.casefold() in _NON_VALUES:
            continue
        if value.isdigit() and _ZH_UNITS.match(m.group("rest").strip()):
            continue  # "密码是 12 位"
        en = m.group("en")
        if m.group("conn") is None:
            # No connector ("微信支付密钥 578f…"): only a Chinese name followed by a long
            # machine-made value.
            if not en and len(value) >= 8 and _looks_secret(value, quoted, password=False) \
                    and not _token_placeholder(value):
                return _finding("password", "a password or secret value (密码/口令/密钥)")
            continue
        if en and not _looks_secret(value, quoted, password=en.lower() == "password"):
            continue  # an English name in Chinese text: "token 是 v2"
        if en and en.lower() != "password" and _token_placeholder(value):
            continue
        if en and en.lower() != "password":
            return _finding("secret_assignment", "a secret or token value assigned to a credential name")
        return _finding("password", "a password or secret value (密码/口令/密钥)")
    return None


_INTL_NAMES = tuple(n.lower() for n in f"{_SCRIPT_PASSWORD_NAMES}|{_LATIN_PASSWORD_NAMES}".split("|"))
_ZH_NAMES = tuple(_ZH_PASSWORD_NAMES.split("|"))
_KEYISH_WORDS = ("key", "salt", "signature", "seed", "hmac", "auth", "cookie", "session", "nonce", "pepper")


def _other_languages(text: str) -> SecretFinding | None:
    """Passwords named in Japanese, Korean, Russian, German, French, Spanish, Portuguese..."""
    low = text.lower()
    if not any(n in low for n in _INTL_NAMES):
        return None
    for m in _INTL_ASSIGN.finditer(text):
        value, quoted = _clean_value(m.group("value").rstrip("。，,；;！!？?）)"))
        if not value or _is_placeholder(value) or value.casefold() in _NON_VALUES:
            continue
        if value.isdigit() and (len(value) < 4 or _ZH_UNITS.match(m.group("rest").strip())):
            continue  # "パスワードは 8 文字以上"
        if m.group("latin") and not (_looks_secret(value, quoted, password=True) or value.isdigit()):
            continue  # "Mein Passwort ist sicher"
        return _finding("password", "a password")
    return None


def _keyish_high_entropy(text: str) -> SecretFinding | None:
    low = text.lower()
    if not (("=" in text or ":" in text) and any(w in low for w in _KEYISH_WORDS)):
        return None
    for m in _KEYISH_NAME.finditer(text):
        value = m.group("value")
        if _is_placeholder(value) or _token_placeholder(value):
            continue
        classes = sum(
            (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
        )
        hex_only = all(c in "0123456789abcdefABCDEF-" for c in value)  # digests, UUIDs
        if hex_only or classes < 2 or _entropy(value) < 3.5:
            continue  # hex digests/cache keys, words joined by underscores
        return _finding("high_entropy_secret", "a long random-looking value assigned to a key-like name")
    return None


_DETECTORS: tuple[Callable[[str], SecretFinding | None], ...] = (
    _private_key,
    _shape_hits,
    _vendor_rules,
    _jwt,
    _auth_header,
    _url_password,
    _card_number,
    _english_assignment,
    _xml_assignment,
    _cli_password,
    _chinese_assignment,
    _other_languages,
    _keyish_high_entropy,
)

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def _views(text: str) -> Iterator[str]:
    yield text
    folded = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    if folded != text:
        yield folded  # full-width ｐａｓｓｗｏｒｄ：, zero-width characters inside a token


def find_secret(text: str) -> SecretFinding | None:
    """First secret found in ``text``, or ``None``.

    ``text``: any string (a memory's content, a tag, a key). Returns
    ``SecretFinding(kind, reason)``; ``kind`` is one of private_key, aws_access_key_id,
    aws_secret_access_key, github_token, gitlab_token, anthropic_api_key,
    openai_api_key, slack_token, slack_webhook, discord_webhook, telegram_bot_token,
    google_api_key, stripe_key, stripe_webhook_secret, npm_token, pypi_token,
    huggingface_token, sendgrid_api_key, digitalocean_token, atlassian_api_token, jwt, bearer_token,
    basic_auth, connection_string_password, card_number, password, secret_assignment,
    high_entropy_secret, or a vetted gitleaks rule's id with ``_`` for ``-``
    (``shopify_access_token``). ``reason`` never contains the secret. Linear-time
    regexes; a 20,000-character input is checked in milliseconds.
    """
    for view in _views(text):
        for detect in _DETECTORS:
            hit = detect(view)
            if hit is not None:
                return hit
    return None
