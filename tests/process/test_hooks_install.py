"""``memvault hooks install|uninstall claude-code`` on real settings files under a temp HOME / project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.policy.hook_settings import is_memvault_command

MEMVAULT = str(Path(sys.executable).with_name("memvault"))

THEIRS = ('{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(npm test)"]},\n  "hooks": {\n'
          '    "SessionStart": [\n      {"matcher": "startup", "hooks": [{"type": "command", "command": "cat notes.md"}]}\n'
          '    ]\n  }\n}\n')


def hooks(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "TMPDIR") if k in os.environ}
    env["HOME"] = str(home)
    return subprocess.run([MEMVAULT, "hooks", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings.get("hooks", {}).get(event, []) for h in g["hooks"] if is_memvault_command(h["command"])]


def test_install_into_a_new_user_settings_file_then_uninstall(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    res = hooks("install", "claude-code", home=home)
    assert res.returncode == 0, res.stderr
    path = home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    (start,) = ours(settings, "SessionStart")
    assert start["command"] == f"{MEMVAULT} hook session-start"  # absolute: works without the venv on PATH
    assert start["type"] == "command" and start["timeout"] == 10
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "startup|clear|compact"
    assert "UserPromptSubmit" not in settings["hooks"]  # opt-in
    assert "--remember-requests" in res.stdout
    assert not path.with_name("settings.json.memvault-backup").exists()  # nothing to back up

    res = hooks("uninstall", "claude-code", home=home)
    assert res.returncode == 0, res.stderr
    assert json.loads(path.read_text()) == {}


def test_install_keeps_other_settings_is_idempotent_and_uninstall_restores_the_bytes(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = home / ".claude" / "settings.json"
    path.write_text(THEIRS)
    path.chmod(0o600)

    res = hooks("install", "claude-code", "--remember-requests", "--data-dir", str(tmp_path / "data"), home=home)
    assert res.returncode == 0, res.stderr
    backup = path.with_name("settings.json.memvault-backup")
    assert backup.read_text() == THEIRS
    settings = json.loads(path.read_text())
    original = json.loads(THEIRS)
    assert settings["model"] == "opus" and settings["permissions"] == original["permissions"]
    assert settings["hooks"]["SessionStart"][0] == original["hooks"]["SessionStart"][0]
    (start,) = ours(settings, "SessionStart")
    (prompt,) = ours(settings, "UserPromptSubmit")
    assert start["command"] == f"{MEMVAULT} hook session-start --data-dir {tmp_path / 'data'}"
    assert prompt["command"] == f"{MEMVAULT} hook prompt-submit --data-dir {tmp_path / 'data'}"
    assert path.stat().st_mode & 0o777 == 0o600  # the file keeps its permissions

    installed = path.read_bytes()
    res = hooks("install", "claude-code", "--remember-requests", "--data-dir", str(tmp_path / "data"), home=home)
    assert res.returncode == 0 and "already installed; nothing changed" in res.stdout
    assert path.read_bytes() == installed

    res = hooks("uninstall", "claude-code", home=home)
    assert res.returncode == 0, res.stderr
    assert path.read_text() == THEIRS  # byte for byte
    res = hooks("uninstall", "claude-code", home=home)
    assert "no memvault hooks to remove; nothing changed" in res.stdout
    assert path.read_text() == THEIRS


def test_uninstall_after_the_user_changed_the_file_keeps_their_change(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = home / ".claude" / "settings.json"
    path.write_text(THEIRS)
    assert hooks("install", "claude-code", home=home).returncode == 0
    settings = json.loads(path.read_text())
    settings["theme"] = "dark"
    path.write_text(json.dumps(settings, indent=2) + "\n")
    assert hooks("uninstall", "claude-code", home=home).returncode == 0
    assert json.loads(path.read_text()) == {**json.loads(THEIRS), "theme": "dark"}


def test_project_scope_writes_the_projects_settings(tmp_path):
    home, project = tmp_path / "home", tmp_path / "shop"
    home.mkdir()
    project.mkdir()
    res = hooks("install", "claude-code", "--scope", "project", home=home, cwd=project)
    assert res.returncode == 0, res.stderr
    assert ours(json.loads((project / ".claude" / "settings.json").read_text()), "SessionStart")
    assert not (home / ".claude").exists()
    assert hooks("uninstall", "claude-code", "--scope", "project", "--dir", str(project), home=home).returncode == 0
    assert json.loads((project / ".claude" / "settings.json").read_text()) == {}


@pytest.mark.parametrize(("content", "message"), [
    ('{"hooks": {"SessionStart": [}', "is not valid JSON"),
    ('{"model": "opus",}', "is not valid JSON"),
    ('["not", "an", "object"]', "is not shaped as Claude Code's settings: the file holds a list, not a JSON object"),
    ('{"hooks": {"SessionStart": "cat x"}}', '"hooks"."SessionStart" is a string, not a list of matcher groups'),
])
def test_a_malformed_settings_file_is_refused_and_left_alone(tmp_path, content, message):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = home / ".claude" / "settings.json"
    path.write_text(content)
    for action in ("install", "uninstall"):
        res = hooks(action, "claude-code", home=home)
        assert res.returncode == 1
        assert message in res.stderr and "Nothing was changed." in res.stderr
        assert path.read_text() == content
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]  # no backup, no temp file


def test_the_installed_command_runs_from_a_shell_without_the_venv_on_path(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    assert hooks("install", "claude-code", "--data-dir", str(tmp_path / "none"), home=home).returncode == 0
    (start,) = ours(json.loads((home / ".claude" / "settings.json").read_text()), "SessionStart")
    res = subprocess.run(["/bin/sh", "-c", start["command"]], input=json.dumps({"cwd": str(tmp_path)}),
                         capture_output=True, text=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert (res.returncode, res.stdout) == (0, "")  # no data dir there yet: nothing to say, no failure


def test_a_settings_folder_that_cannot_be_written_is_reported(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = home / ".claude" / "settings.json"
    path.write_text(THEIRS)
    (home / ".claude").chmod(0o500)
    try:
        if os.access(home / ".claude", os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        res = hooks("install", "claude-code", home=home)
        assert res.returncode == 1
        assert "memvault hooks install: cannot write" in res.stderr and "Permission denied" in res.stderr
        assert path.read_text() == THEIRS
    finally:
        (home / ".claude").chmod(0o700)
