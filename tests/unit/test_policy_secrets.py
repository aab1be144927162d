"""Secret detection: many positives (each with its kind) and many look-alike negatives.

Fake credentials are assembled from pieces at import time so that this file itself does
not trip secret scanners (push protection, pre-commit hooks).
"""

from __future__ import annotations

import pytest

from memvault.policy.secrets import SecretFinding, find_secret

# Deterministic fake bodies (not real credentials).
B62 = "Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3Cd5Fg0Jh"  # 32 chars, mixed case and digits
HEX40 = "3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c"

GITHUB_PAT = "gh" + "p_" + B62 + "AbCd"  # ghp_ + 36
GITHUB_OAUTH = "gh" + "o_" + B62 + "EfGh"
GITHUB_FINE = "github" + "_pat_" + "11ABCDEFG0" + B62 + "_" + B62
AWS_ID = "AK" + "IA" + "Q3EGRX5TZ7LMNO4P"  # AKIA + 16 of [A-Z2-7]
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Zq7Hk2Lm9N"  # 40 chars
OPENAI = "s" + "k-" + B62 + "T3BlbkFJ" + B62[:16]
OPENAI_PROJ = "s" + "k-proj-" + B62 + "-" + B62 + "_" + B62[:10]
ANTHROPIC = "s" + "k-ant-api03-" + B62 + B62 + "-" + B62[:20] + "AA"
SLACK = "xo" + "xb-" + "2345678901-1234567890123-" + B62[:24]
SLACK_HOOK = "https://hooks.slack" + ".com/services/T0ABCDEF1/B0ABCDEF2/" + B62[:24]
GOOGLE = "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K_l-M3n4O5p6Q"  # AIza + 35
STRIPE_LIVE = "s" + "k_live_" + B62[:24]
STRIPE_RK = "r" + "k_live_" + B62[:24]
GITLAB = "gl" + "pat-" + B62[:20]
NPM = "np" + "m_" + B62 + "1234"
JWT_HEAD = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
)
JWT = JWT_HEAD + ".q3Vb7Zx2LmN9pRt4sWy8KcH1fGj6DaE0uTo5iYwQeXr"
JWT_IO_EXAMPLE = JWT_HEAD + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"  # jwt.io's, in every tutorial
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----"
OPENSSH = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
PGP = "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----"
PKCS8 = "here:\n-----BEGIN ENCRYPTED " + "PRIVATE KEY-----\nMIIFHzBJ\n"
HF = "h" + "f_" + "QlwomFyypQKlSGyOXFElwdYEWJTdfeMnfP"  # hf_ + 34 letters
HF_DIGITS = "h" + "f_" + B62[:34]
SENDGRID = "S" + "G." + "4cW4skHa5Qy1_-gkUfd1W4" + "." + "OS8VD3hTXktDjQsreg04J3S57PVQzHlVScMfEDOMvKF"
DO_HEX = "3dc1654fa1a3c5400c31fb640e2937cc2c3f48aed75ce13496a73ba763ac648d"
DO_PAT, DO_OAUTH, DO_REFRESH = ("do" + k + "_v1_" + DO_HEX for k in "por")
PLACEHOLDER_X36 = "x" * 36

POSITIVES: list[tuple[str, str]] = [
    # private keys
    (PEM, "private_key"),
    (OPENSSH, "private_key"),
    (PGP, "private_key"),
    (PKCS8, "private_key"),
    # vendor token shapes, bare and in sentences
    (f"our CI uses {AWS_ID} for uploads", "aws_access_key_id"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key"),
    (f'AWS_SECRET_KEY="{AWS_SECRET}"', "aws_secret_access_key"),
    (f"my github token {GITHUB_PAT}", "github_token"),
    (GITHUB_OAUTH, "github_token"),
    (f"use {GITHUB_FINE} to push", "github_token"),
    (f"OPENAI_API_KEY={OPENAI}", "openai_api_key"),
    (f"the key is {OPENAI_PROJ}", "openai_api_key"),
    (f"export ANTHROPIC_API_KEY={ANTHROPIC}", "anthropic_api_key"),
    (f"slack bot token: {SLACK}", "slack_token"),
    (f"post alerts to {SLACK_HOOK}", "slack_webhook"),
    (f"maps key {GOOGLE}", "google_api_key"),
    (f"stripe: {STRIPE_LIVE}", "stripe_key"),
    (STRIPE_RK, "stripe_key"),
    (f"gitlab {GITLAB}", "gitlab_token"),
    (f"//registry.npmjs.org/:_authToken={NPM}", "npm_token"),
    # JWT and Authorization headers
    (f"session cookie was {JWT}", "jwt"),
    (f"Authorization: Bearer {JWT}", "jwt"),
    ("curl -H 'Authorization: Bearer 4f9c2a7e1b8d3f6a0c5e9b2d7a4f1c8e' https://api", "bearer_token"),
    ('headers = {"Authorization": "Bearer q8WfK2mZ7xLp4RtY9sVb3NcJ"}', "bearer_token"),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "basic_auth"),
    ("call it with bearer Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3", "bearer_token"),
    # connection strings
    ("postgres://u:p@h/db", "connection_string_password"),
    ("DATABASE_URL=postgresql://billing:S3cr3t!@db.internal:5432/billing", "connection_string_password"),
    ("redis://:hunter2@cache:6379/0", "connection_string_password"),
    ("mongodb+srv://admin:pa55w0rd@cluster0.example.net/test", "connection_string_password"),
    ("clone https://bob:ghtoken123@git.example.com/repo.git", "connection_string_password"),
    # payment cards (random digits that pass Luhn; the providers' published test numbers,
    # 4111 1111 1111 1111 and kin, are look-alikes: see NEGATIVES)
    ("card 4539 8997 2074 3225 exp 12/29", "card_number"),
    ("4916-7538-0792-9236", "card_number"),
    ("pay with 5274583430339575", "card_number"),
    ("amex 3782 822463 10005", "card_number"),
    ("银行卡号 6222 0212 3456 7890 128", "card_number"),
    ("order 17 used card 4024202740837261", "card_number"),
    # password assignments, English
    ("password is hunter2", "password"),
    ("my database password is hunter2-Blue-Falcon", "password"),
    ("my password: x", "password"),
    ("My password is 483920", "password"),
    ("the password for the staging db is Tr0ub4dor&3", "password"),
    ("DB_PASSWORD=hunter2", "password"),
    ('"password": "correct horse battery staple"', "password"),
    ("passwd: sunshine", "password"),
    ("wifi passphrase = purple-monkey-dishwasher-42", "password"),
    ("Password: Welcome1!", "password"),
    ("ssh password was changed to Qwerty123", "password"),
    ("ｐａｓｓｗｏｒｄ：ｈｕｎｔｅｒ２", "password"),  # full-width
    # password / secret assignments, Chinese
    ("密码是 abc123", "password"),
    ("我的密码是hunter2", "password"),
    ("密码：123456", "password"),
    ("口令是 Tr0ub4dor", "password"),
    ("服务器 root 密码为 P@ssw0rd", "password"),
    ("密钥是：9f8e7d6c5b4a3210", "password"),
    ("wifi密码 = qwerty2024", "password"),
    # secret/token/API-key assignments
    ("api_key = 'k3v9Qa7Lm2Xw8Rt4'", "secret_assignment"),
    ("The API key is a9F3kQ72mZ", "secret_assignment"),
    ("client_secret: 9sd8f7g6h5j4k3l2", "secret_assignment"),
    ("X-Api-Key: 7f3kQ9zLm2Np4Rs6", "secret_assignment"),
    ("the token for the ci server is 9f8e7d6c5b4a", "secret_assignment"),
    ("accessToken = 'Zq7Hk2Lm9Np4Rs6'", "secret_assignment"),
    ("PGPASSWORD=s3cret psql -h db", "password"),
    ("GITHUBTOKEN=Zq7Hk2Lm9Np4Rs6Tv8", "secret_assignment"),
    ("dbPassword: 'letmein'", "password"),
    ("API key 是 a9F3kQ72mZx", "secret_assignment"),
    ("user/password: admin/admin", "password"),
    ("password: mySecretPass1", "password"),
    ("Login with user admin and password admin123", "password"),
    ("docker login -u bob -p Sup3rS3cret registry.example.com", "password"),
    ("mysql -u root -pHunter22 billing", "password"),
    # generic high-entropy values on key-ish names
    ("SIGNING_KEY=Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3Cd5", "secret_assignment"),
    ("webhook_signature = Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3Cd5", "high_entropy_secret"),
    ("HMAC_SEED: 'q9W2e8R3t7Y4u6I5o1P0aSdF'", "high_entropy_secret"),
    ("session_salt: q9W2e8R3t7Y4u6I5o1P0aSdF", "high_entropy_secret"),
    # Hugging Face, SendGrid, DigitalOcean: bare, in prose, at a sentence end, in Chinese
    (f"HF_TOKEN={HF}", "huggingface_token"),
    (f"my hugging face token is {HF}.", "huggingface_token"),
    (f"huggingface-cli login --token {HF}", "huggingface_token"),
    (f"({HF_DIGITS})", "huggingface_token"),
    (f"我的 HF 令牌是{HF}，别外传", "huggingface_token"),
    (f"SENDGRID_API_KEY={SENDGRID}", "sendgrid_api_key"),
    (f"send mail with {SENDGRID} (transactional)", "sendgrid_api_key"),
    (f'{{"sendgrid": "{SENDGRID}"}}', "sendgrid_api_key"),
    (f"DIGITALOCEAN_TOKEN={DO_PAT}", "digitalocean_token"),
    (f"doctl auth init -t {DO_PAT}", "digitalocean_token"),
    (f"oauth token {DO_OAUTH}.", "digitalocean_token"),
    (f"refresh with {DO_REFRESH}", "digitalocean_token"),
    # passwords in JSON, YAML and URLs
    ('{"user": "admin", "pass": "Xk29!mq7"}', "password"),
    ('{"user":"admin","pass":"fzgPGhG~Z4K7"}', "password"),
    ("pass: hunter22", "password"),
    ('{"username": "deploy", "password": "Tq8~mZ2x"}', "password"),
    ('{"name": "billing", "secret": "Zq7Hk2Lm9Np4Rs6T"}', "secret_assignment"),
    ('{"api_key": "Zq7Hk2Lm9Np4Rs6Tv8Wx", "region": "eu"}', "secret_assignment"),
    ("db:\n  host: db.internal\n  password: Tq8~mZ2x\n", "password"),
    ("https://deploy:Xk29mq7@host", "connection_string_password"),
    ("mirror: https://deploy:Zq7Hk2Lm@git.example.org/repo.git", "connection_string_password"),
    ("curl -u admin:Zq7Hk2Lm9 https://api.example.com", "password"),
    # passwords named in other languages
    ("我的密碼是 g793_6~RzFso", "password"),
    ("Mein Passwort ist bu*4A1PPVr~4", "password"),
    ("le mot de passe est eJLG5P-49+pd", "password"),
    ("la contraseña es lJR9fYW.Z-a7", "password"),
    ("パスワードは at!CML0PRh-a です", "password"),
    ("비밀번호는 vs.JI~O8bEL* 입니다", "password"),
    ("пароль: k+_VD6DXt0Ne", "password"),
    ("senha: n55bZ.c!K7+_", "password"),
    # XML, .NET settings, kubeconfig, wifi keys, PINs
    ("<password>Xk29!mq7v</password>", "password"),
    ('<add key="DbPassword" value="Xk29!mq7v" />', "password"),
    ("<apiKey>Zq7Hk2Lm9Np4Rs6Tv8Wx</apiKey>", "secret_assignment"),
    ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBN3gK", "private_key"),
    ("the wifi key is Xk29mq7v!", "password"),
    ("PIN: 4829", "password"),
    ("my PIN is 4829", "password"),
    ("jira: ATATT3" + (B62 * 6)[:186], "atlassian_api_token"),
]

NEGATIVES: list[str] = [
    # published test card numbers (too regular to be issued) and URL templates
    "card 4111 1111 1111 1111 exp 12/29",
    "4111-1111-1111-1111",
    "pay with 5555555555554444",
    "order 17 used card 4012888888881881",
    "https://user:pass@host",
    # git SHAs, UUIDs, hashes in prose
    f"fixed in commit {HEX40}",
    "fixed in 3f2a9c1 and cherry-picked to release/2.x",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "idempotency_key: 550e8400-e29b-41d4-a716-446655440000",
    "cache_key = 9b1c4e7a2f5d8c3b6a9e1f4d7c2b5a8e",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    # error codes, identifiers, versions
    "pnpm fails with ERR_PNPM_OUTDATED_LOCKFILE in CI",
    "ERR_SSL_PROTOCOL_ERROR when calling the billing API",
    "upgrade to v1.2.3, then 2.0.0-rc.1; python 3.11.4",
    "max_tokens=4096 and token_count = 1500",
    "tokens: 4096",
    "the tokenizer splits on whitespace",
    "use useEffect in src/components/AuthForm.tsx",
    "password_policy: strict",
    "PASSWORD_MIN_LENGTH=12",
    "primary key: id",
    "sk-learn is a common typo for scikit-learn",
    "task-1234 and desk-5678 and ask-someone",
    "xoxo, see you",
    # mentions of secrets without values
    "we rotate the password monthly",
    "The password is required",
    "the password is stored in 1Password",
    "password: see the team vault",
    "password: changed yesterday",
    "the password is 12 characters long",
    "passwords must be at least 12 characters",
    "reset your password at https://example.com/reset",
    "the secret is to use small batches",
    "the API key is in the environment variable OPENAI_API_KEY",
    "api_key = os.environ['API_KEY']",
    "API_KEY=${API_KEY}",
    "password: ********",
    "token: <your token here>",
    "token: YOUR_TOKEN",
    "api_key=your-api-key-here",
    "DB_PASSWORD=$DB_PASSWORD",
    'password = "changeme"',
    "CSRF token: enabled",
    "token expiry is 3600 seconds",
    "auth key: ~/.ssh/id_rsa",
    "we use a bearer token for the API",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "Bearer authentication is used by the gateway",
    # URLs without passwords
    "https://user@github.com/org/repo.git",
    "git@github.com:org/repo.git",
    "http://localhost:8080/health",
    "postgres://app:${DB_PASS}@db/app",
    "postgres://app:****@db/app",
    # numbers that are not cards
    "call me at +1 415 555 0132",
    "手机号 138 0013 8000",
    "+86 138 0013 8000",
    "ticket 1234 5678 9012 3456",  # fails Luhn
    "timestamp 1700000000000 ms",
    "ISBN 978-0-306-40615-7",
    "pi is 3.14159265358979323846",
    "order number 12345678901234567890123",
    # Chinese mentions without values
    "我们每月轮换密码",
    "密码是什么？",
    "密码为空",
    "密码是 12 位",
    "密码长度是 12",
    "请不要把密码写在代码里",
    # ordinary prose
    "User prefers pnpm over npm",
    "用户喜欢深色主题",
    "Deploy with `make release` after tagging",
    "the key is to keep it simple",
    "token = getToken()",
    "api_key = settings.openai_api_key",
    "apiKey: apiKeyFromEnv",
    "secret: my-app-secret-v2",
    "dbPasswordHash = bcrypt(pw)",
    "The token is valid for 24h",
    "secret: Kubernetes secret named db-creds",
    "password reset link: https://example.com/r",
    "token limit: 8k",
    "Secret Santa is on Friday",
    "The secret to good code is tests",
    "secret of success is 42",
    "GitHub token is in the keychain",
    "I store my API key in 1Password",
    '"token": null',
    "token 是 v2",
    "token是什么",
    "Use the staging password from the vault, not the prod one",
    "The password is the same as staging",
    "Set PASSWORD to something strong",
    "the password manager is 1Password",
    "echo $GITHUB_TOKEN | docker login ghcr.io -u bob --password-stdin",
    "docker run -p 8080:80 -u 1000 nginx",
    "git add -p file2.py",
    "ssh -p 2222 -u deploy host",
    "deploy key fingerprint SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bob@laptop",
    "Version 2024.10.1 released on 2024-10-01",
    "Call 400-820-8820 for support",
    "My phone is 0044 7911 123456 and my wife's is 07911 654321",
    "Chinese ID 110101199003074514",
    "secret=${{ secrets.DEPLOY_KEY }}",
    "密码：＊＊＊＊",
    "",
    # documentation examples and placeholders
    "The AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIA" + "X" * 16,
    "GITHUB_TOKEN=gh" + "p_" + PLACEHOLDER_X36,
    "GITHUB_TOKEN=gh" + "p_" + "0" * 36,
    "GITHUB_TOKEN=gh" + "p_" + "*" * 36,
    "GITHUB_TOKEN=gh" + "p_" + "ab" * 18,  # low entropy
    "GITHUB_TOKEN=gh" + "p_" + "1234567890abcdefghijklmnopqrstuvwxyz",  # typed sequence
    "export GITHUB_TOKEN=<your-token>",
    "GITHUB_TOKEN=${GITHUB_TOKEN}",
    "HF_TOKEN=h" + "f_" + "x" * 34,
    "SENDGRID_API_KEY=S" + "G." + "x" * 22 + "." + "x" * 43,
    "DIGITALOCEAN_TOKEN=do" + "p_v1_" + "0" * 64,
    "stripe: s" + "k_live_" + "X" * 24,
    "OPENAI_API_KEY=s" + "k-your-key-here",
    "api_key = 'abcd1234efgh5678'",  # a typed stand-in
    'headers = {"Authorization": "Bearer abcDEF123ghiJKL456mnoPQR"}',
    # neighbours of the new forms that are not secrets
    '{"user": "admin", "pass": ""}',
    '{"password": null, "user": "admin"}',
    'password: "{{ vault_db_password }}"',
    "pass: 3 of 5 tests, fail: 2",
    "* Train commute:\n\t+ Monthly pass: $100/month",
    "boarding pass: 12B-4471x",
    "bypass: true",
    "pip install hf_transfer huggingface_hub",
    "SG.com is the domain; see SG.section.three",
    "dop_v1_ is the prefix of DigitalOcean personal access tokens",
    "curl -u user:$TOKEN https://api.example.com",
    "https://user:<password>@host/db",
    "Mein Passwort ist sicher im Tresor",
    "le mot de passe est trop court",
    "パスワードは 8 文字以上",
    "비밀번호는 안전하게 보관하세요",
    "我的密碼是什麼？",
    # more documentation examples and template stand-ins
    "s" + "k_test_4eC39HqLyjWDarjtT1zdp7dc is the key in Stripe's API reference",
    f"the jwt.io example {JWT_IO_EXAMPLE}",
    "password: %DB_PASSWORD%",
    "password: REPLACE_ME",
    "password: changeit",
    "password: password",
    "password = getpass.getpass()",
    "password = config.db_password",
    "<password></password>",
    "<password>${DB_PASSWORD}</password>",
    "<PasswordPolicy>strict</PasswordPolicy>",
    "client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwK",
    "pin: 1.2.3",
    "pin: true",
    "PIN codes have 4 digits",
    # assistant replies in the benchmark data that were flagged (prose, code that reads a password)
    "6. **Use a password manager**: If you have many shopping accounts, consider a password manager like 1Password",
    "3. **Password Generation:** LastPass generates strong, unique passwords for each of your accounts.",
    "1. Username and password: You can authenticate with Snowflake by providing your username and password.",
    "**Password Managers:**",
    '* 1Password: Another password manager that offers a "Travel" section',
    "7. **Use a password manager's built-in security features, like password sharing and alerts**.",
    'email_subject = "Password reset"',
    "password = request.form['password']",
    "password: str",
    "hashed_password = Column(String, nullable=False)",
    'new_password = prompt("Please enter your new password")',
    "GOOGLE_CLOUD_SPEECH_CREDENTIALS = r'C:\\Users\\dan\\keys\\speech-379922-9d9af53bf1a0.json'",
    "$sql = \"SELECT * FROM users WHERE username = '$user' AND password = '$pass'\";",
    '$sql = "SELECT * FROM users WHERE username = ? AND password = ?";',
    "The `PRIVATE_KEY` field holds your key file (including the `-----BEGIN PRIVATE"
    " KEY-----` and `-----END PRIVATE KEY-----` lines).",
]


@pytest.mark.parametrize(("text", "kind"), POSITIVES)
def test_positive(text: str, kind: str) -> None:
    found = find_secret(text)
    assert found is not None, text
    assert found.kind == kind, (text, found)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert find_secret(text) is None, (text, find_secret(text))


SECRET_VALUES = [GITHUB_PAT, AWS_ID, AWS_SECRET, OPENAI, ANTHROPIC, SLACK, GOOGLE, STRIPE_LIVE, JWT, "hunter2"]


@pytest.mark.parametrize("secret", SECRET_VALUES)
def test_reason_never_quotes_the_secret(secret: str) -> None:
    text = {"hunter2": f"note: password is {secret}", AWS_SECRET: f"aws_secret_access_key={secret}"}
    found = find_secret(text.get(secret, f"value {secret}"))
    assert isinstance(found, SecretFinding)
    assert secret not in found.reason
    for i in range(0, len(secret) - 8):  # not even a long piece of it
        assert secret[i : i + 8] not in found.reason
    assert found.reason.endswith(".") and len(found.reason.split()) > 8


def test_secret_in_long_text_is_found() -> None:
    filler = "We discussed the rollout plan and agreed on canaries. " * 300
    assert find_secret(filler + f" token {GITHUB_PAT} " + filler).kind == "github_token"
    assert find_secret(filler) is None


def test_zero_width_characters_do_not_hide_a_password() -> None:
    assert find_secret("pass\u200bword: hunter2").kind == "password"


def test_finding_is_immutable() -> None:
    found = find_secret("password is hunter2")
    with pytest.raises(AttributeError):
        found.kind = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    ["4-" * 10_000, "1 " * 10_000, "sk-" * 6_000, "eyJabcde." * 2_000, "key=" * 5_000, "a" * 20_000, "_a" * 10_000],
)
def test_pathological_inputs_are_scanned_linearly(text: str) -> None:
    # Regression guard for catastrophic backtracking: each of these once took seconds.
    # (No timing assertion; a quadratic regex would show up as a pytest timeout.)
    assert find_secret(text) is None
