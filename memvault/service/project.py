"""Project identity and the scope of a call, independent of how the call arrived.

A project is named after the git remote of the folder it lives in (``host/owner/repo``),
else after the folder. ``make_scope`` builds the Scope every reply carries.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from memvault.service.models import Scope


def normalise_remote(url: str) -> str | None:
    """A git remote URL -> ``host/owner/repo`` (lowercase host, no scheme, user or ``.git``).

    ``git@github.com:Org/Repo.git`` and ``https://github.com/Org/Repo`` both give
    ``github.com/Org/Repo``; None when the URL has no recognisable path.
    """
    url = url.strip()
    m = re.match(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$", url)  # scp-like: git@host:owner/repo
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
    return f"{host.lower()}/{path}" if host else path


def git_remote(folder: Path) -> str | None:
    """The normalised ``origin`` (else first) remote of the git work tree holding ``folder``."""
    for d in [folder, *folder.parents]:
        cfg = d / ".git" / "config"
        if cfg.is_file():
            parser = configparser.ConfigParser(strict=False)
            try:
                parser.read(cfg, encoding="utf-8")
            except (configparser.Error, OSError):
                return None
            sections = [s for s in parser.sections() if s.startswith("remote ")]
            sections.sort(key=lambda s: s != 'remote "origin"')
            for s in sections:
                url = parser.get(s, "url", fallback=None)
                if url and (name := normalise_remote(url)):
                    return name
            return None
    return None


def project_from_root(uri: str) -> str | None:
    """Project name for one MCP root URI (``file:///home/me/src/app``), or None if not a file root."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    folder = Path(unquote(parsed.path))
    return git_remote(folder) or folder.name or None


def make_scope(user_id: str, project: str, source: str, *, include_global: bool = True) -> Scope:
    """The Scope of a call: writes go to ``project``; reads cover it plus global unless excluded."""
    reads = [project] if project == "" or not include_global else [project, ""]
    return Scope(user_id=user_id, project=project, projects_read=reads, source=source)
