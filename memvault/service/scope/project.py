"""Project identity and the scope of a call, independent of how the call arrived.

A project is one repository however it is checked out: a folder in a git work tree
belongs to the repository's remote (``host/owner/repo``); its worktrees and its
clones from a local path belong to the same project. A repository without a remote, and
a folder outside any repository, is named by where it is: ``local:<name>-<hash>``, the
hash of the resolved path of the repository's shared git folder (or of the folder), so
two unrelated folders called ``api`` are two projects. ``make_scope`` builds the Scope
every reply carries.

On hosts whose repository paths ignore case (``CASE_INSENSITIVE_HOSTS``: GitHub, GitLab,
Bitbucket), ``Platform/Billing`` and ``platform/billing`` are one repository, so the id
holds the path in lower case (``canonical_project``) however a remote, an argument or a
setting spells it; stores written before are brought to it by schema migration 8.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, urlparse

from memvault.service.scope.gitrepo import GIT_TIMEOUT_S, GitRepo, find_repo

if TYPE_CHECKING:  # pydantic models: imported by make_scope, so that client hooks resolve a project without pydantic
    from memvault.service.memory.models import Scope, ScopeSource

LOCAL_PREFIX = "local:"
HASH_CHARS = 12
_MAX_NAME_CHARS = 64
_MAX_LOCAL_HOPS = 3  # clone of a local clone of a local repository, ...
_SCP_REMOTE = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # scp-like: git@host:owner/repo
_NOT_NAME = re.compile(r"[^\w.-]+")
_LOCAL_ID = re.compile(rf"^{LOCAL_PREFIX}(.+)-[0-9a-f]{{{HASH_CHARS}}}$")

CASE_INSENSITIVE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org")
"""Hosts that resolve ``Owner/Repo`` whatever its case (schema migration 8 lists the same)."""


@dataclass(frozen=True)
class Project:
    """The project a folder belongs to.

    ``id``: what memories, documents and tasks are stored under
    (``github.com/acme/shop`` or ``local:shop-1a2b3c4d5e6f``). ``name``: the readable
    repository or folder name (``shop``). ``kind``: ``remote`` (named after the git
    remote), ``repo`` (a git repository without a remote) or ``folder`` (not in a work
    tree). ``top``: the work tree folder (``remote``/``repo``) or the folder itself.
    """

    id: str
    name: str
    kind: Literal["remote", "repo", "folder"]
    top: Path


def normalise_remote(url: str) -> str | None:
    """A git remote URL -> ``host/owner/repo`` (lowercase host, no scheme, user or ``.git``).

    ``git@gitlab.com:Org/Repo.git`` and ``https://gitlab.com/org/repo`` both give
    ``gitlab.com/org/repo`` (``canonical_project``: the path in lower case on
    ``CASE_INSENSITIVE_HOSTS``; kept as spelt elsewhere); None when the URL has no
    recognisable path.
    """
    url = url.strip()
    m = _SCP_REMOTE.match(url)
    if m:
        host, path = m.group(1), m.group(2)
    else:
        parsed = urlparse(url)
        host, path = (parsed.hostname or ""), parsed.path
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    if not path:
        return None
    return canonical_project(f"{host.lower()}/{path}") if host else path


def canonical_project(project_id: str) -> str:
    """The one spelling of a project id: lower case when it names a repository on a host of
    ``CASE_INSENSITIVE_HOSTS`` (``github.com/Acme/Shop`` -> ``github.com/acme/shop``, the
    host matched in any case); any other id as is."""
    host, sep, _ = project_id.partition("/")
    if sep and host.lower() in CASE_INSENSITIVE_HOSTS:
        return project_id.lower()
    return project_id


def local_id(name: str, where: Path) -> str:
    """``local:<name>-<12 hex>``: the id of a project without a remote, from its resolved path."""
    digest = hashlib.sha256(str(where).encode("utf-8", "surrogateescape")).hexdigest()[:HASH_CHARS]
    return f"{LOCAL_PREFIX}{_clean_name(name)}-{digest}"


def readable_name(project_id: str) -> str:
    """The readable name inside a project id: ``shop`` for ``github.com/acme/shop`` or
    ``local:shop-1a2b3c4d5e6f``; ``''`` for the global scope; a plain name as is."""
    if m := _LOCAL_ID.match(project_id):
        return m.group(1)
    return project_id.rstrip("/").rsplit("/", 1)[-1]


def folder_of_uri(uri: str) -> Path | None:
    """The local folder of a ``file://`` URI (an MCP root), or None for any other URI."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or not parsed.path:
        return None
    return Path(unquote(parsed.path))


def project_of_folder(folder: Path, *, timeout_s: float = GIT_TIMEOUT_S) -> Project:
    """The project ``folder`` belongs to: its repository's, else the folder's own.

    Runs git (each command bounded by ``timeout_s`` seconds; see ``gitrepo``). A folder
    that does not exist here is named by its path.
    """
    return _project(folder, timeout_s, 0)


SYSTEM_TREES = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc",
                "/sys", "/run", "/opt", "/snap", "/nix", "/System", "/Library", "/Applications", "/private/etc",
                "/private/var/db")
"""Folders whose whole tree is the system's or an application's, never a project a person works in."""
SYSTEM_FOLDERS = ("/tmp", "/var", "/var/tmp", "/srv", "/mnt", "/media", "/home", "/Users", "/root",
                  "/private", "/private/tmp", "/private/var", "/Volumes")
"""Folders that are no project themselves (their subfolders may be: ``/tmp/scratch`` is one)."""


def is_no_project_folder(folder: Path, *, home: Path | None = None) -> bool:
    """Whether a process started in ``folder`` (resolved) works in no project folder.

    True for the filesystem root, the home folder itself (``home``, default
    ``Path.home()``), the temporary folder itself, a hidden folder directly in home and
    its tree (``~/.config/...``, ``~/.local/...``: where applications keep themselves), a
    folder in ``SYSTEM_FOLDERS`` itself and any folder in a ``SYSTEM_TREES`` tree. A
    client starts its servers either in the folder a person works in or in one of these
    (``/``, home, the application's own folder).
    """
    import tempfile

    where = Path(os.path.abspath(folder))
    with contextlib.suppress(OSError):
        where = where.resolve()
    home = _resolved(home or Path.home())
    if where == Path(where.anchor) or where == home:
        return True
    if where == _resolved(Path(tempfile.gettempdir())):
        return True
    if where.is_relative_to(home):
        first = where.relative_to(home).parts[0]
        if first.startswith("."):
            return True
    for name in SYSTEM_FOLDERS:
        if where == Path(name) or where == _resolved(Path(name)):
            return True
    for name in SYSTEM_TREES:
        if where.is_relative_to(name) or where.is_relative_to(_resolved(Path(name))):
            return not where.is_relative_to(home)  # a home inside /Users or /var/... is the person's
    return False


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return Path(os.path.abspath(path))


def project_of_start_dir(folder: Path, *, home: Path | None = None,
                         timeout_s: float = GIT_TIMEOUT_S) -> Project | None:
    """The project a process started in ``folder`` works on, or None (the global scope).

    Inside a git work tree: the repository's project (kind ``remote`` or ``repo``), unless
    that work tree is ``/`` or the home folder (``home``, default ``Path.home()``; a
    dotfiles repository there says nothing about the project). Otherwise the folder's
    own project (kind ``folder``, ``local:<name>-<hash>``, the id MCP roots give it), unless
    ``is_no_project_folder`` (``/``, home itself, system and application folders): then
    None. Callers that let a configured project beat a plain folder check ``kind``.
    """
    home = _resolved(home or Path.home())
    repo = find_repo(folder, timeout_s=timeout_s)
    if repo is not None and repo.top != home and repo.top != Path(repo.top.anchor):
        return _from_repo(repo, timeout_s, 0)
    if is_no_project_folder(folder, home=home):
        return None
    where = _resolved(folder)
    name = where.name or "root"
    return Project(id=local_id(name, where), name=_clean_name(name), kind="folder", top=where)


def _project(folder: Path, timeout_s: float, hops: int) -> Project:
    repo = find_repo(folder, timeout_s=timeout_s)
    if repo is not None:
        return _from_repo(repo, timeout_s, hops)
    where = folder.resolve()
    name = where.name or "root"
    return Project(id=local_id(name, where), name=_clean_name(name), kind="folder", top=where)


def _from_repo(repo: GitRepo, timeout_s: float, hops: int) -> Project:
    url = repo.remote_url
    if url:
        upstream = _local_remote(url, repo.top)
        if upstream is not None and hops < _MAX_LOCAL_HOPS:
            # A clone of a repository on this machine (a submodule added from a path, a
            # scratch clone) is that repository: named the way the repository itself is.
            up = find_repo(upstream, timeout_s=timeout_s)
            if up is not None and up.common_dir != repo.common_dir:
                return replace(_from_repo(up, timeout_s, hops + 1), top=repo.top)
        remote_id = normalise_remote(str(upstream) if upstream is not None else url)
        if remote_id:
            return Project(id=remote_id, name=readable_name(remote_id), kind="remote", top=repo.top)
    common = repo.common_dir
    name = common.parent.name if common.name == ".git" else common.name.removesuffix(".git")
    return Project(id=local_id(name, common), name=_clean_name(name), kind="repo", top=repo.top)


def _local_remote(url: str, top: Path) -> Path | None:
    """The folder a remote URL names on this machine (a path or ``file://``), else None."""
    url = url.strip()
    if url.startswith("file://"):
        return Path(unquote(urlparse(url).path))
    if url.startswith(("/", "~")):
        return Path(url).expanduser()
    if url.startswith(("./", "../")):
        return (top / url).resolve()
    return None


def _clean_name(name: str) -> str:
    """A folder name fit for an id: runs of characters other than letters, digits, ``. _ -``
    become ``_``; at most 64 characters."""
    cleaned = _NOT_NAME.sub("_", name).strip("_")[:_MAX_NAME_CHARS]
    return cleaned or "folder"


def make_scope(user_id: str, project: str, source: ScopeSource, *, include_global: bool = True,
               agent: str | None = None) -> Scope:
    """The Scope of a call: writes go to ``project`` (its ``canonical_project`` spelling); reads
    cover it plus global unless excluded.
    ``agent``: the agent the call acts for (None: the user, who reads every memory)."""
    from memvault.service.memory.models import Scope
    project = canonical_project(project)
    reads = [project] if project == "" or not include_global else [project, ""]
    return Scope(user_id=user_id, project=project, project_name=readable_name(project), projects_read=reads,
                 source=source, agent=agent)
