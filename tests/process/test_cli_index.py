"""``memvault index`` as a person runs it: progress on stderr, one summary line on stdout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import server_env
from tests.docs_fixtures import write_tree

pytestmark = pytest.mark.slow

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def run_index(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MEMVAULT, "index", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_cli_index_twice_then_after_an_edit(tmp_path, model_cache):
    tree = write_tree(tmp_path / "app")
    subprocess.run(["git", "init", "-q", str(tree.root)], check=True)
    subprocess.run(["git", "-C", str(tree.root), "remote", "add", "origin", "git@github.com:acme/app.git"],
                   check=True)
    env = server_env(tmp_path / "d", model_cache)
    # in a git work tree: its project, the one a server started in this folder uses
    first = run_index(tree.root, env, "docs", "src", "--collection", "handbook")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("4 added, 0 changed, 0 unchanged, 0 removed;"), first.stdout
    assert "collection 'handbook', project github.com/acme/app)" in first.stdout
    assert "4/4" in first.stderr  # the progress bar counted the files
    again = run_index(tree.root, env, "docs", "src", "--collection", "handbook", "--no-progress")
    assert again.stdout.startswith("0 added, 0 changed, 4 unchanged, 0 removed; 0 chunks embedded"), again.stdout
    assert again.stderr == ""
    (tree.root / "docs" / "deploy-zh.md").write_text("# 部署说明\n\n连接池大小改为三十。\n", encoding="utf-8")
    edited = run_index(tree.root, env, "docs", "src", "--collection", "handbook", "--project", "github.com/acme/app")
    assert edited.stdout.startswith("0 added, 1 changed, 3 unchanged, 0 removed; 1 chunks embedded"), edited.stdout
    missing = run_index(tree.root, env, "nowhere-such")
    assert missing.returncode != 0 and missing.stdout == ""
    assert "nowhere-such" in missing.stderr and "does not exist" in missing.stderr, missing.stderr
