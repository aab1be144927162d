"""Where a call's project comes from: project identity.

Identity tests build real repositories with git in ``tmp_path`` (worktrees, a submodule,
a remote in an included config file) and ask ``project_of_folder`` about them, with git
and, by emptying ``PATH``, without it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memvault.service.project import (
    make_scope,
    project_of_folder,
    project_of_start_dir,
    readable_name,
)

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="the identity tests build repositories with git")


@pytest.fixture(autouse=True)
def _hermetic_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config: only what a test writes decides."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(cwd: Path, *args: str) -> str:
    """Run git (found before any test empties PATH) in ``cwd``; its stdout."""
    assert GIT is not None
    done = subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )
    return done.stdout


def new_repo(path: Path, remote: str | None = None) -> Path:
    """A repository with one commit (and ``origin`` = ``remote``) at ``path``."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", "init")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


@pytest.fixture
def layouts(tmp_path: Path) -> dict[str, Path]:
    """One folder per layout: a repository with a remote and its worktree, a remote-less
    repository and its worktree, a submodule, a remote in an included file, two
    remote-less folders called ``api``."""
    shop = new_repo(tmp_path / "src" / "shop", "git@github.com:acme/shop.git")
    git(shop, "worktree", "add", "-q", str(tmp_path / "src" / "shop-feature"), "-b", "feature")
    notes = new_repo(tmp_path / "src" / "notes")
    git(notes, "worktree", "add", "-q", str(tmp_path / "wt" / "notes-draft"), "-b", "draft")
    lib = new_repo(tmp_path / "src" / "lib", "https://github.com/acme/lib.git")
    git(shop, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    inc = new_repo(tmp_path / "src" / "inc")
    (inc / ".git" / "remote.inc").write_text('[remote "origin"]\n\turl = git@github.com:acme/inc.git\n')
    git(inc, "config", "include.path", "remote.inc")
    (tmp_path / "src" / "shop" / "web" / "src").mkdir(parents=True)
    for parent in ("work", "personal"):
        (tmp_path / parent / "api").mkdir(parents=True)
    return {
        "shop": shop, "shop-feature": tmp_path / "src" / "shop-feature", "shop/web/src": shop / "web" / "src",
        "notes": notes, "notes-draft": tmp_path / "wt" / "notes-draft",
        "lib": lib, "shop/vendor/lib": shop / "vendor" / "lib",
        "inc": inc, "work/api": tmp_path / "work" / "api", "personal/api": tmp_path / "personal" / "api",
    }


def ids(layouts: dict[str, Path]) -> dict[str, str]:
    return {name: project_of_folder(path).id for name, path in layouts.items()}


# --- identity ---------------------------------------------------------------------------


def test_a_repository_is_one_project_however_it_is_checked_out(layouts):
    got = ids(layouts)
    # a worktree and a subfolder are the repository's project
    assert got["shop"] == got["shop-feature"] == got["shop/web/src"] == "github.com/acme/shop"
    # a submodule is its own repository (not the superproject), the same as its upstream checkout
    assert got["shop/vendor/lib"] == got["lib"] == "github.com/acme/lib"
    # the remote in an included config file counts
    assert got["inc"] == "github.com/acme/inc"
    # without a remote: named by the repository's shared git folder, so worktrees agree
    assert got["notes"] == got["notes-draft"]
    assert got["notes"].startswith("local:notes-")
    notes = project_of_folder(layouts["notes-draft"])
    assert (notes.name, notes.kind, notes.top) == ("notes", "repo", layouts["notes-draft"].resolve())


def test_unrelated_folders_with_one_name_are_two_projects(layouts, tmp_path):
    work, personal = project_of_folder(layouts["work/api"]), project_of_folder(layouts["personal/api"])
    assert work.id != personal.id
    assert work.name == personal.name == "api" and work.kind == personal.kind == "folder"
    assert work.id.startswith("local:api-") and personal.id.startswith("local:api-")
    # stable: asked again (or through a symlink to it) it is the same project
    (tmp_path / "link").symlink_to(layouts["work/api"])
    assert project_of_folder(tmp_path / "link").id == project_of_folder(layouts["work/api"]).id == work.id
    # two remote-less repositories called alike are two projects too
    a, b = new_repo(tmp_path / "x" / "site"), new_repo(tmp_path / "y" / "site")
    assert project_of_folder(a).id != project_of_folder(b).id
    # a folder that is not on this machine is named by its path
    assert project_of_folder(tmp_path / "gone" / "api").id not in {work.id, personal.id}


def test_without_git_the_files_give_the_same_projects(layouts, tmp_path, monkeypatch):
    with_git = ids(layouts)
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("git") is None
    assert ids(layouts) == with_git  # .git files of worktrees and submodules followed, include read


def test_a_git_that_does_not_answer_falls_back_to_the_files(layouts, tmp_path, monkeypatch):
    with_git = ids(layouts)
    stuck = tmp_path / "stuck-bin"
    stuck.mkdir()
    (stuck / "git").write_text("#!/bin/sh\nexec /bin/sleep 30\n")
    (stuck / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(stuck))
    assert project_of_folder(layouts["shop-feature"], timeout_s=0.3).id == with_git["shop-feature"]
    assert project_of_folder(layouts["notes-draft"], timeout_s=0.3).id == with_git["notes-draft"]


def test_a_clone_from_a_relative_path_is_its_upstream(tmp_path):
    new_repo(tmp_path / "up", "https://gitlab.example.com/team/up.git")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "up", "clone")
    git(clone, "remote", "set-url", "origin", "../up")
    assert project_of_folder(clone).id == "gitlab.example.com/team/up"


def test_start_dir_counts_only_inside_a_work_tree_other_than_home(layouts, tmp_path):
    assert project_of_start_dir(layouts["shop/web/src"]).id == "github.com/acme/shop"
    assert project_of_start_dir(layouts["notes-draft"]).id == project_of_folder(layouts["notes"]).id
    assert project_of_start_dir(layouts["work/api"]) is None  # a folder outside any work tree
    # a dotfiles repository in the home folder makes no folder under it a project
    home = new_repo(tmp_path / "home")
    (home / "Downloads").mkdir()
    assert project_of_start_dir(home / "Downloads", home=home) is None
    assert project_of_start_dir(layouts["shop"], home=home).id == "github.com/acme/shop"


def test_readable_names_and_scope():
    assert readable_name("github.com/acme/shop") == "shop"
    assert readable_name("local:my-api-0123456789ab") == "my-api"
    assert readable_name("blog") == "blog" and readable_name("") == ""
    s = make_scope("u", "local:api-0123456789ab", "roots")
    assert (s.project, s.project_name, s.projects_read, s.source) == (
        "local:api-0123456789ab", "api", ["local:api-0123456789ab", ""], "roots")
