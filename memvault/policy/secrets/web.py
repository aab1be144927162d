"""Credentials of the web: JSON Web Tokens, Authorization headers, URLs with an inline password."""

from __future__ import annotations

import base64
import binascii
import json
import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.values import TOKEN_END, TOKEN_START, documented_example, is_placeholder, token_placeholder

# --- 3. JWT ------------------------------------------------------------------------

_JWT = re.compile(TOKEN_START + r"(eyJ[A-Za-z0-9_\-]{5,})\.(eyJ[A-Za-z0-9_\-]{5,})\.([A-Za-z0-9_\-]{8,})" + TOKEN_END)


def _b64url_json(part: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return isinstance(json.loads(raw), dict)
    except (binascii.Error, ValueError):
        return False


def jwt(text: str) -> SecretFinding | None:
    for m in _JWT.finditer(text):
        if _b64url_json(m.group(1)) and not documented_example(m.group(3)):
            return finding("jwt", "a JSON Web Token")
    return None


# --- 4. Authorization headers ------------------------------------------------------

_AUTH = re.compile(
    r"(?i:\b(?:proxy-)?authorization\b|\bauth\b)[\"']?\s*[:=]\s*[\"']?(?i:(bearer|basic|token|bot|digest))\s+([A-Za-z0-9\-._~+/]+=*)"
    r"|(?i:\bbearer)\s+([A-Za-z0-9\-._~+/]{20,}=*)"
)


def auth_header(text: str) -> SecretFinding | None:
    for m in _AUTH.finditer(text):
        token = m.group(2) or m.group(3) or ""
        scheme = (m.group(1) or "bearer").lower()
        if len(token) < (8 if scheme == "basic" else 16) or is_placeholder(token) or token_placeholder(token):
            continue
        if token.isalpha() and token.islower():
            continue  # a word, not a credential
        what = "Basic credentials in an Authorization header" if scheme == "basic" else "a bearer token"
        return finding("basic_auth" if scheme == "basic" else "bearer_token", what)
    return None


# --- 5. URLs with inline passwords -------------------------------------------------

_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://([^\s:/@?#]*):([^\s@/?#]+)@[^\s/@]+")


# Stand-ins a template writes where the password goes (``user:password@``, ``USER:PASSWORD@``).
_STAND_INS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret", "token", "changeme", "passwort",
                        "contraseña", "senha", "mdp", "motdepasse", "wachtwoord", "haslo", "hasło", "sifre"})
_UPPER_WORD = re.compile(r"[A-Z][A-Z_]*")


def _template(user: str, password: str) -> bool:
    """A connection string written as a template: the password is a placeholder, a word in
    capitals (``USER:PASSWORD``, ``SCOTT:TIGER``), a word that says "password", or the user
    name again (``anonymous:anonymous``)."""
    return (is_placeholder(password) or _UPPER_WORD.fullmatch(password) is not None
            or password.casefold() in _STAND_INS or password == user)


def url_password(text: str) -> SecretFinding | None:
    for m in _URL_PASSWORD.finditer(text):
        if not _template(m.group(1), m.group(2)):
            return finding("connection_string_password", "a URL or connection string with an inline password")
    return None
