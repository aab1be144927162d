"""Text helpers: hashing normalisation, cutting to budgets, previews, validation."""

from __future__ import annotations

import hashlib
import re

import pytest

from memvault.policy.text import content_hash, cut, normalise_for_hash, preview, validate_content

MARKER = re.compile(r" …\[truncated: (\d+) more chars\]$")


# --- hashing -----------------------------------------------------------------------


def test_normalise_for_hash() -> None:
    assert normalise_for_hash("  Prefers\tPNPM \n over  npm ") == "prefers pnpm over npm"
    assert normalise_for_hash("Ｐｎｐｍ　ｖ８") == "pnpm v8"  # NFKC: full-width, ideographic space
    assert normalise_for_hash("Straße") == "strasse"  # casefold, not lower


def test_content_hash_equal_for_equivalent_text() -> None:
    assert content_hash("User prefers  PNPM") == content_hash("user prefers pnpm\n")
    assert content_hash("用户喜欢深色主题") == content_hash(" 用户喜欢深色主题 ")
    assert content_hash("prefers pnpm") != content_hash("prefers npm")


def test_content_hash_is_sha256_hex_of_normal_form() -> None:
    h = content_hash("Hello  World")
    assert h == hashlib.sha256(b"hello world").hexdigest()
    assert h == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"


# --- cut ---------------------------------------------------------------------------


def test_cut_short_text_untouched() -> None:
    assert cut("short", 100) == ("short", False)
    assert cut("x" * 100, 100) == ("x" * 100, False)


@pytest.mark.parametrize("budget", [30, 37, 50, 64, 99, 150])
def test_cut_stays_within_budget_and_counts_what_was_left_out(budget: int) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 10
    out, truncated = cut(text, budget)
    assert truncated
    assert len(out) <= budget
    m = MARKER.search(out)
    assert m, out
    head = out[: m.start()]
    assert text.startswith(head)
    assert int(m.group(1)) == len(text) - len(head)


def test_cut_does_not_split_words() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    out, _ = cut(text, 45)
    head = MARKER.sub("", out)
    assert head.split() == text.split()[: len(head.split())]
    assert not head.endswith(" ")


def test_cut_cjk_cuts_between_characters() -> None:
    text = "用户喜欢深色主题" * 20
    out, truncated = cut(text, 60)
    assert truncated and len(out) <= 60
    head = MARKER.sub("", out)
    assert len(head) >= 60 - len(" …[truncated: 999 more chars]")
    assert text.startswith(head)


def test_cut_long_token_is_cut_inside() -> None:
    text = "sha " + "a" * 500
    out, _ = cut(text, 100)
    assert len(out) <= 100
    assert MARKER.sub("", out).startswith("sha aaaa")


def test_cut_keeps_combining_marks_with_their_letter() -> None:
    text = "e\u0301" * 200  # é as e + combining acute
    for budget in range(40, 60):
        out, _ = cut(text, budget)
        head = MARKER.sub("", out)
        assert len(out) <= budget
        assert not head.endswith("e"), budget  # never a bare e without its accent


def test_cut_marker_digits_grow_without_breaking_budget() -> None:
    # Around budgets where N crosses a power of ten the marker gains a digit.
    text = "x" * 1000 + " " + "y" * 9000
    for budget in range(30, 1100, 7):
        out, _ = cut(text, budget)
        assert len(out) <= budget


def test_cut_tiny_budget() -> None:
    # No room for the marker: a plain ellipsis instead.
    assert cut("hello world, this is long", 5) == ("hell…", True)
    assert cut("hello world, this is long", 8) == ("hello…", True)
    assert cut("hello", 1) == ("…", True)


def test_cut_rejects_zero_budget() -> None:
    with pytest.raises(ValueError, match="budget"):
        cut("abc", 0)


# --- preview -----------------------------------------------------------------------


def test_preview_flattens_and_cuts() -> None:
    assert preview("line one\n\nline   two") == "line one line two"
    long = "word " * 50
    p = preview(long, 20)
    assert len(p) <= 20 and p.endswith("…")
    assert p[:-1].split() == ["word"] * len(p[:-1].split())


def test_preview_cjk() -> None:
    p = preview("用户喜欢深色主题" * 20, 10)
    assert p == "用户喜欢深色主题用…"


def test_preview_rejects_bad_length() -> None:
    with pytest.raises(ValueError):
        preview("abc", 0)


# --- validate_content --------------------------------------------------------------


def test_validate_returns_trimmed_text() -> None:
    assert validate_content("  prefers pnpm \n", 100) == "prefers pnpm"
    assert validate_content("用户喜欢深色主题", 8) == "用户喜欢深色主题"


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u3000\u3000", "\u200b\u200b"])
def test_validate_rejects_empty(text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        validate_content(text, 100)


def test_validate_rejects_too_long_with_numbers() -> None:
    with pytest.raises(ValueError, match="101 characters, over the limit of 100"):
        validate_content("x" * 101, 100)


def test_validate_rejects_nul() -> None:
    with pytest.raises(ValueError, match="NUL"):
        validate_content("abc\x00def", 100)


def test_validate_rejects_non_text() -> None:
    with pytest.raises(ValueError, match="must be text"):
        validate_content(b"bytes", 100)  # type: ignore[arg-type]
