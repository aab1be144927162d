"""The handlers' secret checks, with ``memvault.policy.secrets`` imported on first use.

Importing the policy compiles its ~200 vetted gitleaks rules (~35 ms). A server imports
every handler at start, yet screens nothing before the first write: the handlers call
these, so the rules compile then (in the worker thread that screens), not before the
first recall.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memvault.policy.secrets import SecretBlock, SecretFinding


def find_secret(text: str) -> SecretFinding | None:
    """``memvault.policy.secrets.find_secret``: the first secret in ``text``, or None."""
    from memvault.policy.secrets import find_secret as find

    return find(text)


def masked(value: object) -> str:
    """``memvault.policy.secrets.masked``: a refused value as a message may show it (cut, masked)."""
    from memvault.policy.secrets.masking import masked as mask

    return mask(value)


def find_secret_blocks(text: str) -> list[SecretBlock]:
    """``memvault.policy.secrets.find_secret_blocks``: multi-line secret blocks of ``text``."""
    from memvault.policy.secrets import find_secret_blocks as find

    return find(text)
