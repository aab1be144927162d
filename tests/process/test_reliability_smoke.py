"""Smoke test of ``bench.reliability``: a quick crash run and a slice of the hostile sweep, end to end.

The full runs (20 kill cycles, every isolation probe, the whole hostile sweep) are not
part of the suite: docs/reliability.md has their commands and figures. Here the
programs themselves run as a person runs them (``python -m bench.reliability ...``) on
real ``memvault serve`` processes, and what is checked is their own JSON: no
acknowledged write lost, the store intact and its index whole after each kill, the
server answering after a restart and after every hostile input, nothing half-written.
Faults the hostile slice may find (an error without a reason) are reported by the
program, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def reliability(name: str, out: Path, model_cache: Path, *flags: str) -> dict:
    """Run ``python -m bench.reliability <name> --quick ...``; its one JSON result."""
    proc = subprocess.run([sys.executable, "-m", "bench.reliability", name, "--quick", "--no-fail",
                           "--model-cache", str(model_cache), "--out", str(out), *flags],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob(f"reliability-{name}-*.json")
    return json.loads(path.read_text())


def test_quick_crash_and_hostile_runs_lose_nothing_and_keep_the_server_alive(shared_embedder, model_cache, tmp_path):
    crash = reliability("crash", tmp_path / "crash", model_cache, "--cycles", "2")
    total = crash["summary"]["all"]
    assert total["cycles"] == 2 and total["writes_acknowledged"] > 0, total
    assert total["writes_lost"] == 0 and total["not_found_by_recall"] == 0, crash["cycles"]
    assert total["integrity_failures"] == 0 and total["index_mismatches"] == 0, crash["cycles"]
    assert total["no_answer_after_restart"] == 0, crash["cycles"]
    assert crash["ok"] is True

    # string and number arguments of remember and recall (a lone surrogate among them)
    hostile = reliability("hostile", tmp_path / "hostile", model_cache, "--hostile-match",
                          r"^(remember|recall) / (content|query|importance|k): ", "--hostile-limit", "8",
                          "--timeout", "5")
    s = hostile["summary"]
    assert s["cases"] == 8, s
    assert s["deaths"] == 0, hostile["deaths"]
    assert s["partial_writes"] == 0, hostile["partial_writes"]
    assert s["integrity"] == "ok" and s["index_mismatches"] == 0, s
    assert all(c["alive"] for c in hostile["cases"]), hostile["cases"]
