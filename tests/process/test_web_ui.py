"""``memvault ui`` in a real browser: the page served by a real owner process, driven by Chromium.

One owner (started by a ``memvault serve`` forwarder, as a client starts it), one MCP
client on it, one headless Chromium (Debian's, through Playwright's Python API) with
every request that is not to 127.0.0.1 blocked and recorded. The test walks what a
person does: sees a memory remembered over MCP, searches and reads why each hit ranks,
edits one memory and forgets another, applies a proposed merge and undoes it, each seen
by the next MCP ``recall``; a secret in an edit is refused. Without the secret, from another host name (DNS rebinding) or from
another origin, the page refuses (403). The main views are saved as PNGs in the test's
temporary folder, or in ``docs/images`` (shown by docs/web-ui.md and the README) when
``SCREENSHOTS_DIR=docs/images`` is set, so an ordinary run leaves the tree clean.

The browser is ``/usr/bin/chromium`` (``apt-get install chromium``); without it (or
without Playwright) the test fails under ``CI=true`` and is skipped elsewhere, saying why.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from memvault.process.owner_files import owner_files
from tests.conftest import MEMVAULT, alive, call, db_rows, memvault_client, owner_pid, server_env

CHROMIUM = Path(os.environ.get("MEMVAULT_CHROMIUM", "/usr/bin/chromium"))
REPO = Path(__file__).resolve().parents[2]
DARK = ["The user prefers dark mode in the editor", "The user likes the editor in dark mode"]
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
GITHUB_PAT = "gh" + "p_" + "Zq7Hk2Lm9Np4Rs6Tv8Wx1Yb3Cd5Fg0Jh" + "AbCd"  # a fake token of the real shape

pytestmark = pytest.mark.anyio


def _browser_or_skip() -> None:
    """Fail under CI=true, skip elsewhere, when Chromium or Playwright is missing (never pass silently)."""
    problem = None
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        problem = "Playwright is not installed (pip install -e '.[test]')"
    if problem is None and not CHROMIUM.exists():
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set MEMVAULT_CHROMIUM)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test cannot run: {problem}")
        pytest.skip(f"the browser test needs a browser: {problem}")


def _raw_status(url: str, *, host: str | None = None) -> int:
    """Status of a GET of ``url`` sent as is (no browser), with ``host`` as the Host header if given."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.putrequest("GET", parts.path or "/", skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def _stop_owner(data_dir: Path) -> None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        pid = int(json.loads(owner_files(data_dir).info.read_text())["pid"])
        os.kill(pid, signal.SIGTERM)


async def _recall(client: Any, query: str) -> list[str]:
    found = await call(client, "recall", query=query, k=10)
    return [m["content"] for m in found["memories"]]


async def _recall_ids(client: Any, query: str) -> list[str]:
    found = await call(client, "recall", query=query, k=10)
    return [m["id"] for m in found["memories"]]


async def test_the_page_shows_and_steers_memory_in_a_real_browser(tmp_path: Path, model_cache: Path,
                                                                  shared_embedder: Any) -> None:
    _browser_or_skip()
    from playwright.async_api import Route, async_playwright

    data_dir = tmp_path / "data"
    handbook = tmp_path / "handbook"
    handbook.mkdir()
    (handbook / "backups.md").write_text("# Backups\n\nThe database is backed up every night at 03:00 UTC.\n")
    # the MCP client stays connected until the end, so the owner never idles before the last
    # check, which then waits out this idle time: 2 s, not more
    settings = {"owner": "true", "owner_idle_s": 2, "docs_allowed_dirs": json.dumps([str(handbook)])}
    try:
        async with memvault_client(data_dir, model_cache, **settings) as client:
            pnpm = await call(client, "remember", content="The team prefers pnpm over npm for every JavaScript "
                              "project", key="pref.package_manager", tags=["js"])
            deploy = await call(client, "remember", content="Deploys go out on Tuesdays after the 10:00 standup",
                                kind="procedure", tags=["ops"])
            await call(client, "remember", content="We chose PostgreSQL 16 for billing because of logical "
                       "replication", kind="decision")
            await call(client, "set_task_state", task_id="web-page", title="Build the memory page",
                       state={"step": "list"})

            ui = await anyio.run_process([MEMVAULT, "ui", "--no-browser"], check=False,
                                         env=server_env(data_dir, model_cache, **settings))
            assert ui.returncode == 0, ui.stderr.decode()
            url = ui.stdout.decode().strip()
            parts = urlsplit(url)
            assert parts.hostname == "127.0.0.1" and parts.path.count("/") == 2, url
            origin = f"http://127.0.0.1:{parts.port}"

            # Refused: no secret, a wrong secret, another host name (DNS rebinding).
            assert await anyio.to_thread.run_sync(_raw_status, origin + "/") == 403
            assert await anyio.to_thread.run_sync(_raw_status, origin + "/not-the-secret/") == 403
            assert await anyio.to_thread.run_sync(
                lambda: _raw_status(url, host=f"rebound.example:{parts.port}")) == 403
            assert await anyio.to_thread.run_sync(_raw_status, url) == 200

            blocked: list[str] = []

            async def only_loopback(route: Route) -> None:
                if urlsplit(route.request.url).hostname == "127.0.0.1":
                    await route.continue_()
                else:
                    blocked.append(route.request.url)
                    await route.abort()

            shots = os.environ.get("SCREENSHOTS_DIR")
            images = REPO / shots if shots else tmp_path / "images"
            images.mkdir(parents=True, exist_ok=True)
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                   args=["--no-sandbox", "--disable-gpu"])
                try:
                    context = await browser.new_context(viewport={"width": 1280, "height": 640})
                    await context.route("**/*", only_loopback)
                    page = await context.new_page()

                    # The list shows what MCP remembered, with its fields.
                    await page.goto(url)
                    table = page.locator("table.memories")
                    await table.get_by_text("prefers pnpm over npm").wait_for()
                    assert await table.locator("tbody tr").count() == 3
                    assert "pref.package_manager" in await table.inner_text()
                    # the memory's text takes the widest column, the other fields under it or beside it
                    widths = await table.evaluate("t => [...t.querySelector('tbody tr').children].map(c => "
                                                  "c.getBoundingClientRect().width)")
                    assert widths[0] == max(widths) and widths[0] >= 0.45 * sum(widths), widths
                    await page.screenshot(path=images / "ui-memories.png")

                    # Search: recall's ranking, with why (dense and keyword ranks, the parts of the score).
                    await page.fill("input[name=q]", "which package manager for JavaScript")
                    await page.click("button:text('Show')")
                    why = page.locator("table.why-table")
                    await why.wait_for()
                    headers = await why.locator("th").all_inner_texts()
                    assert {"Dense rank", "Keyword rank", "Relevance", "Written beside", "Importance", "Recency"} <= set(headers)
                    first = await why.locator("tbody tr").first.inner_text()
                    assert "prefers pnpm" in first
                    # what recall would not count as relevant is only counted, and shown on request
                    assert await why.locator("tbody tr").count() == 1
                    bar = page.locator(".below-bar")
                    assert "2 more below the relevance bar" in await bar.inner_text()
                    await page.screenshot(path=images / "ui-search.png")
                    await bar.locator("a").click()
                    await page.locator("table.why-table.below").wait_for()
                    assert await page.locator("table.why-table.below tbody tr").count() == 2

                    # Edit the pnpm memory: a new version that supersedes it (history kept).
                    await page.goto(f"{url}m/{pnpm['id']}")
                    await page.fill("textarea[name=content]", "The team prefers bun over pnpm for every "
                                    "JavaScript project")
                    await page.fill("input[name=tags]", "js, tooling")
                    await page.click("button:text('Save as a new version')")
                    await page.locator(".notice").wait_for()
                    assert "saved (superseded)" in await page.locator(".notice").inner_text()
                    assert "prefers bun over pnpm" in await page.locator("pre.content").inner_text()
                    history = await page.locator("table.history").inner_text()
                    assert "added" in history and "memvault-ui" in history
                    # the new version links to the one it replaced, and that one back to it
                    newer = urlsplit(page.url).path.rsplit("/", 1)[1]
                    await page.locator(".versions").get_by_text(pnpm["id"]).wait_for()
                    await page.screenshot(path=images / "ui-memory.png", full_page=False)
                    await page.locator(".versions a").click()
                    assert urlsplit(page.url).path.endswith(pnpm["id"])
                    await page.locator(".versions a.newer").click()
                    assert urlsplit(page.url).path.endswith(newer)

                    # A secret in an edit is refused like in remember: nothing is written.
                    await page.fill("textarea[name=content]", f"the deploy token is {GITHUB_PAT}")
                    await page.click("button:text('Save as a new version')")
                    error = await page.locator(".error").inner_text()
                    assert "not saved" in error and "GitHub token" in error

                    # Forget the deploy memory from its page.
                    await page.goto(f"{url}m/{deploy['id']}")
                    await page.click("button:text('Forget')")
                    assert "forgotten" in await page.locator(".notice").inner_text()
                    assert await page.locator("button:text('Restore')").count() == 1

                    # The next MCP recall sees both changes.
                    seen = await _recall(client, "which package manager for JavaScript")
                    assert any("prefers bun over pnpm" in c for c in seen), seen
                    assert not any("prefers pnpm over npm" in c for c in seen), seen
                    assert not any("GitHub" in c or GITHUB_PAT in c for c in seen), seen
                    assert not any("Deploys go out" in c for c in await _recall(client, "when do deploys go out"))

                    # Consolidation: two restatements are proposed as one merge; apply it, then undo it.
                    dark = [await call(client, "remember", content=t, kind="preference") for t in DARK]
                    assert [d["status"] for d in dark] == ["stored", "stored"], dark
                    await page.goto(f"{url}consolidate")
                    group = page.locator("section.proposal")
                    assert await group.count() == 1 and "dark mode" in await group.inner_text()
                    await page.screenshot(path=images / "ui-consolidate.png")
                    await group.locator("button:text('Apply this merge')").click()
                    assert "merged 2 memories" in await page.locator(".notice").inner_text()
                    merged = urlsplit(page.url).path.rsplit("/", 1)[1]
                    marks = "SELECT status, superseded_by FROM memories WHERE id IN (?, ?)"
                    assert db_rows(data_dir, marks, tuple(d["id"] for d in dark)) == [("superseded", merged)] * 2
                    await page.click("button:text('Undo merge')")
                    assert "merge undone" in await page.locator(".notice").inner_text()
                    ids = await _recall_ids(client, "does the user like dark mode in the editor")
                    assert {d["id"] for d in dark} <= set(ids) and merged not in ids, ids

                    # The other views. Profile opens on the project with the most memories, and says so.
                    await page.goto(f"{url}profile")
                    assert "prefers bun over pnpm" in await page.locator("main").inner_text()
                    for i in range(9):
                        await call(client, "remember", content=f"The shop's service number {i} listens on port "
                                   f"{9100 + i}", project="github.com/acme/shop", importance=0.8)
                    await page.goto(f"{url}profile")
                    showing = await page.locator(".showing").inner_text()
                    assert "Showing shop (the project with the most memories, 9)" in showing, showing
                    assert "listens on port" in await page.locator("main").inner_text()
                    await page.screenshot(path=images / "ui-profile.png")
                    await page.goto(f"{url}profile?project=-")
                    assert "Showing global only (from the address)" in await page.locator(".showing").inner_text()

                    # Documents: each file with its chunks and last index time, and a search over them.
                    indexed = await call(client, "index_docs", paths=[str(handbook)], project="")
                    assert indexed["added"] == 1
                    await page.goto(f"{url}docs")
                    files = await page.locator("table.doc-files").inner_text()
                    assert "backups.md" in files and "global" in files
                    await page.fill("input[name=q]", "when is the database backed up?")
                    await page.click("button:text('Search')")
                    hit = await page.locator("table.docs-hits tbody tr").first.inner_text()
                    assert "backups.md:" in hit and "03:00" in hit
                    await page.screenshot(path=images / "ui-docs.png")
                    await page.goto(f"{url}tasks")
                    assert "Build the memory page" in await page.locator("main").inner_text()
                    await page.goto(f"{url}health")
                    health = await page.locator("main").inner_text()
                    assert "vector index" in health and "PROBLEM" not in health, health
                    await page.screenshot(path=images / "ui-health.png")

                    # A form posted from another origin (a page that is not memvault's) is refused.
                    await page.goto("about:blank")
                    await page.set_content(f'<form method="post" action="{url}m/{pnpm["id"]}/forget">'
                                           '<button>go</button></form>')
                    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
                        await page.click("button")
                    assert (await posted.value).status == 403
                    assert blocked == [], f"the page tried to reach beyond loopback: {blocked}"
                finally:
                    await browser.close()
            assert not any("Deploys go out" in c for c in await _recall(client, "when do deploys go out"))
            pid = owner_pid(data_dir)
            assert pid is not None
        # The page does not keep the owner forever: with the client gone and no request, it exits.
        with anyio.move_on_after(120):
            while alive(pid):  # noqa: ASYNC110 - polling another process, no event to wait on
                await anyio.sleep(0.2)
        assert not alive(pid), "the owner serving the page did not exit after its idle time"
    finally:
        _stop_owner(data_dir)


@pytest.mark.model_in_user_cache  # the command prepares the model first
def test_memvault_ui_without_an_owner_that_can_start_says_why(tmp_path: Path) -> None:
    """A data dir that is a file: no owner can start; ``memvault ui`` exits 1 with one line naming the problem."""
    bad = tmp_path / "not-a-dir"
    bad.write_text("x")
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env["MEMVAULT_DATA_DIR"] = str(bad)
    done = subprocess.run([MEMVAULT, "ui", "--no-browser"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "memvault ui:" in done.stderr and str(bad) in done.stderr, done.stderr


WORD_BOXES = """(args) => {
    const [selector, words] = args;
    const root = document.querySelector(selector);
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const out = {};
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const w of words) {
            const at = node.data.indexOf(w);
            if (at >= 0 && !(w in out)) {
                const r = document.createRange();
                r.setStart(node, at);
                r.setEnd(node, at + 1);
                out[w] = r.getBoundingClientRect().left;
            }
        }
    }
    return out;
}"""


async def test_the_page_draws_bidi_controls_as_marks_in_a_real_browser(tmp_path: Path, model_cache: Path,
                                                                        shared_embedder: Any) -> None:
    """A memory holding U+202E (and a key, tags, source written with controls by an older store or
    an import) is drawn in its own order, each control a visible mark; the edit form says so."""
    _browser_or_skip()
    from playwright.async_api import async_playwright

    data_dir = tmp_path / "data"
    settings = {"owner": "true", "owner_idle_s": 5}
    try:
        async with memvault_client(data_dir, model_cache, **settings) as client:
            done = await call(client, "remember", content="The cache limit is \u202ealpha omega\u202c for billing",
                              tags=["ops"])
            assert done["status"] == "stored", done
            con = sqlite3.connect(data_dir / "memvault.db")
            with con:
                con.execute("UPDATE memories SET key = ?, tags = ?, source = ? WHERE id = ?",
                            ("pref.\u2067cache", '["o\u202dps"]', "cur\u200fsor", done["id"]))
            con.close()
            ui = await anyio.run_process([MEMVAULT, "ui", "--no-browser"], check=False,
                                         env=server_env(data_dir, model_cache, **settings))
            assert ui.returncode == 0, ui.stderr.decode()
            url = ui.stdout.decode().strip()
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                   args=["--no-sandbox", "--disable-gpu"])
                try:
                    page = await browser.new_page()
                    await page.goto(url)
                    listed = await page.locator("table.memories").inner_text()
                    assert "⟨RLO⟩" in listed and "⟨RLI⟩" in listed and "⟨LRO⟩" in listed and "⟨RLM⟩" in listed, listed
                    assert not any(c in listed for c in BIDI_CONTROLS), listed

                    await page.goto(f"{url}m/{done['id']}")
                    shown = await page.locator("pre.content").inner_text()
                    assert "⟨RLO⟩alpha omega⟨PDF⟩" in shown, shown
                    boxes = await page.evaluate(WORD_BOXES, ["pre.content", ["alpha", "omega"]])
                    assert boxes["alpha"] < boxes["omega"], f"drawn reversed: {boxes}"
                    fields = await page.locator("table.fields").inner_text()
                    for mark in ("pref.⟨RLI⟩cache", "o⟨LRO⟩ps", "cur⟨RLM⟩sor"):
                        assert mark in fields, fields
                    assert not any(c in fields for c in BIDI_CONTROLS), fields
                    warning = await page.locator("form.edit [role=note]").inner_text()
                    assert "direction controls (RLO, PDF, RLI, LRO)" in warning, warning
                    assert "\u202e" in await page.locator("textarea[name=content]").input_value()
                finally:
                    await browser.close()
    finally:
        _stop_owner(data_dir)
