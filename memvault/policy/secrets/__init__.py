"""Secret detection for memory writes: credentials must never be stored.

Pure function :func:`find_secret`; no network verification; the only file read is the
vendored rule set, a resource of this package, at import. Own detectors for
prose, Chinese, cards and assignments; vendor token formats from two sources: the shapes
below, written from the vendors' published formats, and the long tail from gitleaks'
maintained rule set (``gitleaks``: the rules vetted for Python's backtracking regex
engine, about 110). The one well-known pure-Python detector on PyPI, ``detect-secrets``,
keeps plugin settings in process-global state, has no payment-card or Chinese-language
rules, and its keyword/entropy plugins are tuned for source files, not prose.

Detectors run from the most specific to the most generic; the first hit is returned:

1. private keys (``blocks``): a PEM ``BEGIN``/``END … PRIVATE KEY`` line of any
   kind (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP, ssh.com SSH2), OpenVPN static
   keys, PuTTY key files;
2. vendor tokens with a recognisable shape: AWS access key ids and labelled AWS secret
   keys, GitHub, GitLab, Anthropic, OpenAI, Slack tokens and webhooks, Discord webhooks,
   Telegram bot tokens, Google API keys, Stripe, npm, PyPI, Hugging Face (``hf_``),
   SendGrid (``SG.….…``), DigitalOcean (``dop_v1_``/``doo_v1_``/``dor_v1_``), Discord bot
   tokens, Atlassian (``ATATT3…``);
3. the vetted gitleaks rules (Shopify, Databricks, Twilio, Doppler, Postman, age, Vault,
   Atlassian, Alibaba ``LTAI``… : ``gitleaks``), each with its entropy floor; then any
   vendor's prefixed token by its structure (``vendors.prefixed_token``: a prefix of 2-8
   letters, a separator, a generated body: ``rnd_…``, ``bkua_…``, ``CFPAT-…``);
4. JSON Web Tokens (three base64url parts whose header decodes to JSON);
5. credentials in an Authorization header (Bearer / Basic / Token);
6. URLs and connection strings with an inline password (``postgres://u:p@h/db``);
7. payment card numbers: 13-19 digits, optional single spaces/dashes between groups,
   a known card-network prefix and a valid Luhn check digit; not the providers' test
   numbers (a test word before it on its line, or digits too regular to be issued);
8. assignments to password/secret/token/API-key names, in code (``DB_PASSWORD=…``,
   ``"api_key": "…"``, ``{"pass": "…"}``), on command lines (``-p…``, ``curl -u u:p``),
   English prose ("my password is hunter2", "password: x"), Chinese ("密码是 abc123",
   "口令：…", "密碼是 …", "支付密钥 578f…") and other languages (Passwort, mot de passe,
   contraseña, senha, パスワード, 비밀번호, пароль…); the value must look like a value,
   not a word ("the password is required") or a placeholder (``${DB_PASSWORD}``,
   ``<your key>``, ``****``, ``os.environ[…]``, ``!vault``);
9. a credential told in a sentence (``nearby``): a password word in any of some 35
   languages, then in the same clause a value a person typed (letters with digits and
   capitals or symbols); or a token word, then a machine-made value (32 hex digits, or
   20 characters or more of mixed letters and digits at high entropy);
10. long high-entropy strings assigned to other key-ish names (``SIGNING_KEY=…``).

Token-shaped placeholders are not secrets (``values.token_placeholder``): documentation
examples (``AKIAIOSFODNN7EXAMPLE``), ``xxxx``/``****``/``0000…``, one character six
times in a row, runs up the alphabet (``1234567890abcdef…``), ``your``/``here``/``sample``
words, under 3 bits of entropy per character. Passwords are held to none of these
("abc12345" is a real, bad, password). Text that only mentions secrets ("we rotate the
password monthly"), git SHAs, UUIDs, error codes, versions, phone numbers and ordinary
identifiers are not flagged. docs/secrets.md has the measured precision and recall.

One module per family: ``blocks`` (1), ``vendors`` and ``gitleaks`` (2-3), ``web`` (4-6),
``cards`` (7), ``assignments`` (8 and 10 in English and code), ``languages`` (8 in other
languages), ``nearby`` (9); ``values`` judges a candidate value for all of them, ``detect`` runs them in
order. ``masking`` shows a refused argument in a message without quoting it whole.
"""

from __future__ import annotations

from memvault.policy.secrets.blocks import SecretBlock, find_secret_blocks
from memvault.policy.secrets.detect import find_secret
from memvault.policy.secrets.finding import SecretFinding
from memvault.policy.secrets.masking import masked

__all__ = ["SecretBlock", "SecretFinding", "find_secret", "find_secret_blocks", "masked"]
