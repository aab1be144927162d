"""Where a call's project comes from: project identity and the MCP scope resolution.

Identity tests build real repositories with git in ``tmp_path`` (worktrees, a submodule,
a remote in an included config file) and ask ``project_of_folder`` about them, with git
and, by emptying ``PATH``, without it. MCP tests talk to an in-process server through
the SDK's client (real model, SQLite file and Qdrant Edge): roots that change, roots
per connection, the start folder of a server whose client offers no roots.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ListRootsResult, Root

from memvault.config import Settings
from memvault.mcp.app import build_server
from memvault.service.scope.gitrepo import read_repo_files
from memvault.service.scope.project import (
    make_scope,
    normalise_remote,
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


@pytest.mark.parametrize("host", ["github.com", "gitlab.com", "bitbucket.org"])
def test_one_repository_spelt_two_ways_on_a_case_insensitive_host_is_one_project(tmp_path, host):
    """Clones of ``git@host:Platform/Billing.git`` and ``https://host/platform/billing`` (and the
    host itself in capitals) are one project, read with git and from the files."""
    spellings = [f"git@{host}:Platform/Billing.git", f"https://{host}/platform/billing",
                 f"ssh://git@{host.upper()}/PLATFORM/Billing.git", f"https://user@{host}/Platform/BILLING/"]
    folders = [new_repo(tmp_path / f"clone{n}", url) for n, url in enumerate(spellings)]
    want = f"{host}/platform/billing"
    assert [project_of_folder(f).id for f in folders] == [want] * len(spellings)
    assert {read_repo_files(f) is not None and normalise_remote(read_repo_files(f).remote_url or "")
            for f in folders} == {want}
    assert make_scope("u", f"{host}/Platform/Billing", "argument").project == want  # an argument or a setting
    assert project_of_folder(folders[0]).name == "billing"


def test_other_hosts_keep_the_case_of_their_paths():
    """A self-hosted server may tell ``Team/App`` from ``team/app``: their ids stay apart."""
    assert normalise_remote("git@git.example.com:Team/App.git") == "git.example.com/Team/App"
    assert normalise_remote("https://git.example.com/team/app") == "git.example.com/team/app"
    assert normalise_remote("https://GitHub.example.com/Team/App") == "github.example.com/Team/App"
    assert make_scope("u", "blog/Drafts", "argument").project == "blog/Drafts"
    assert make_scope("u", "local:Api-0123456789ab", "cwd").project == "local:Api-0123456789ab"


def test_start_dir_is_the_repository_else_the_folder_itself(layouts, tmp_path):
    assert project_of_start_dir(layouts["shop/web/src"]).id == "github.com/acme/shop"
    assert project_of_start_dir(layouts["notes-draft"]).id == project_of_folder(layouts["notes"]).id
    # a folder outside any work tree is its own project, named as a root naming it would be
    plain = project_of_start_dir(layouts["work/api"])
    assert plain is not None and plain.kind == "folder"
    assert plain.id == project_of_folder(layouts["work/api"]).id and plain.id.startswith("local:api-")
    assert project_of_start_dir(layouts["personal/api"]).id != plain.id
    # a dotfiles repository in the home folder names no folder under it: each is its own
    home = new_repo(tmp_path / "home")
    (home / "work" / "alpha").mkdir(parents=True)
    (home / "work" / "beta").mkdir(parents=True)
    alpha = project_of_start_dir(home / "work" / "alpha", home=home)
    beta = project_of_start_dir(home / "work" / "beta", home=home)
    assert alpha is not None and beta is not None and alpha.kind == beta.kind == "folder"
    assert (alpha.name, beta.name) == ("alpha", "beta") and alpha.id != beta.id
    assert project_of_start_dir(layouts["shop"], home=home).id == "github.com/acme/shop"


@pytest.mark.parametrize("where", ["home", "home/.config/Claude", "home/.local/share/app", "/", "/etc", "/usr",
                                   "/usr/lib", "/usr/share/code", "/opt", "/var", "/tmp", "tempdir"])
def test_start_dir_in_home_the_root_or_a_system_folder_is_no_project(tmp_path, where):
    import tempfile

    home = tmp_path / "home"
    (home / ".config" / "Claude").mkdir(parents=True)
    (home / ".local" / "share" / "app").mkdir(parents=True)
    folder = {"tempdir": Path(tempfile.gettempdir())}.get(where) or \
        (tmp_path / where if where.startswith("home") else Path(where))
    assert project_of_start_dir(folder, home=home) is None


def test_a_subfolder_of_tmp_is_a_project_but_tmp_itself_is_not(tmp_path):
    # pytest's tmp_path lies under the temporary folder: a scratch folder there is a project
    assert project_of_start_dir(tmp_path, home=tmp_path / "elsewhere").kind == "folder"
    assert project_of_start_dir(Path("/tmp"), home=tmp_path) is None


def test_readable_names_and_scope():
    assert readable_name("github.com/acme/shop") == "shop"
    assert readable_name("local:my-api-0123456789ab") == "my-api"
    assert readable_name("blog") == "blog" and readable_name("") == ""
    scope = make_scope("u", "local:api-0123456789ab", "cwd")
    assert (scope.project, scope.project_name, scope.projects_read, scope.source) == (
        "local:api-0123456789ab", "api", ["local:api-0123456789ab", ""], "cwd")


# --- MCP: where a call's project comes from ------------------------------------------------


@pytest.fixture(scope="session")
def embedder(shared_embedder: Any) -> Any:
    """The real model: the session's (``shared_embedder``), not a second conversion and load."""
    return shared_embedder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class MovableRoots:
    """A client's roots that the test moves; counts how often the server asked for them."""

    def __init__(self, *folders: Path) -> None:
        self.folders = list(folders)
        self.asked = 0

    async def __call__(self, _ctx: Any) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=f.as_uri()) for f in self.folders])


def make_server(data_dir: Path, embedder: Any, cwd: Path, **settings: Any):
    s = Settings(data_dir=data_dir, model_cache_dir=data_dir / "models", **{"project": None, **settings})
    return build_server(s, load_embedder=lambda _s: embedder, cwd=cwd)


@asynccontextmanager
async def connect(server: Any, roots: MovableRoots | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 180}
    if roots is not None:
        kwargs["list_roots_callback"] = roots
    async with Client(server, **kwargs) as client:
        yield client


async def remember(client: Client, content: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool("remember", {"content": content, "kind": "fact", "force": True, **args})
    assert not res.is_error, res.content
    assert res.structured_content is not None
    return res.structured_content


def stored_projects(data_dir: Path) -> dict[str, str]:
    """content -> project of every stored memory, read from the SQLite file."""
    con = sqlite3.connect(data_dir / "memvault.db")
    try:
        return dict(con.execute("SELECT content, project FROM memories"))
    finally:
        con.close()


@pytest.mark.anyio
@pytest.mark.slow
async def test_writes_follow_the_roots_after_they_change(tmp_path, embedder, layouts):
    d = tmp_path / "d"
    roots = MovableRoots(layouts["shop"])
    async with connect(make_server(d, embedder, cwd=tmp_path), roots) as c:
        first = await remember(c, "The checkout page uses Stripe Elements")
        again = await remember(c, "The cart is stored in localStorage")
        assert first["scope"]["project"] == again["scope"]["project"] == "github.com/acme/shop"
        assert first["scope"]["source"] == "roots" and roots.asked == 1  # read once for the connection
        roots.folders = [layouts["work/api"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await c.send_roots_list_changed()
        moved = await remember(c, "The API serves JSON over HTTP/2")
        api = project_of_folder(layouts["work/api"]).id
        assert moved["scope"]["project"] == api and moved["scope"]["source"] == "roots" and roots.asked == 2
        assert (first["scope"]["project_name"], moved["scope"]["project_name"]) == ("shop", "api")
    assert stored_projects(d) == {
        "The checkout page uses Stripe Elements": "github.com/acme/shop",
        "The cart is stored in localStorage": "github.com/acme/shop",
        "The API serves JSON over HTTP/2": api,
    }


@pytest.mark.anyio
@pytest.mark.slow
async def test_roots_are_read_per_connection_and_every_call_on_2026_connections(tmp_path, embedder, layouts):
    d = tmp_path / "d"
    server = make_server(d, embedder, cwd=tmp_path)
    async with connect(server, MovableRoots(layouts["shop"])) as c:
        assert (await remember(c, "Shop fact one"))["scope"]["project"] == "github.com/acme/shop"
    # the next client of the same server has its own roots
    async with connect(server, MovableRoots(layouts["lib"])) as c:
        assert (await remember(c, "Lib fact one"))["scope"]["project"] == "github.com/acme/lib"
    # 2026-07-28: every request stands alone, so the roots are asked on every call
    roots = MovableRoots(layouts["inc"])
    async with connect(server, roots, mode="auto") as c:
        assert c.protocol_version == "2026-07-28"
        assert (await remember(c, "Inc fact one"))["scope"]["project"] == "github.com/acme/inc"
        roots.folders = [layouts["notes-draft"]]
        moved = await remember(c, "Notes fact one")
        assert moved["scope"]["project"] == project_of_folder(layouts["notes"]).id
        assert moved["scope"]["project_name"] == "notes" and roots.asked == 2


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_worktree_and_the_main_checkout_share_memories(tmp_path, embedder, layouts):
    server = make_server(tmp_path / "d", embedder, cwd=tmp_path)
    async with connect(server, MovableRoots(layouts["shop-feature"])) as c:
        fact = await remember(c, "Shop releases are tagged vYYYY.MM")
    async with connect(server, MovableRoots(layouts["shop"])) as c:
        got = (await c.call_tool("recall", {"query": "how are shop releases tagged?"})).structured_content
        assert got["scope"]["project"] == "github.com/acme/shop"
        assert [m["id"] for m in got["memories"]] == [fact["id"]]


@pytest.mark.anyio
@pytest.mark.slow
async def test_unrelated_folders_with_one_name_do_not_share_memories(tmp_path, embedder, layouts):
    server = make_server(tmp_path / "d", embedder, cwd=tmp_path)
    async with connect(server, MovableRoots(layouts["work/api"])) as c:
        work = await remember(c, "The work API deploys to the eu-west cluster")
    async with connect(server, MovableRoots(layouts["personal/api"])) as c:
        got = (await c.call_tool("recall", {"query": "where does the API deploy?"})).structured_content
        assert got["memories"] == []
        assert got["scope"]["project"] != work["scope"]["project"]
        assert got["scope"]["project_name"] == work["scope"]["project_name"] == "api"


@pytest.mark.anyio
@pytest.mark.slow
async def test_without_roots_the_server_folder_then_settings_then_global(tmp_path, embedder, layouts):
    # started inside a work tree (a subfolder of it): that repository's project
    async with connect(make_server(tmp_path / "d1", embedder, cwd=layouts["shop/web/src"], project="other")) as c:
        r = await remember(c, "Started in the shop repository")
        assert (r["scope"]["project"], r["scope"]["source"]) == ("github.com/acme/shop", "cwd")
    # roots win over the start folder
    server = make_server(tmp_path / "d2", embedder, cwd=layouts["shop"])
    async with connect(server, MovableRoots(layouts["lib"])) as c:
        r = await remember(c, "Roots beat the start folder")
        assert (r["scope"]["project"], r["scope"]["source"]) == ("github.com/acme/lib", "roots")
    # a folder outside any work tree: the setting beats it, else the folder itself
    async with connect(make_server(tmp_path / "d3", embedder, cwd=layouts["work/api"], project="other")) as c:
        r = await remember(c, "Started outside any repository")
        assert (r["scope"]["project"], r["scope"]["source"]) == ("other", "settings")
    async with connect(make_server(tmp_path / "d4", embedder, cwd=layouts["work/api"])) as c:
        r = await remember(c, "Started outside any repository, no setting")
        assert (r["scope"]["project"], r["scope"]["source"], r["scope"]["project_name"]) == (
            project_of_folder(layouts["work/api"]).id, "cwd", "api")
    # started in / (where some clients start their servers): global
    async with connect(make_server(tmp_path / "d5", embedder, cwd=Path("/"))) as c:
        r = await remember(c, "Started in the filesystem root")
        assert (r["scope"]["project"], r["scope"]["source"], r["scope"]["project_name"]) == ("", "global", "")


@pytest.mark.anyio
@pytest.mark.slow
async def test_two_plain_folders_without_roots_do_not_answer_with_each_other(tmp_path, embedder):
    alpha, beta = tmp_path / "work" / "alpha", tmp_path / "work" / "beta"
    alpha.mkdir(parents=True)
    beta.mkdir(parents=True)
    d = tmp_path / "d"
    async with connect(make_server(d, embedder, cwd=alpha)) as c:
        await remember(c, "This project uses the Flask web framework")
    async with connect(make_server(d, embedder, cwd=beta)) as c:
        await remember(c, "This project uses the Django web framework")
        got = (await c.call_tool("recall", {"query": "which web framework does this project use?"})).structured_content
        assert got["scope"]["project_name"] == "beta"
        assert [m["content"] for m in got["memories"]] == ["This project uses the Django web framework"]
