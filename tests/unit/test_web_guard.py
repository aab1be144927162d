"""The web page's guard: who may read and who may change (``memvault.web.guard``).

The guard wraps a small app that echoes the path it receives; requests go through
Starlette's test client at the page's own origin unless a test says otherwise.
"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from memvault.web.guard import Guard

SECRET = "s3cr3t-" + "x" * 36
PORT = 8123
ORIGIN = f"http://127.0.0.1:{PORT}"


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"{request.method} {request.url.path}")


@pytest.fixture
def client() -> tuple[TestClient, list[int]]:
    seen: list[int] = []
    inner = Starlette(routes=[Route("/{path:path}", _echo, methods=["GET", "POST", "PUT", "DELETE"])])
    app = Guard(inner, SECRET, PORT, on_request=lambda: seen.append(1))
    return TestClient(app, base_url=ORIGIN), seen


def test_a_request_with_the_secret_reaches_the_page_without_it_in_the_path(client) -> None:
    c, seen = client
    r = c.get(f"/{SECRET}/m/abc")
    assert r.status_code == 200 and r.text == "GET /m/abc"
    assert c.get(f"/{SECRET}").text == "GET /"
    assert seen == [1, 1]  # each request let through counts as activity
    assert r.headers["x-frame-options"] == "DENY"
    assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none': no script at all
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert not any(h.lower().startswith("access-control-") for h in r.headers)


@pytest.mark.parametrize("path", ["/", "/m/abc", f"/{SECRET[:-1]}/", f"/{SECRET}x/", f"/x{SECRET}/", "/static/style.css"])
def test_without_the_secret_the_page_answers_403(client, path: str) -> None:
    c, seen = client
    r = c.get(path)
    assert r.status_code == 403
    assert "address memvault ui printed" in r.text
    assert seen == []


def test_another_host_name_is_refused_against_dns_rebinding(client) -> None:
    c, _ = client
    r = c.get(f"/{SECRET}/", headers={"Host": f"rebound.example:{PORT}"})
    assert r.status_code == 403 and "only at the address" in r.text
    assert c.get(f"/{SECRET}/", headers={"Host": f"localhost:{PORT}"}).status_code == 403


def test_a_change_needs_a_post_from_the_page_itself(client) -> None:
    c, seen = client
    ok = c.post(f"/{SECRET}/m/abc/forget", headers={"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 200 and ok.text == "POST /m/abc/forget"
    for headers in ({}, {"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Origin": f"http://localhost:{PORT}"},
                    {"Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"}):
        r = c.post(f"/{SECRET}/m/abc/forget", headers=headers)
        assert r.status_code == 403, headers
        assert "only from this page itself" in r.text
    r = c.put(f"/{SECRET}/m/abc", headers={"Origin": ORIGIN})
    assert r.status_code == 405 and "GET and changes with POST" in r.text
    assert len(seen) == 1


def test_the_consolidation_posts_of_the_real_page_are_guarded() -> None:
    """Applying proposals and undoing a merge: refused without the secret or from another origin
    before the page touches the store; from the page itself they reach the store."""
    from memvault.web.app import PageContext, build_app

    asked: list[int] = []

    def runtime() -> str:
        asked.append(1)
        return "the store is closed for this test"

    app = Guard(build_app(PageContext(runtime=runtime, user_id="local", owner_status=dict), f"/{SECRET}"),
                SECRET, PORT)
    c = TestClient(app, base_url=ORIGIN)
    mid = "0b6f9a52-3c1e-4d2b-9f7a-1e2d3c4b5a69"
    form = {"project": "-", "p": f"{mid},{mid[:-1]}0"}
    r = c.post("/consolidate", data=form, headers={"Origin": ORIGIN})
    assert r.status_code == 403 and "address memvault ui printed" in r.text
    for path in ("/consolidate", f"/m/{mid}/undo-merge"):
        r = c.post(f"/{SECRET}{path}", data=form, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and "only from this page itself" in r.text, path
    assert asked == []
    for path in ("/consolidate", f"/m/{mid}/undo-merge"):
        r = c.post(f"/{SECRET}{path}", data=form, headers={"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 503 and "the store is closed for this test" in r.text, path
    assert asked == [1, 1]
