"""``python -m bench.ui``: how fast ``memvault ui``'s page paints over a store of N memories.

For each size: fill a store with N synthetic memories (``bench.speed``'s fill:
``bench.mv.bulk_load``, rows and points as ``remember`` writes them; ``--fill-cache`` reuses one), start its owner (``memvault serve --owner``), ask
``memvault ui --no-browser`` for the address, and load each view in headless Chromium
(Debian's ``/usr/bin/chromium`` through Playwright) ``--repeat`` times: the first page
of the list, its last page (the deepest OFFSET), a search (recall's ranking with the
why-columns) and the health view (which checks the index against SQLite). Reported per
view: median first contentful paint (the browser's ``paint`` timing, from navigation
start) and the median server time (request start to response end), in milliseconds.
Every non-loopback request is blocked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import DEFAULT_MODEL_CACHE, RESULTS, environment, md_table
from bench.synth import sentences

CHROMIUM = "/usr/bin/chromium"
MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def _env(data_dir: Path, model_cache: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(data_dir), "MEMVAULT_MODEL_CACHE_DIR": str(model_cache),
                "MEMVAULT_USER_ID": "bench", "MEMVAULT_OWNER_IDLE_S": "600", "ORT_DISABLE_TELEMETRY": "1",
                "HF_HUB_OFFLINE": "1"})
    return env


async def _fill(data_dir: Path, model_cache: Path, n: int, cache: Path | None) -> dict[str, Any]:
    """The speed bench's fill (and its ``--fill-cache``: a store filled once is copied)."""
    from bench.speed import filled_store, memvault_system

    return await filled_store(memvault_system(model_cache, progress=False), sentences(n, seed=0), 0, data_dir, cache)


async def _views(url: str, repeat: int) -> dict[str, dict[str, float]]:
    from playwright.async_api import Route, async_playwright
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    async def only_loopback(route: Route) -> None:
        if route.request.url.startswith("http://127.0.0.1:"):
            await route.continue_()
        else:
            await route.abort()

    out: dict[str, dict[str, float]] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            # bypass_csp: the page forbids every script, the measuring one of Playwright's too
            context = await browser.new_context(bypass_csp=True)
            await context.route("**/*", only_loopback)
            page = await context.new_page()
            await page.goto(url)  # warm: the owner's first request, the browser's cache of the stylesheet
            last = (await page.locator("nav.pager a").last.get_attribute("href")) or "/"
            origin = url.split("/", 3)
            views = {"list, page 1": url, "list, last page": f"{origin[0]}//{origin[2]}{last}",
                     "search (why-columns)": f"{url}?q=which+database+does+the+billing+service+use",
                     "health": f"{url}health"}
            for name, target in views.items():
                fcp, server = [], []
                for _ in range(repeat):
                    await page.goto(target)
                    # the load event can come before the paint entry is recorded: wait for it
                    with contextlib.suppress(PlaywrightTimeout):
                        await page.wait_for_function(
                            "performance.getEntriesByName('first-contentful-paint').length > 0", timeout=5000)
                    t = await page.evaluate(
                        "() => { const n = performance.getEntriesByType('navigation')[0];"
                        " const p = performance.getEntriesByName('first-contentful-paint')[0];"
                        " return [p ? p.startTime : null, n.responseEnd - n.requestStart]; }")
                    if t[0] is not None:
                        fcp.append(t[0])
                    server.append(t[1])
                out[name] = {"fcp_ms": round(statistics.median(fcp), 1) if fcp else float("nan"),
                             "server_ms": round(statistics.median(server), 1), "runs": repeat}
        finally:
            await browser.close()
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Fill, serve and measure each size; returns the results (also written to bench/results)."""
    rows: list[dict[str, Any]] = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="memvault-ui-bench-") as tmp:
            data_dir = Path(tmp) / "data"
            fill = await _fill(data_dir, args.model_cache, n, args.fill_cache)
            env = _env(data_dir, args.model_cache)
            owner = await anyio.open_process([MEMVAULT, "serve", "--owner", "--log-level", "WARNING"], env=env,
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None)
            try:
                t0 = time.perf_counter()
                ui = await anyio.run_process([MEMVAULT, "ui", "--no-browser"], env=env)
                url_s = time.perf_counter() - t0
                views = await _views(ui.stdout.decode().strip(), args.repeat)
            finally:
                owner.send_signal(signal.SIGTERM)
                with anyio.fail_after(60):
                    await owner.wait()
            for name, v in views.items():
                rows.append({"memories": n, "view": name, **v})
            print(f"{n} memories: filled {fill}, address in {url_s:.1f} s", file=sys.stderr)
    result = {"bench": "ui", "rows": rows, "environment": environment(), "protocol": __doc__}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"ui-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(result, indent=2))
    print(md_table(["memories", "view", "first paint ms", "server ms", "runs"],
                   [(r["memories"], r["view"], r["fcp_ms"], r["server_ms"], r["runs"]) for r in rows]))
    print(f"1-minute load at the end: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    return result


def add_args(p: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10000],
                   help="comma-separated store sizes (default 10000)")
    p.add_argument("--repeat", type=int, default=5, help="loads per view (median reported)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--fill-cache", type=Path, help="keep filled stores here and copy them per run (bench.speed's)")


def main(argv: list[str] | None = None) -> None:
    """Entry of ``python -m bench.ui``."""
    p = argparse.ArgumentParser(prog="bench.ui", description=__doc__.splitlines()[0])
    add_args(p)
    anyio.run(run, p.parse_args(argv))


if __name__ == "__main__":
    main()
