"""The vendored gitleaks rules (``policy.secrets.gitleaks``): what is loaded and why the rest is
not, the RE2 -> Python translation, and tokens of the long tail of vendors found with
their placeholders left alone.

Fake tokens are random (seeded) and assembled at run time, so this file holds none.
"""

from __future__ import annotations

import random
import re
import string
import sys
from pathlib import Path

import pytest

from memvault.policy.secrets import find_secret
from memvault.policy.secrets import gitleaks as sr

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG = tomllib.loads((Path(sr.__file__).parent / sr.RULES_FILE).read_text(encoding="utf-8"))
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int, seed: str) -> str:
    rng = random.Random(seed + alphabet + str(n))
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_every_rule_is_loaded_or_left_out_for_a_stated_reason() -> None:
    loaded = {r.id for r in sr.RULES}
    context = {r["id"] for r in CONFIG["rules"] if r.get("regex") and sr.is_context_rule(r["regex"])}
    path_only = {r["id"] for r in CONFIG["rules"] if not r.get("regex")}
    everything = {r["id"] for r in CONFIG["rules"]}
    assert set(sr.LEFT_OUT) <= everything, "LEFT_OUT names a rule the file does not have"
    assert loaded | context | path_only | set(sr.LEFT_OUT) == everything
    assert not loaded & (context | path_only | set(sr.LEFT_OUT))
    assert len(loaded) >= 100 and {"huggingface-access-token", "sendgrid-api-token", "digitalocean-pat"} <= loaded


def test_every_loaded_rule_has_keywords_for_the_prefilter() -> None:
    assert all(r.keywords and all(k == k.lower() for k in r.keywords) for r in sr.RULES)


@pytest.mark.parametrize(
    ("re2", "python"),
    [
        (r"\b(SG\.(?i)[a-z]{3})", r"\b(SG\.(?i:[a-z]{3}))"),  # mid-pattern flags: scoped to the group
        (r"a(?i)b|c", r"a(?i:b)|(?i:c)"),  # RE2 keeps the flag across |
        (r"(x(?i)b|c)d", r"(x(?i:b)|(?i:c))d"),
        (r"(?i)abc", r"(?i)abc"),  # leading flags: unchanged
        (r"x(?-i:ACC)y(?-i)z", r"x(?-i:ACC)y(?-i:z)"),
        (r"[(?i)]x\z", r"[(?i)]x\Z"),  # inside a class: literal characters
        (r"\(?i\)", r"\(?i\)"),
    ],
)
def test_python_regex(re2: str, python: str) -> None:
    assert sr.python_regex(re2) == python
    re.compile(python)


def test_token_ends_at_sentence_punctuation_and_cjk() -> None:
    gitleaks_end = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
    assert all(gitleaks_end not in r.pattern.pattern for r in sr.RULES)  # every one widened
    tok = "hf_" + rand(string.ascii_letters, 34, "hf")
    pat = next(r.pattern for r in sr.RULES if r.id == "huggingface-access-token")
    for after in ("", " ", ".", ",", ")", "，", "的", "'", "\n"):
        assert pat.search(f"token {tok}{after}"), repr(after)
    assert not pat.search(f"token {tok}x")  # a longer run is not this token


def test_search_form_drops_a_leading_any_run() -> None:
    assert sr.search_form(".+EXAMPLE$") == ".EXAMPLE$"
    assert sr.search_form(".*?foo") == "foo"
    assert sr.search_form("^a.+b") == "^a.+b"


LONG_TAIL = {
    "shopify-access-token": lambda s: "shopify admin token shpat_" + rand(HEX, 32, s),
    "age-secret-key": lambda s: "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, s),
    "postman-api-token": lambda s: f"PMAK-{rand(HEX, 24, s)}-{rand(HEX, 34, s)}",
    "pulumi-api-token": lambda s: "pulumi login with pul-" + rand(HEX, 40, s),
    "doppler-api-token": lambda s: "DOPPLER_TOKEN=dp.pt." + rand(B62, 43, s),
    "planetscale-api-token": lambda s: "pscale_tkn_" + rand(B62, 43, s),
    "grafana-service-account-token": lambda s: f"glsa_{rand(B62, 32, s)}_{rand(HEX, 8, s)}",
    "databricks-api-token": lambda s: "dapi" + rand(HEX, 32, s),
    "linear-api-key": lambda s: "lin_api_" + rand(B62, 40, s),
    "twilio-api-key": lambda s: "SK" + rand(HEX, 32, s),
    "rubygems-api-token": lambda s: "gem push with rubygems_" + rand(HEX, 48, s),
    "perplexity-api-key": lambda s: "pplx-" + rand(B62, 48, s),
    "alibaba-access-key-id": lambda s: "阿里云 AccessKey ID 是 LTAI" + rand(B62, 20, s) + "，不要外传",
}


@pytest.mark.parametrize("rule", LONG_TAIL)
def test_long_tail_vendor_tokens_are_found(rule: str) -> None:
    text = LONG_TAIL[rule](rule)
    found = find_secret(text)
    assert found is not None, text
    assert rule in {m.rule.id for m in sr.vendor_tokens(text)}


@pytest.mark.parametrize(
    "text",
    [
        "shpat_" + "0" * 32,  # repeated characters
        "dapi" + "0123456789abcdef" * 2,  # a run up the digits and letters
        "pul-" + "x" * 40,
        "AGE-SECRET-KEY-1" + "Q" * 58,
        "the prefix shpat_ marks Shopify admin tokens",
        "pplx- keys come from the settings page",
    ],
)
def test_long_tail_placeholders_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None, find_secret(text)


def test_rules_run_only_on_their_keywords() -> None:
    # the prefilter: a text without any rule keyword runs no rule (and finds nothing)
    prose = "We moved the billing service to Postgres 16 and pinned uv; Carmen owns the rollout."
    lowered = prose.lower()
    assert not [r.id for r in sr.RULES if any(k in lowered for k in r.keywords)]
    assert list(sr.vendor_tokens(prose)) == []
