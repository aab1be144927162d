"""Private key blocks found on a whole text (``policy.secrets.blocks``): every PEM kind, every
wrapping a document gives them, truncated keys, and look-alikes that are not blocks.

Key material is random base64 made here (no real key), markers assembled from pieces so
that this file does not trip secret scanners.
"""

from __future__ import annotations

import base64
import random

import pytest

from memvault.policy.secrets import find_secret, find_secret_blocks

PK = "PRIVATE" + " KEY"


def body_lines(n: int = 50, seed: int = 1) -> list[str]:
    """``n`` lines of 64 base64 characters (a 4096-bit RSA key has about 50)."""
    rng = random.Random(seed)
    b64 = base64.b64encode(bytes(rng.randrange(256) for _ in range(48 * n))).decode()
    return [b64[i : i + 64] for i in range(0, len(b64), 64)][:n]


def pem(kind: str = "RSA ", n: int = 50) -> list[str]:
    label = f"{kind}{PK}"
    return [f"-----BEGIN {label}-----", *body_lines(n), f"-----END {label}-----"]


PROSE_BEFORE = "# Runbook\n\nRotate the deploy key every quarter.\n\n"
PROSE_AFTER = "\n\nThen restart the workers and watch the dashboards.\n"


def covered(text: str, lines: list[str]) -> bool:
    """Every key line lies inside a block found in ``text``, and the prose does not."""
    blocks = find_secret_blocks(text)
    inside = "".join(text[b.start : b.end] for b in blocks)
    outside = "".join(text[a:b] for a, b in zip([0] + [b.end for b in blocks], [b.start for b in blocks] + [len(text)],
                                                 strict=True))
    return all(line.strip() in inside for line in lines[1:-1]) and "Rotate the deploy key" in outside \
        and "restart the workers" in outside


@pytest.mark.parametrize(
    "kind",
    ["RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "", "ED25519 ", "PGP "],
    ids=lambda k: k.strip() or "PKCS8",
)
def test_every_pem_kind_is_one_block(kind: str) -> None:
    lines = pem(kind)
    if kind == "PGP ":
        lines = [line.replace(PK, PK + " BLOCK") for line in lines]
    text = PROSE_BEFORE + "\n".join(lines) + PROSE_AFTER
    blocks = find_secret_blocks(text)
    assert len(blocks) == 1 and blocks[0].kind == "private_key"
    assert text[blocks[0].start : blocks[0].end] == "\n".join(lines)
    assert covered(text, lines)


WRAPPINGS = {
    "crlf": lambda ls: "\r\n".join(ls),
    "code fence, indented": lambda ls: "```\n" + "\n".join("    " + x for x in ls) + "\n```",
    "markdown list": lambda ls: "- the key:\n" + "\n".join("  " + x for x in ls),
    "blockquote": lambda ls: "\n".join("> " + x for x in ls),
    "python literal per line": lambda ls: "KEY = (\n" + "\n".join(f'    "{x}\\n"' for x in ls) + "\n)",
    "python triple quotes": lambda ls: 'KEY = """\n' + "\n".join(ls) + '\n"""',
    "javascript concatenation": lambda ls: "const key =\n" + "\n".join(f"  '{x}\\n' +" for x in ls) + "\n  '';",
    "json, escaped newlines": lambda ls: '{"private_key": "' + "\\n".join(ls) + '\\n", "client_email": "x"}',
    "yaml block scalar": lambda ls: "tls:\n  key: |\n" + "\n".join("    " + x for x in ls),
}


@pytest.mark.parametrize("wrap", WRAPPINGS, ids=str)
def test_a_key_is_found_whole_in_any_wrapping(wrap: str) -> None:
    lines = pem()
    text = PROSE_BEFORE + WRAPPINGS[wrap](lines) + PROSE_AFTER
    assert covered(text, lines), find_secret_blocks(text)


def test_truncated_key_reaches_over_its_material_only() -> None:
    lines = pem()[:30]  # BEGIN and 29 lines, no END
    text = PROSE_BEFORE + "\n".join(lines) + "\n\nThen restart the workers and watch the dashboards.\n"
    assert covered(text, lines + ["-"])


def test_tail_of_a_key_without_its_begin_line() -> None:
    lines = pem()[20:]  # 30 lines and the END line
    text = PROSE_BEFORE + "\n".join(lines) + PROSE_AFTER
    assert covered(text, ["-", *lines])


def test_two_keys_and_prose_between() -> None:
    a, b = pem("RSA "), pem("EC ", 5)
    text = PROSE_BEFORE + "\n".join(a) + "\n\nThe second key, for staging:\n\n" + "\n".join(b) + PROSE_AFTER
    blocks = find_secret_blocks(text)
    assert len(blocks) == 2
    between = text[blocks[0].end : blocks[1].start]
    assert "The second key, for staging" in between


def test_putty_key_file() -> None:
    lines = ["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none", "Comment: deploy@ci", "Public-Lines: 2",
             *body_lines(2), "Private-Lines: 1", *body_lines(1, 2), "Private-MAC: " + "ab12" * 16]
    text = PROSE_BEFORE + "\n".join(lines) + PROSE_AFTER
    assert covered(text, lines)
    assert find_secret("\n".join(lines[5:])) is not None  # a chunk holding only its end


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN PUBLIC KEY-----\n" + "\n".join(body_lines(4)) + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\n" + "\n".join(body_lines(4)) + "\n-----END CERTIFICATE-----",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bob@laptop",
        "\n".join(body_lines(5)),  # base64 data without markers (an image, a blob)
        "Keys are PEM files; a private one starts with a BEGIN line.",
        "",
    ],
    ids=["public key", "certificate", "ssh public key", "bare base64", "prose", "empty"],
)
def test_not_a_private_key_block(text: str) -> None:
    assert find_secret_blocks(text) == []


def test_marker_lines_need_key_material() -> None:
    # a chunk or a memory holding one edge of a key and some of its material
    assert find_secret(f"MIIEowIBAAKCAQEA7x\n-----END RSA {PK}-----").kind == "private_key"
    assert find_secret(f"    -----BEGIN OPENSSH {PK}-----\r\n    b3BlbnNzaC1rZXk\r\n").kind == "private_key"
    assert find_secret(f"---- BEGIN SSH2 ENCRYPTED {PK} ----\nComment: x\nP2/56wAAAi").kind == "private_key"
    # prose that names the markers is not a key
    for prose in (f"The file must include the `-----BEGIN {PK}-----` and `-----END {PK}-----` lines.",
                  f"A key file starts with -----BEGIN RSA {PK}-----\nThen comes the README.",
                  f"-----END RSA {PK}-----"):
        assert find_secret_blocks(prose) == [] and find_secret(prose) is None, prose


@pytest.mark.parametrize(
    "text",
    [f"-----BEGIN RSA {PK}-----\n" * 5_000, f"-----END RSA {PK}-----\n" * 5_000,
     (f"-----BEGIN {PK}-----\n" + "QUJD" * 16 + "\n") * 3_000, ("QUJD" * 16 + "\n") * 10_000 + f"-----END {PK}-----"],
    ids=["many begins", "many ends", "begins and bodies", "long body, one end"],
)
def test_many_markers_are_linear(text: str) -> None:
    # A quadratic pairing would take minutes here (pytest-timeout); no timing assertion.
    blocks = find_secret_blocks(text)
    if "QUJD" in text:
        assert blocks and blocks[0].start == 0 and blocks[-1].end >= len(text) - 1
    else:  # markers alone: no key material
        assert blocks == []
