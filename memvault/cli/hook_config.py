"""The few settings the hooks read, without pydantic: ``HookSettings``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

_DEFAULT_USER = "local"
_DEFAULT_HALF_LIFE_DAYS = 30.0


class HookSettings:
    """The few settings the hooks read, as ``memvault.config`` reads them (same variables,
    same defaults, flags first), without importing pydantic (~0.3 s, most of a hook's budget).

    ``data_dir``: ``--data-dir`` / ``MEMVAULT_DATA_DIR`` / the platform's data folder;
    ``user_id``: ``--user`` / ``MEMVAULT_USER_ID`` / ``local``; ``project``: ``--project`` /
    ``MEMVAULT_PROJECT`` / None; ``clock_offset_s`` and ``half_life_days`` from their
    variables. Raises ValueError for a value that is not a number where one is needed.
    (A plain class: ``dataclasses`` imports ``inspect``, tens of milliseconds of a hook's start.)
    """

    def __init__(self, *, data_dir: Path, user_id: str, project: str | None, clock_offset_s: float,
                 half_life_days: float) -> None:
        self.data_dir = data_dir
        self.user_id = user_id
        self.project = project
        self.clock_offset_s = clock_offset_s
        self.half_life_days = half_life_days

    @property
    def db_path(self) -> Path:
        """The SQLite file (as ``Settings.db_path``)."""
        return self.data_dir / "memvault.db"

    @classmethod
    def read(cls, args: argparse.Namespace, environ: dict[str, str] | None = None) -> HookSettings:
        """From the command's flags and the environment (variable names are case-insensitive, as for pydantic-settings)."""
        env = {k.upper(): v for k, v in (os.environ if environ is None else environ).items()
               if k.upper().startswith("MEMVAULT_")}
        data_dir = getattr(args, "data_dir", None) or env.get("MEMVAULT_DATA_DIR")
        if not data_dir:
            import platformdirs

            data_dir = platformdirs.user_data_dir("memvault", appauthor=False)
        user = getattr(args, "user", None) or env.get("MEMVAULT_USER_ID") or _DEFAULT_USER
        project = getattr(args, "project", None)
        if project is None:
            project = env.get("MEMVAULT_PROJECT")
        half_life = float(env.get("MEMVAULT_HALF_LIFE_DAYS") or _DEFAULT_HALF_LIFE_DAYS)
        return cls(data_dir=Path(data_dir).expanduser(), user_id=user, project=project or None,
                   clock_offset_s=float(env.get("MEMVAULT_CLOCK_OFFSET_S") or 0.0), half_life_days=half_life)
