"""policy.hook_settings: memvault's hooks in Claude Code's settings, in and out again."""

from __future__ import annotations

import copy

import pytest

from memvault.policy.hook_settings import MalformedSettings, is_memvault_command, with_hooks, without_hooks

OURS = {"SessionStart": {"matcher": "startup", "hooks": [
    {"type": "command", "command": "/v/bin/memvault hook session-start", "timeout": 10}]}}
THEIRS = {"model": "opus", "hooks": {
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat notes.md"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}]}}


@pytest.mark.parametrize(("command", "ours"), [
    ("/v/bin/memvault hook session-start", True),
    ("'/path with space/memvault' hook prompt-submit --data-dir /d", True),
    ("/usr/bin/python3 -m memvault hook session-start", True),
    ("memvault.exe hook session-start", True),
    ("memvault context --cwd .", False),
    ("echo memvault hook session-start-ish", False),
    ("my-memvault-wrapper.sh", False),
    (None, False),
])
def test_our_commands_are_recognised(command, ours):
    assert is_memvault_command(command) is ours


def test_install_keeps_everything_else_and_twice_changes_nothing():
    original = copy.deepcopy(THEIRS)
    once = with_hooks(THEIRS, OURS)
    assert THEIRS == original  # the input is not changed
    assert once["model"] == "opus" and once["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert once["hooks"]["SessionStart"] == [*THEIRS["hooks"]["SessionStart"], OURS["SessionStart"]]
    assert with_hooks(once, OURS) == once


def test_install_from_another_path_replaces_ours():
    once = with_hooks(THEIRS, OURS)
    moved = {"SessionStart": {"matcher": "startup", "hooks": [
        {"type": "command", "command": "/new/bin/memvault hook session-start", "timeout": 10}]}}
    again = with_hooks(once, moved)
    assert again["hooks"]["SessionStart"] == [*THEIRS["hooks"]["SessionStart"], moved["SessionStart"]]


def test_uninstall_removes_exactly_ours():
    assert without_hooks(with_hooks(THEIRS, OURS)) == THEIRS
    assert without_hooks(with_hooks({}, OURS)) == {}
    # ours inside a group of the user's: only our hook goes
    mixed = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "cat a"},
                                                   OURS["SessionStart"]["hooks"][0]]}]}}
    assert without_hooks(mixed) == {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "cat a"}]}]}}
    # what we did not empty stays, even empty
    assert without_hooks({"hooks": {"Stop": []}}) == {"hooks": {"Stop": []}}


@pytest.mark.parametrize(("settings", "message"), [
    ([], "the file holds a list, not a JSON object"),
    ({"hooks": []}, '"hooks" is a list, not an object of events'),
    ({"hooks": {"SessionStart": {}}}, '"hooks"."SessionStart" is an object, not a list of matcher groups'),
    ({"hooks": {"Stop": ["x"]}}, '"hooks"."Stop"[0] is a string, not an object'),
    ({"hooks": {"Stop": [{"hooks": "cat"}]}}, '"hooks"."Stop"[0]."hooks" is not a list of objects'),
])
def test_malformed_settings_are_refused_with_where(settings, message):
    for change in (lambda s: with_hooks(s, OURS), without_hooks):
        with pytest.raises(MalformedSettings) as exc:
            change(settings)
        assert str(exc.value) == message
