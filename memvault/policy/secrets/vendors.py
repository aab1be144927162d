"""Vendor tokens: shapes written from the vendors' published formats, and the vetted gitleaks rules."""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.gitleaks import vendor_tokens
from memvault.policy.secrets.values import TOKEN_END, TOKEN_START, entropy, token_placeholder

_SHAPES: list[tuple[str, str, re.Pattern[str]]] = [
    (kind, what, re.compile(pat))
    for kind, what, pat in [
        (
            "aws_access_key_id",
            "an AWS access key id",
            TOKEN_START + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z2-7]{16}" + TOKEN_END,
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
            TOKEN_START + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})" + TOKEN_END,
        ),
        ("gitlab_token", "a GitLab token", TOKEN_START + r"glpat-[A-Za-z0-9_\-]{20,}" + TOKEN_END),
        ("anthropic_api_key", "an Anthropic API key", TOKEN_START + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
        # OpenAI: legacy sk-<48 base62> and project/service keys sk-proj-…, sk-svcacct-….
        # The body must mix letters and digits (checked below) so that prose such as
        # "sk-learn-is-a-typo-for-scikit-learn" is left alone.
        ("openai_api_key", "an OpenAI API key", TOKEN_START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + TOKEN_END),
        ("slack_token", "a Slack token", TOKEN_START + r"xox[abposre]-[A-Za-z0-9\-]{10,}" + TOKEN_END),
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
        ("telegram_bot_token", "a Telegram bot token", r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + TOKEN_END),
        ("google_api_key", "a Google API key", TOKEN_START + r"AIza[0-9A-Za-z_\-]{35}" + TOKEN_END),
        ("stripe_key", "a Stripe secret key", TOKEN_START + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + TOKEN_END),
        ("stripe_webhook_secret", "a Stripe webhook signing secret", TOKEN_START + r"whsec_[A-Za-z0-9]{24,}" + TOKEN_END),
        ("npm_token", "an npm access token", TOKEN_START + r"npm_[A-Za-z0-9]{36}" + TOKEN_END),
        ("pypi_token", "a PyPI API token", TOKEN_START + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
        # Hugging Face user tokens: hf_ and 34 letters (digits accepted too).
        ("huggingface_token", "a Hugging Face access token", TOKEN_START + r"hf_[A-Za-z0-9]{30,40}" + TOKEN_END),
        ("sendgrid_api_key", "a SendGrid API key", TOKEN_START + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + TOKEN_END),
        ("digitalocean_token", "a DigitalOcean token", TOKEN_START + r"do[opr]_v1_[a-f0-9]{64}" + TOKEN_END),
        # Discord bot tokens: the bot's id in base64 (a snowflake: "MT…"-"OT…"), a 6-character
        # timestamp, a 27-38 character HMAC; gitleaks finds them only after the word "discord".
        ("discord_bot_token", "a Discord bot token",
         TOKEN_START + r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + TOKEN_END),
        # Atlassian API tokens (gitleaks has this shape only inside a rule left out as a whole).
        ("atlassian_api_token", "an Atlassian API token", TOKEN_START + r"ATATT3[A-Za-z0-9_\-=]{150,250}" + TOKEN_END),
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
    "discord_bot_token": (".",),
}


def _mixed_body(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def shape_hits(text: str) -> SecretFinding | None:
    low = text.lower()
    for kind, what, pat in _SHAPES:
        if not any(k in low for k in _SHAPE_KEYWORDS[kind]):
            continue
        for m in pat.finditer(text):
            token = m.group("v") if "v" in pat.groupindex else m.group(0)
            if token_placeholder(token):
                continue
            if kind == "discord_bot_token" and not (_mixed_body(token) and any(c.isupper() for c in token)
                                                    and any(c.islower() for c in token)):
                continue
            if kind in ("openai_api_key", "huggingface_token"):
                body = token.split("-" if kind == "openai_api_key" else "_", 1)[1]
                if not (any(c.isupper() for c in body) and any(c.islower() for c in body)
                        and (kind == "huggingface_token" or _mixed_body(body))):
                    continue
            return finding(kind, what)
    return None


def vendor_rules(text: str) -> SecretFinding | None:
    """Tokens of the vetted gitleaks rules (``gitleaks``), placeholders left out."""
    for hit in vendor_tokens(text):
        if not token_placeholder(hit.secret):
            name = hit.rule.id.replace("-", " ")
            return finding(hit.rule.id.replace("-", "_"), f"what looks like a {name} (a known credential format)")
    return None


# --- any vendor's prefixed token ----------------------------------------------------
# A vendor prefix (2-8 letters of one case, a digit allowed: ``rnd``, ``bkua``, ``CFPAT``,
# ``r8``), a separator, an optional second word (``dp.st.``, ``lin_api_``, ``dckr_pat_``),
# then a generated body. Only at the start of a run of token characters, so a piece of a
# longer string never matches.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9+/=_\-.])(?P<prefix>[a-z]{2,8}\d?|[A-Z]{2,8}\d?|[A-Z][a-z]{2,7}V\d)(?P<sep>[_\-.])"
    r"(?:[a-z]{2,8}[_\-.]){0,2}(?P<body>[A-Za-z0-9_\-]{20,})"
)
# The body runs to the end of the token's characters (greedy, so no backtracking over it);
# a token that goes on in base64 (``+ / = .``) is a piece of something longer.
_GOES_ON = frozenset("+/=.")
_MAX_BODY = 300
_PREFIX_KEYWORDS = ("_", "-", ".")
# Prefixes that mark a public identifier or a digest, not a credential: publishable keys,
# object ids, hash names.
_PUBLIC_PREFIXES = frozenset({
    "pk", "sha", "sha1", "sha256", "sha384", "sha512", "md5", "id", "uuid", "ref", "rev", "build", "commit",
    "release", "cache", "version", "v",
    # payment object ids, shown in dashboards and URLs (checkout sessions, intents, charges...)
    "cs", "pi", "ch", "cus", "evt", "txn", "sub", "price", "prod", "acct", "pm", "seti", "src", "in", "po", "tr",
})
_CREDENTIAL_PREFIXES = ("key", "token", "secret", "sk", "pat", "api", "auth", "sec", "priv")
_IDENTIFIER_PART = re.compile(r"[a-z]+|\d{1,4}|[a-z]+\d{1,2}")


def _generated(body: str, prefix: str, sep: str) -> bool:
    """Whether the body after a vendor prefix is generated: hex of 32 digits or more (behind
    ``_``, a credential word or a prefix of 4 letters at most: ``build-<sha>`` is a name), or
    26 characters or more (20 behind a credential word) mixing letters and digits at 3.5 bits
    per character, not lower-case words joined by separators. (Object ids of payment APIs,
    ``pi_…``, have 24.)"""
    bare = body.replace("_", "").replace("-", "")
    if not (any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare)):
        return False
    if all(_IDENTIFIER_PART.fullmatch(part) for part in re.split(r"[_\-]", body.lower()) if part):
        return False  # new-checkout-flow-2024, 1-beta-D-arabinofuranosyl: words joined, a name
    credential = prefix.lower().startswith(_CREDENTIAL_PREFIXES)
    if all(c in "0123456789abcdefABCDEF" for c in bare):
        return len(bare) >= 32 and (sep == "_" or credential or len(prefix) <= 4)
    return len(bare) >= (20 if credential else 26) and entropy(bare) >= 3.5


def prefixed_token(text: str) -> SecretFinding | None:
    """A token of any vendor that marks its tokens with a prefix (``rnd_…``, ``bkua_…``,
    ``CFPAT-…``, ``dp.st.…``): the prefix and a generated body, placeholders left out."""
    if not any(k in text for k in _PREFIX_KEYWORDS):
        return None
    for m in _PREFIXED.finditer(text):
        prefix = m.group("prefix")
        if prefix.lower() in _PUBLIC_PREFIXES:
            continue
        token = m.group(0)
        if text[m.end() : m.end() + 1] in _GOES_ON or len(m.group("body")) > _MAX_BODY:
            continue
        if token_placeholder(token, repeats=len(token) < 40) or not _generated(m.group("body"), prefix, m.group("sep")):
            continue
        return finding("prefixed_token", "what looks like an access token (a vendor prefix and a generated value)")
    return None
