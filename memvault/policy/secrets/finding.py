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
    """What was found: ``kind`` (a stable slug such as ``github_token``), ``reason``, an
    English sentence for the person, and ``what``, the thing found as a noun phrase
    ("a GitHub token") for messages about other arguments; neither quotes the secret."""

    kind: str
    reason: str
    what: str = "a secret"


def finding(kind: str, what: str) -> SecretFinding:
    """The finding of ``kind``, ``what`` naming it ("a GitHub token")."""
    return SecretFinding(kind, f"The content contains {what}. {_ADVICE}", what.removeprefix("what looks like "))
