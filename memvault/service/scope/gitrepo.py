"""What git says about a folder: which repository holds it, its work tree and its remote.

Git itself is asked (``git rev-parse`` and ``git config``, with a short timeout), so
worktrees, submodules, ``include``d config files and every other layout git knows are
read as git reads them. Only when git is not installed, does not answer in time, or
refuses the folder (e.g. another user's repository) are the files read directly: a
``.git`` folder, or a ``.git`` file (``gitdir: ...``, as in worktrees and submodules) with
its ``commondir``; ``include.path`` is followed, ``includeIf`` is not.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_GITDIR = re.compile(r"gitdir:\s*(\S.*)")  # a .git file of a worktree or submodule
_SECTION = re.compile(r'^\[\s*([\w.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')  # [section "sub"] rest
_ESCAPE = re.compile(r"\\(.)")  # a backslash escape inside a quoted subsection name

GIT_TIMEOUT_S = 2.0
"""Longest wait for one git command, seconds; past it the files are read directly."""

# Variables that would point git at another repository than the folder asked about.
_REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
             "GIT_NAMESPACE", "GIT_PREFIX")
_MAX_INCLUDE_DEPTH = 10


@dataclass(frozen=True)
class GitRepo:
    """The repository holding a folder.

    ``common_dir``: the repository's shared git folder (resolved), the same for every
    worktree of it (``/src/shop/.git`` for ``/src/shop`` and its worktrees; a submodule
    has its own). ``top``: the work tree folder holding the asked folder (resolved).
    ``remote_url``: the ``origin`` remote's URL, else the first remote's, as configured;
    None without remotes.
    """

    common_dir: Path
    top: Path
    remote_url: str | None


def find_repo(folder: Path, *, timeout_s: float = GIT_TIMEOUT_S) -> GitRepo | None:
    """The git repository whose work tree holds ``folder``, or None (not in a work tree).

    Asks the ``git`` found on ``PATH``; reads the files (``read_repo_files``) when there
    is none or it fails other than by saying the folder is not in a repository. Never
    raises for an unreadable folder: it is then not in a repository.
    """
    if not folder.is_dir():
        return None
    git = shutil.which("git")
    if git is None:
        return read_repo_files(folder)
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([git, "-C", str(folder), *args], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)

    try:
        where = run("rev-parse", "--git-common-dir", "--show-toplevel")
        if where.returncode != 0:
            if "not a git repository" in where.stderr:
                return None
            log.info("git rev-parse failed in %s (%s); reading its files", folder, where.stderr.strip()[:200])
            return read_repo_files(folder)
        lines = where.stdout.splitlines()
        if len(lines) != 2:
            return read_repo_files(folder)
        common_dir = (folder / lines[0]).resolve()
        top = Path(lines[1]).resolve()
        urls = run("config", "-z", "--get-regexp", r"^remote\..+\.url$")
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git did not answer for %s (%s); reading its files", folder, exc)
        return read_repo_files(folder)
    # exit 1 = no remote configured; anything else: read the config file ourselves
    if urls.returncode not in (0, 1):
        return GitRepo(common_dir, top, _remote_from_config(common_dir / "config"))
    return GitRepo(common_dir, top, _pick_remote(_git_z_pairs(urls.stdout)))


def read_repo_files(folder: Path) -> GitRepo | None:
    """``find_repo`` without git: walk up from ``folder`` to the first ``.git`` folder or file.

    A ``.git`` file (``gitdir: <path>``) is followed to the worktree's or submodule's git
    folder, and its ``commondir`` to the shared one. None when no ``.git`` is found or
    it points nowhere.
    """
    try:
        start = folder.resolve()
    except OSError:
        return None
    for d in [start, *start.parents]:
        dot = d / ".git"
        try:
            if dot.is_dir():
                git_dir = dot
            elif dot.is_file():
                m = _GITDIR.match(dot.read_text(encoding="utf-8", errors="replace").strip())
                if not m:
                    return None
                git_dir = (d / m.group(1).strip()).resolve()
                if not git_dir.is_dir():
                    return None
            else:
                continue
            common_dir = git_dir
            commondir_file = git_dir / "commondir"
            if commondir_file.is_file():
                common_dir = git_dir / commondir_file.read_text(encoding="utf-8", errors="replace").strip()
            common_dir = common_dir.resolve()
        except OSError:
            return None
        return GitRepo(common_dir, d, _remote_from_config(common_dir / "config"))
    return None


def _git_z_pairs(out: str) -> list[tuple[str, str]]:
    """``git config -z --get-regexp`` output -> [(key, value)] in config order."""
    pairs = []
    for item in out.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            pairs.append((key, value))
    return pairs


def _pick_remote(pairs: list[tuple[str, str]]) -> str | None:
    """From ``(remote.<name>.url, url)`` pairs: origin's first URL, else the first remote's."""
    urls: dict[str, str] = {}
    for key, value in pairs:
        if key.startswith("remote.") and key.endswith(".url") and value.strip():
            urls.setdefault(key[len("remote."):-len(".url")], value.strip())
    if "origin" in urls:
        return urls["origin"]
    return next(iter(urls.values()), None)


def _remote_from_config(config: Path) -> str | None:
    """Origin's (else the first remote's) URL in a git config file and the files it includes."""
    try:
        return _pick_remote(list(_config_entries(config, 0)))
    except OSError:
        return None


def _config_entries(path: Path, depth: int):
    """``(section.subsection.key, value)`` of a git config file, includes spliced in place.

    Enough of git's syntax for remotes: ``[remote "origin"]`` and ``[remote.origin]``
    headers, ``key = value`` with quotes and ``#``/``;`` comments, ``include.path``.
    """
    section = ""
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = _SECTION.match(line)
        if header:
            name, sub = header.group(1), header.group(2)
            if sub is not None:
                section = name.lower() + "." + _ESCAPE.sub(r"\1", sub)
            else:  # [remote.origin]: the old syntax, subsection lower-cased by git
                section = name.lower()
            line = header.group(3).strip()
            if not line or line[0] in "#;":
                continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        value = _config_value(value) if eq else "true"
        if section == "include" and key == "path" and depth < _MAX_INCLUDE_DEPTH:
            target = Path(value).expanduser()
            target = target if target.is_absolute() else path.parent / target
            if target.is_file():
                yield from _config_entries(target, depth + 1)
            continue
        yield f"{section}.{key}", value


def _config_value(text: str) -> str:
    """A git config value: quotes removed, ``\\"`` and ``\\\\`` unescaped, trailing comment cut."""
    out, quoted, i = [], False, 0
    text = text.strip()
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()
