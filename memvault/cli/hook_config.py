"""The few settings the hooks read, without pydantic: ``HookSettings``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memvault import defaults


class HookSettings:
    """The few settings the hooks read, as ``memvault.config`` reads them (same variables,
    same defaults, flags first), without importing pydantic (~0.3 s, most of a hook's budget).

    ``data_dir``: ``--data-dir`` / ``MEMVAULT_DATA_DIR`` / the platform's data folder;
    ``user_id``: ``--user`` / ``MEMVAULT_USER_ID`` / ``local``; ``project``: ``--project`` /
    ``MEMVAULT_PROJECT`` / None. The defaults are those of ``memvault.defaults``, which
    ``memvault.config`` reads too. (A plain class: ``dataclasses`` imports ``inspect``, tens of
    milliseconds of a hook's start.)
    """

    def __init__(self, *, data_dir: Path, user_id: str, project: str | None) -> None:
        self.data_dir = data_dir
        self.user_id = user_id
        self.project = project

    @property
    def db_path(self) -> Path:
        """The SQLite file (as ``Settings.db_path``)."""
        return self.data_dir / defaults.DB_FILE

    @classmethod
    def read(cls, args: argparse.Namespace, environ: dict[str, str] | None = None) -> HookSettings:
        """From the command's flags and the environment (variable names are case-insensitive, as for pydantic-settings)."""
        env = defaults.memvault_environ(dict(os.environ) if environ is None else environ)
        data_dir = getattr(args, "data_dir", None) or env.get("MEMVAULT_DATA_DIR")
        user = getattr(args, "user", None) or env.get("MEMVAULT_USER_ID") or defaults.USER_ID
        project = getattr(args, "project", None)
        if project is None:
            project = env.get("MEMVAULT_PROJECT")
        return cls(data_dir=Path(data_dir).expanduser() if data_dir else defaults.data_dir(), user_id=user,
                   project=project or None)
