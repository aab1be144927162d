"""Passwords named in languages other than English: Chinese (密码是 …), Japanese, Korean,
Russian, German, French, Spanish, Portuguese..."""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding
from memvault.policy.secrets.values import (
    NON_VALUES,
    ZH_UNITS,
    clean_value,
    is_placeholder,
    looks_secret,
    token_placeholder,
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
def chinese_assignment(text: str) -> SecretFinding | None:
    low = text.lower()
    if not (any(n in text for n in _ZH_NAMES) or any(n in low for n in ("password", "token", "api", "secret"))):
        return None
    for m in _ZH_ASSIGN.finditer(text):
        value, quoted = clean_value(m.group("value").rstrip("。，,；;！!？?）)\"'"))
        if not quoted and value[:1] in "\"'":
            value, quoted = value[1:], True  # '$pass'"; in code: the quotes are not the value
        if not value or is_placeholder(value) or value.casefold() in NON_VALUES:
            continue
        if value.isdigit() and ZH_UNITS.match(m.group("rest").strip()):
            continue  # "密码是 12 位"
        en = m.group("en")
        if m.group("conn") is None:
            # No connector ("微信支付密钥 578f…"): only a Chinese name followed by a long
            # machine-made value.
            if not en and len(value) >= 8 and looks_secret(value, quoted, password=False) \
                    and not token_placeholder(value):
                return finding("password", "a password or secret value (密码/口令/密钥)")
            continue
        if en and not looks_secret(value, quoted, password=en.lower() == "password"):
            continue  # an English name in Chinese text: "token 是 v2"
        if en and en.lower() != "password" and token_placeholder(value):
            continue
        if en and en.lower() != "password":
            return finding("secret_assignment", "a secret or token value assigned to a credential name")
        return finding("password", "a password or secret value (密码/口令/密钥)")
    return None


_INTL_NAMES = tuple(n.lower() for n in f"{_SCRIPT_PASSWORD_NAMES}|{_LATIN_PASSWORD_NAMES}".split("|"))
_ZH_NAMES = tuple(_ZH_PASSWORD_NAMES.split("|"))

def other_languages(text: str) -> SecretFinding | None:
    """Passwords named in Japanese, Korean, Russian, German, French, Spanish, Portuguese..."""
    low = text.lower()
    if not any(n in low for n in _INTL_NAMES):
        return None
    for m in _INTL_ASSIGN.finditer(text):
        value, quoted = clean_value(m.group("value").rstrip("。，,；;！!？?）)"))
        if not value or is_placeholder(value) or value.casefold() in NON_VALUES:
            continue
        if value.isdigit() and (len(value) < 4 or ZH_UNITS.match(m.group("rest").strip())):
            continue  # "パスワードは 8 文字以上"
        if m.group("latin") and not (looks_secret(value, quoted, password=True) or value.isdigit()):
            continue  # "Mein Passwort ist sicher"
        return finding("password", "a password")
    return None
