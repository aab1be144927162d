"""The data dir made ready before anything opens in it: a folder, mode 0700, writable.

Run at start-up by ``Runtime.open`` and, before it starts an owner process, by the
forwarder (``memvault serve``), so that a data dir that is a file or read-only is
reported to the client in one sentence instead of failing somewhere later.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from memvault.service.errors import StoreUnavailable
from memvault.service.failures import open_failure


def prepare_data_dir(data_dir: Path, db: Path) -> None:
    """Create ``data_dir`` if needed (parents too), make it 0700, and check that a file can be written there.

    ``db``: the SQLite file inside it (named in messages). Raises StoreUnavailable whose
    message says what is wrong and what to do (the OSError is its cause).
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dir.chmod(0o700)
        with tempfile.TemporaryFile(dir=data_dir, prefix=".memvault-write-check-"):
            pass
    except OSError as exc:
        raise StoreUnavailable(open_failure(exc, data_dir, db)) from exc
