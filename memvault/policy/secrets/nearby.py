"""Credentials told in a sentence: a credential word, then a value that is typed or made, not a word.

Judged by structure, in any language, with no list of phrasings: a credential word (a
password word in one of some 35 languages, or a token / secret / API-key word), the clause
that follows it (up to ``WINDOW`` characters, to the end of the sentence), and in that
clause a value whose shape is a credential's:

* after a **password word** ("Das WLAN-Passwort im Büro lautet …", "…のパスワードは…です",
  "सर्वर का पासवर्ड … है", "Kata sandi server adalah …"): a run of printable ASCII of 6 to 64
  characters that mixes letters with digits and with capitals or symbols (``Winter2025!``,
  ``Kaffee-Tasse-42``), and is not a name (``shop-prod-2024``), a path, a URL, an e-mail
  address, a version, a ``key=value`` pair, a placeholder, or a word that holds the
  credential word itself (``1Password``);
  The same after "pass"/"pw" that follows a user name, and after a login written as a
  pair (``login for staging: admin / …``);
* after a **token word** (token, secret, API key, auth, SID, licence key..., in English as
  developers write them in every language): a machine-made value, 32 hex digits or more
  (a UUID too), or 20 characters or more of letters mixed with digits and high entropy
  (``Twilio … auth token 9dd7…``, ``mistral key for the summaries: MkGW…``). A bare "key"
  takes only the second kind (a cache key is often a hex digest), and a key said to be
  public (``site key``, ``publishable key``) takes none.

Linear time: the words are found by one alternation each, the clause is cut at a fixed
length, and its values are found by one character-class run.
"""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.values import entropy, identifier_like, is_placeholder, token_placeholder

__all__ = ["PASSWORD_WORDS", "nearby_credential"]

WINDOW = 64
"""Characters after a credential word searched for its value (a clause, not a paragraph)."""

PASSWORD_WORDS: tuple[str, ...] = tuple("|".join((
    # English, German, Dutch, Scandinavian, Finnish, Hungarian, Czech/Slovak, Polish
    "password|passwd|passphrase|passwort|kennwort|wachtwoord|lösenord|losenord|adgangskode|passord",
    "salasana|jelszó|jelszo|jelszav|heslo|hasło|haslo",
    # Romance: French, Spanish, Catalan, Portuguese, Italian, Romanian
    "mot de passe|mdp|contraseña|contrasena|contrasenya|senha|parola d'ordine|parola d’ordine|parolă",
    # Turkish (şifre, parola and their suffixed forms), Vietnamese, Indonesian, Malay, Swahili
    "şifre|sifre|parola|mật khẩu|mat khau|kata sandi|kata laluan|nenosiri",
    # Cyrillic, Greek, Hebrew, Arabic, Persian, Urdu, Hindi, Bengali, Thai
    "пароль|пароля|паролем|парол|κωδικός|κωδικό|συνθηματικό|סיסמה|סיסמא|كلمة المرور|كلمة السر",
    "رمز عبور|گذرواژه|پاس ورڈ|पासवर्ड|পাসওয়ার্ড|รหัสผ่าน",
    # CJK
    "パスワード|暗証番号|비밀번호|비번|암호|密码|密碼|口令",
)).split("|"))
"""Words for a password, lower case; a Latin-script word may be inflected or compounded
(``WLAN-Passwort``, ``lösenordet``, ``jelszava``, ``parolası``, ``şifresi``)."""


def _word_pattern(word: str) -> str:
    """A password word as a pattern: a short one (under 6 characters: ``mdp``, ``şifre``)
    starts a word, so that random text (``…OMdpj5…``) holds none, and may take a suffix
    (``şifresi``, ``hasła``); a longer one may also end a compound (``Datenbankpasswort``)."""
    escaped = re.escape(word)
    return rf"(?<![^\W_]){escaped}" if len(word) < 6 else escaped


_PASSWORD_WORD = re.compile("|".join(_word_pattern(w) for w in sorted(PASSWORD_WORDS, key=len, reverse=True)),
                            re.IGNORECASE)

# Words that name a machine-made credential, as developers write them in any language.
_TOKEN_WORD = re.compile(
    r"(?<![A-Za-z])(?:auth[ _\-]?token|access[ _\-]?token|token|secret|api[ _\-]?key|apikey|app[ _\-]?key|"
    r"app[ _\-]?secret|appsecret|secret[ _\-]?key|secretkey|secret[ _\-]?id|secretid|access[ _\-]?key|"
    r"licen[cs]e[ _\-]?key|licensekey|sdk[ _\-]?key|server[ _\-]?key|admin[ _\-]?key|master[ _\-]?key|"
    r"private[ _\-]?key[ _\-]?id|signing[ _\-]?key|account[ _\-]?sid|sid|authtoken|credential|key)"
    r"(?:s)?(?![A-Za-z])",
    re.IGNORECASE,
)
# A key said to be public: its value may be published.
_PUBLIC = re.compile(r"(?:public|publishable|site|pub|client[ _\-]?id|measurement)[ _\-]?$", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?。！？]\s|\n|[;；]|$")
# A typed value: printable ASCII, or letters of a script with capitals (Latin, Greek, Cyrillic).
_RUN = re.compile(r"[\x21-\x7e\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]{6,200}")
# A login written as a pair: "login for staging: admin / <password>", "credentials: bob / <password>"
# (a blank before the slash: a URL's path has none).
_PAIR = re.compile(r"(?<![A-Za-z])(?:login|credentials?|creds|account)(?![A-Za-z_])[^\n/]{1,40}[ \t]/", re.IGNORECASE)
# "pass"/"pw" name a password only after a user name in the same clause ("user bob pass …").
_USER_THEN_PASS = re.compile(r"(?<![A-Za-z])(?:user(?:name)?|login)(?![A-Za-z])[^\n]{1,40}?(?<![A-Za-z])(?:pass|pw|pwd)(?![A-Za-z])",
                             re.IGNORECASE)
_MADE = re.compile(r"[A-Za-z0-9+/=_\-.~]{16,}")
_HEX = re.compile(r"[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,}){0,6}")
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?:[-+][\w.\-+]*)?", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+\-])[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
_KEY_VALUE = re.compile(r"(?<![\w.\-])[A-Za-z_][\w.\-]*[=:]")
_PATH_PART = re.compile(r"[A-Za-z0-9_.\-]+")
_DIGEST = re.compile(r"(?:sha-?\d*|md5|blake2[bs]?|sha3-\d+)[:\-]", re.IGNORECASE)
# The credential word names something about the credential, not the credential itself.
_ABOUT = re.compile(r"[ \t]{0,3}(?:fingerprint|hash|digest|id\b|name|length|rotation|file|path|manager|policy|format|header)",
                    re.IGNORECASE)
_JOINED = re.compile(r"(?<![a-z\d\-_.])(?:[a-z]+|\d+)(?:[\-_.](?:[a-z]+|\d+))+")
_FILE_NAME = re.compile(r"\.[a-z][a-z0-9]{1,4}$")
_WORD_PREFIX = re.compile(r"^[A-Za-z]{1,12}[-_.:]")
# Lower-case strings one of which every password-word match contains (a prefilter).
_CUES = (*PASSWORD_WORDS, "user", "login", "credential", "creds", "account")
_WRAP = "\"'`«»“”‘’()[]{}<>,;:.!?。，、：；！？"


def _clause(text: str, start: int) -> str:
    window = text[start : start + WINDOW]
    end = _CLAUSE_END.search(window)
    return window[: end.start()] if end else window


def _in_identifier(text: str, start: int, end: int) -> bool:
    """Whether the word at ``text[start:end]`` is part of a name (``DB_PASSWORD``,
    ``${REDIS_PASSWORD}``, ``token-refresh``): its value is judged by the assignment
    detectors, and a compound is a name."""
    before, after = text[start - 1 : start], text[end : end + 2]
    return before in ("_", "$", "{", ".") or after[:1] in ("_", "}") or (after[:1] == "-" and after[1:].isalpha())


def _is_name(value: str) -> bool:
    """A name, a path, a URL, an address, a version or a setting rather than a credential."""
    low = value.lower()
    if "://" in value or _EMAIL.fullmatch(value) or _VERSION.fullmatch(value) or _KEY_VALUE.match(value):
        return True
    if "@" in value and (":" in value or "/" in value):
        return True  # user@host:port, @host/db: where, not what
    if any(c in value for c in "<>{}") or _JOINED.fullmatch(value):
        return True  # a template (<WAREHOUSE>), lower-case words and numbers joined (256-bit, shop-prod-2024)
    if _DIGEST.match(value):
        return True  # SHA256:…, sha512-…: a fingerprint or an integrity hash
    if _FILE_NAME.search(value):
        return True  # speech-379922-9d9af53bf1a0.json: a file that holds it
    if "/" in value or "\\" in value:
        parts = [p for p in re.split(r"[/\\]", value) if p]
        if all(_PATH_PART.fullmatch(p) for p in parts):
            return True
    if any(w in low for w in ("password", "passwort", "pass", "token", "secret")):
        return True  # 1Password, KeePass-Eintrag: a product or a name, not the value
    return identifier_like(value) and value == value.lower()


def typed_password(value: str) -> bool:
    """A password a person typed: letters with digits, and capitals or symbols; 6-64 characters."""
    if not 6 <= len(value) <= 64 or is_placeholder(value) or _is_name(value):
        return False
    letters = any(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    upper = any(c.isupper() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return letters and digits > 0 and (upper or symbol) and not value.isdigit()


def machine_made(value: str, *, hex_ok: bool) -> bool:
    """A generated credential: hex of 32 digits or more (dashes allowed: a UUID), or 20
    characters or more mixing letters and digits at 3.5 bits of entropy per character or more."""
    if token_placeholder(value, repeats=len(value) < 40) or _is_name(value):
        return False
    core = _WORD_PREFIX.sub("", value)  # NRJS-<hex>, build-<hex>
    if _HEX.fullmatch(core):
        bare = core.replace("-", "")
        # 32 hex digits or more; 16 behind a vendor prefix. Never after a bare "key": cache keys are digests.
        return hex_ok and len(bare) >= (16 if core != value else 32) and sum(c.isdigit() for c in bare) >= 4 \
            and sum(c.isalpha() for c in bare) >= 4
    bare = value.strip("=")
    if len(bare) < 20 or not any(c.isdigit() for c in bare) or not any(c.isalpha() for c in bare):
        return False
    mixed_case = any(c.isupper() for c in bare) and any(c.islower() for c in bare)
    return entropy(bare) >= 3.5 and (mixed_case or len(bare) >= 24)


def _password_nearby(text: str) -> SecretFinding | None:
    low = text.lower()
    if not any(w in low for w in _CUES):
        return None  # a substring test per word is much cheaper than the alternation
    words = [*_PASSWORD_WORD.finditer(text), *_USER_THEN_PASS.finditer(text), *_PAIR.finditer(text)]
    for m in words:
        if _in_identifier(text, m.start(), m.end()):
            continue
        for run in _RUN.finditer(_clause(text, m.end())):
            value = run.group(0).strip(_WRAP)
            if typed_password(value):
                return finding("password", "a password")
    return None


def _token_nearby(text: str) -> SecretFinding | None:
    if not any(machine_made(r.group(0).strip(_WRAP + "-"), hex_ok=True) for r in _MADE.finditer(text)):
        return None  # no machine-made value anywhere: no credential word needs finding
    for m in _TOKEN_WORD.finditer(text):
        if _PUBLIC.search(text[max(0, m.start() - 16) : m.start()]) or _in_identifier(text, m.start(), m.end()) \
                or _ABOUT.match(text, m.end()):
            continue
        bare_key = m.group(0).lower() in ("key", "keys")
        for run in _MADE.finditer(_clause(text, m.end())):
            value = run.group(0).strip(_WRAP + "-")
            if machine_made(value, hex_ok=not bare_key):
                return finding("secret_assignment", "a secret or token value next to a credential word")
    return None


def nearby_credential(text: str) -> SecretFinding | None:
    """A password or a machine-made token told in a sentence after its credential word (module doc)."""
    return _password_nearby(text) or _token_nearby(text)
