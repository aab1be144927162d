"""The hand-written developer-memory sets stay well formed: unique ids, gold ids that exist,
language labels that match the text, and every size the sets were written to
(``tests/data/devmemory/check_set.py``, standard library only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SETS = Path(__file__).parents[1] / "data" / "devmemory"


@pytest.mark.parametrize("name", ["dev", "guard", "holdout"])
def test_the_set_meets_every_requirement(name: str) -> None:
    done = subprocess.run([sys.executable, str(SETS / "check_set.py"), str(SETS / f"{name}.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all requirements met" in done.stdout
