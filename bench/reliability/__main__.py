"""``python -m bench.reliability crash|isolation|hostile|erasure|all [--quick]``: run, print, write JSON.

Each run gets a fresh temporary folder (data dir, git repositories, documents), removed
at the end unless ``--keep``. ``--quick`` makes every run small (a smoke test of a minute
or two). The exit status is 0 when every run met its own bar (``ok`` in its JSON:
nothing lost, no leak, the server alive after every hostile input, no trace left), 1
otherwise; ``--no-fail`` always exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, RESULTS, write_result

RUNS = ("crash", "isolation", "hostile", "erasure")


def parser() -> argparse.ArgumentParser:
    """The command line: a run name, the shared flags, and each run's own flags."""
    p = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__.splitlines()[0])
    p.add_argument("name", choices=[*RUNS, "all"])
    p.add_argument("--quick", action="store_true", help="small runs (~1-2 min each), for a smoke test")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--out", type=Path, default=RESULTS, help="folder of the JSON results (default bench/results)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    p.add_argument("--no-fail", action="store_true", help="exit 0 even when a run finds a problem")
    for name in RUNS:
        importlib.import_module(f"bench.reliability.{name}").add_args(p.add_argument_group(name))
    return p


async def run_one(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run in its own temporary folder; prints its table, writes its JSON; returns the payload."""
    mod = importlib.import_module(f"bench.reliability.{name}")
    mod.defaults(args)
    tmp = Path(tempfile.mkdtemp(prefix=f"memvault-rel-{name}-"))
    t0 = time.perf_counter()
    try:
        payload = await mod.run(args, tmp)
    finally:
        if args.keep:
            print(f"# {name}: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    payload = {"quick": args.quick, "seconds": round(time.perf_counter() - t0, 1), **payload}
    path = write_result(f"reliability-{name}", payload, args.out)
    print(f"\n## {name}{' (quick)' if args.quick else ''}: {'ok' if payload['ok'] else 'PROBLEMS FOUND'}, "
          f"{payload['seconds']} s\n")
    print(payload["table"])
    for line in payload.get("notes", []):
        print(line)
    print(f"\nJSON: {path}", flush=True)
    return payload


def main(argv: list[str] | None = None) -> None:
    """Run the named run (or all four in turn); exit 1 when one found a problem (unless --no-fail)."""
    args = parser().parse_args(argv)
    names = RUNS if args.name == "all" else (args.name,)
    ok = True
    for name in names:
        ok &= bool(anyio.run(run_one, name, args)["ok"])
    sys.exit(0 if ok or args.no_fail else 1)


if __name__ == "__main__":
    main()
