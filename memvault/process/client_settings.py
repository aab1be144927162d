"""Which settings travel with a client's connection to the owner, and which are the owner's.

One owner serves every client of a data dir. The settings that concern one client
(``PER_CLIENT``: its user, agent, project and the folders ``index_docs`` may read) are
sent in that client's handshake and apply to its connection alone. Every other setting
(ranking, policies, the model, ...) is the owner's: the owner started with the
environment of the client that started it, and a later client's different values cannot
apply to a shared store and model. The handshake also carries those values
(``owner_wide``) so the owner can say, in its log and in ``memvault doctor``, which of a
client's settings it is not using (``differences``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memvault.config import GROUP_OF, GROUPS, Settings

PER_CLIENT = frozenset({"user_id", "project", "agent_id", "docs_allowed_dirs"})
"""Settings that apply to one connection, sent in its handshake."""

NOT_COMPARED = frozenset({"owner", "data_dir", "http_tokens_file"})
"""Settings of the forwarder itself, or equal by construction (the data dir): never a difference."""

_SECRET_WORDS = ("key", "token", "secret", "password")


def _secret(name: str) -> bool:
    return any(w in name for w in _SECRET_WORDS)


def owner_wide(settings: Settings) -> dict[str, Any]:
    """``{setting name: JSON value}`` of every owner-wide setting (not ``PER_CLIENT`` nor
    ``NOT_COMPARED``); a secret's value is replaced by ``sha256:<12 hex>`` of it, so it can be
    compared without being sent or logged."""
    out: dict[str, Any] = {}
    for group in GROUPS:
        values = getattr(settings, group).model_dump(mode="json")
        for name, value in values.items():
            if name in PER_CLIENT or name in NOT_COMPARED:
                continue
            if _secret(name) and value is not None:
                value = "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()[:12]
            out[name] = value
    return out


def allowed_dirs(settings: Settings) -> list[str]:
    """The client's ``docs_allowed_dirs`` as strings for the handshake."""
    return [str(p) for p in settings.documents.docs_allowed_dirs]


def dirs_of(value: Any) -> list[Path] | None:
    """A handshake's ``docs_allowed_dirs`` as folders (``~`` expanded); None when it sent none
    (a client of an older memvault: the owner's own setting applies)."""
    if not isinstance(value, list):
        return None
    return [Path(v).expanduser() for v in value if isinstance(v, str) and v]


def differences(owner: dict[str, Any], client: Any) -> list[str]:
    """Names of the settings whose value in ``client`` (a handshake's ``settings``) differs from
    ``owner``'s, sorted; [] when the client sent none (an older forwarder, a hook)."""
    if not isinstance(client, dict):
        return []
    return sorted(n for n, v in client.items() if n in owner and json.dumps(v) != json.dumps(owner[n]))


def describe(names: list[str], owner: dict[str, Any], client: dict[str, Any]) -> str:
    """``MEMVAULT_CAPACITY_PER_SCOPE (owner 50000, client 500), MEMVAULT_QDRANT_API_KEY (differs)``: secrets
    unquoted."""
    parts = []
    for n in names:
        if _secret(n) or n not in GROUP_OF:
            parts.append(f"MEMVAULT_{n.upper()} (differs)")
        else:
            parts.append(f"MEMVAULT_{n.upper()} (owner {_short(owner.get(n))}, client {_short(client.get(n))})")
    return ", ".join(parts)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"
