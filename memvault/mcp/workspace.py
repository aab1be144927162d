"""The folder a server (or a forwarded client's ``memvault serve``) was started in, and its project."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio

from memvault.service.scope.project import Project, project_of_start_dir

log = logging.getLogger(__name__)


class Workspace:
    """The folder a server was started in and the project it is in (asked once, lazily).

    ``start_dir``: default the process's working directory when the server was built.
    """

    def __init__(self, start_dir: Path | None = None) -> None:
        self.start_dir = Path(start_dir) if start_dir is not None else Path(os.getcwd())
        self._known = False
        self._project: Project | None = None

    async def start_project(self) -> Project | None:
        """The project of ``start_dir`` (``project_of_start_dir``: its repository, else the folder
        itself, kind ``folder``), or None when it is ``/``, home or a system folder."""
        if not self._known:
            self._project = await anyio.to_thread.run_sync(project_of_start_dir, self.start_dir)
            self._known = True
            if self._project is not None:
                log.info("started in %s: project %s", self.start_dir, self._project.id)
        return self._project
