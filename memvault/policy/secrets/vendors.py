"""Vendor tokens: shapes written from the vendors' published formats, and the vetted gitleaks rules."""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.gitleaks import vendor_tokens
from memvault.policy.secrets.values import TOKEN_END, TOKEN_START, token_placeholder

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
