"""What a detector returns: a finding's kind and a sentence for the person, never the secret."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SecretFinding", "finding"]

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


def finding(kind: str, what: str) -> SecretFinding:
    return SecretFinding(kind, f"The content contains {what}. {_ADVICE}")
