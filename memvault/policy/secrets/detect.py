"""``find_secret``: the detector families in order, on the text and on its NFKC-folded view."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator

from memvault.policy.secrets.assignments import cli_password, english_assignment, keyish_high_entropy, xml_assignment
from memvault.policy.secrets.blocks import private_key
from memvault.policy.secrets.cards import card_number
from memvault.policy.secrets.finding import SecretFinding
from memvault.policy.secrets.languages import chinese_assignment, other_languages
from memvault.policy.secrets.nearby import nearby_credential
from memvault.policy.secrets.vendors import prefixed_token, shape_hits, vendor_rules
from memvault.policy.secrets.web import auth_header, jwt, url_password

__all__ = ["find_secret"]

_DETECTORS: tuple[Callable[[str], SecretFinding | None], ...] = (
    private_key,
    shape_hits,
    vendor_rules,
    prefixed_token,
    jwt,
    auth_header,
    url_password,
    card_number,
    english_assignment,
    xml_assignment,
    cli_password,
    chinese_assignment,
    other_languages,
    nearby_credential,
    keyish_high_entropy,
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
    ``SecretFinding(kind, reason, what)``; ``kind`` is one of private_key,
    aws_access_key_id, aws_secret_access_key, github_token, gitlab_token,
    anthropic_api_key, openai_api_key, slack_token, slack_webhook, discord_webhook,
    telegram_bot_token, google_api_key, stripe_key, stripe_webhook_secret, npm_token,
    pypi_token, huggingface_token, sendgrid_api_key, digitalocean_token,
    discord_bot_token, atlassian_api_token, prefixed_token (any vendor's prefix and a
    generated body), jwt, bearer_token, basic_auth, connection_string_password,
    card_number, password, secret_assignment, high_entropy_secret, or a vetted gitleaks
    rule's id with ``_`` for ``-``
    (``shopify_access_token``). ``reason`` never contains the secret. Linear-time
    regexes; a 20,000-character input is checked in milliseconds.
    """
    for view in _views(text):
        for detect in _DETECTORS:
            hit = detect(view)
            if hit is not None:
                return hit
    return None
