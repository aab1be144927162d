"""Argument checks of the services (pure): the one control-character rule and its users."""

from __future__ import annotations

import pytest

from memvault.service import validation as v
from memvault.service.documents.indexing import check_path_prefix
from memvault.service.errors import InvalidArgument


@pytest.mark.parametrize("text", ["a\x00b", "tab\there", "line\nbreak", "cr\r", "esc\x1b[0m", "del\x7f", "\x1f"])
def test_control_characters_are_found(text: str) -> None:
    assert v.has_control_chars(text)


@pytest.mark.parametrize("text", ["", "plain text", "中文 한국어 café", "emoji 😀", "nbsp\u00a0", "\x80 is C1, not ASCII",
                                  "~!@#$%^&*()"])
def test_printable_text_has_none(text: str) -> None:
    assert not v.has_control_chars(text)


def test_every_name_check_refuses_control_characters_and_says_so() -> None:
    with pytest.raises(InvalidArgument, match=r"tag 'a…' \(3 characters\) is not allowed; tags are 1-64 printable characters"):
        v.check_tags(["ok", "a\nb"])
    with pytest.raises(InvalidArgument, match=r"project 'p…' \(3 characters\) is not allowed; .*1-200 printable characters"):
        v.check_project("p\tq")
    with pytest.raises(InvalidArgument, match=r"source 'c…' \(4 characters\) is not allowed; sources are 1-200 printable"):
        v.check_source("cli\x00")
    with pytest.raises(InvalidArgument, match=r"path_prefix is too long or has control characters; at most 1000"):
        check_path_prefix("docs/\x1b")


def test_name_checks_pass_printable_values_through() -> None:
    assert v.check_tags([" ops ", "ops", "数据库"]) == ["ops", "数据库"]
    assert v.check_project(" billing ") == "billing"
    assert v.check_source("  claude-code ") == "claude-code"
    assert check_path_prefix("docs/") == "docs/"
