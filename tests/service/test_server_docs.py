"""End-to-end tests of index_docs / search_docs through a real MCP client session.

Each test runs the real server in-process (real model, SQLite file, Qdrant Edge) with
the fixture folder offered as the client's MCP root, as an editor would.
"""

from __future__ import annotations

import base64
import os
import random
from pathlib import Path

import anyio
import pytest

from memvault.service.scope.project import project_of_folder
from tests.conftest import call, call_error, db_rows, stored_bytes
from tests.docs_fixtures import write_tree

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def lines_of(path: Path, start: int, end: int) -> str:
    return "\n".join(path.read_text(encoding="utf-8").split("\n")[start - 1 : end])


async def test_index_and_search_cite_files_lines_pages(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")
    async with mcp_client(tmp_path / "d", roots=[tree.root.as_uri()]) as c:
        res = await call(c, "index_docs", paths=["."])
        assert res["scope"]["project"] == project_of_folder(tree.root).id
        assert res["scope"]["project_name"] == "proj"
        assert res["added"] == 4 and res["changed"] == res["unchanged"] == res["removed"] == 0, res
        assert res["failed"] == [] and res["chunks_embedded"] == res["chunks_total"] > 5

        # Markdown: heading path and exact line range of the section
        got = await call(c, "search_docs", query="from source procedure compiler checkout toolchain", k=3)
        top = got["results"][0]
        assert top["path"] == "docs/guide.md"
        assert top["heading"] == "Guide > Install > From source"
        assert (top["start_line"], top["end_line"]) == (tree.lines["source"], tree.lines["source_end"])

        # code: an identifier finds its definition, split on definitions
        got = await call(c, "search_docs", query="reticulate_splines_v2", k=3)
        top = got["results"][0]
        assert (top["path"], top["symbol"]) == ("src/splines.py", "reticulate_splines_v2")
        assert top["start_line"] == tree.lines["reticulate"]
        assert "unrelated_helper" not in top["text"]

        # PDF: found with its page
        got = await call(c, "search_docs", query="flamingo census", k=3)
        top = got["results"][0]
        assert top["path"] == "docs/paper.pdf" and top["page"] == 2 and "4212" in top["text"]

        # Chinese document: by a Chinese query and by an English paraphrase
        for q in ("数据库连接池应该设为多大？", "how big must the database connection pool be before deploying?"):
            got = await call(c, "search_docs", query=q, k=3)
            assert "docs/deploy-zh.md" in [r["path"] for r in got["results"]], (q, got)

        # .gitignore honoured: neither the ignored folder nor *.log is searchable
        got = await call(c, "search_docs", query="zebra migration", k=10)
        assert not {"private/plan.md", "debug.log"} & {r["path"] for r in got["results"]}
        # hidden files are not indexed unless named: the .gitignore does not answer for what it hides
        got = await call(c, "search_docs", query="private/ *.log", k=10)
        assert ".gitignore" not in {r["path"] for r in got["results"]}, got

        # path_prefix narrows to a folder
        got = await call(c, "search_docs", query="reticulate splines", k=10, path_prefix="docs/")
        assert got["results"] and all(r["path"].startswith("docs/") for r in got["results"])

        # every cited range really holds the text (non-PDF files)
        for q in ("configure setting variable profile", "install wheel interpreter", "splines", "部署"):
            got = await call(c, "search_docs", query=q, k=5)
            for r in got["results"]:
                if r["page"] is None and not r["text_truncated"]:
                    assert r["text"] == lines_of(tree.root / r["path"], r["start_line"], r["end_line"]), r


async def test_incremental_reindex_edit_and_delete(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")
    async with mcp_client(tmp_path / "d", roots=[tree.root.as_uri()]) as c:
        first = await call(c, "index_docs", paths=["docs", "src"], collection="handbook")
        assert first["added"] == 4 and first["collection"] == "handbook"

        again = await call(c, "index_docs", paths=["docs", "src"], collection="handbook")
        assert again["chunks_embedded"] == 0 and again["unchanged"] == 4
        assert again["added"] == again["changed"] == again["removed"] == 0

        # touching a file without changing it embeds nothing either
        os.utime(tree.root / "src" / "splines.py", (1_000_000_000, 1_000_000_000))
        touched = await call(c, "index_docs", paths=["docs", "src"], collection="handbook")
        assert touched["chunks_embedded"] == 0 and touched["unchanged"] == 4

        # edit one file: only it is re-chunked, its old text is gone
        code = tree.root / "src" / "splines.py"
        code.write_text(code.read_text().replace("reticulate_splines_v2", "reticulate_splines_v3"))
        edited = await call(c, "index_docs", paths=["docs", "src"], collection="handbook")
        assert (edited["changed"], edited["unchanged"], edited["added"]) == (1, 3, 0), edited
        assert 1 <= edited["chunks_embedded"] <= 3
        assert edited["chunks_total"] == first["chunks_total"]
        got = await call(c, "search_docs", query="reticulate_splines_v3", collection="handbook", k=5)
        assert got["results"][0]["symbol"] == "reticulate_splines_v3"
        got = await call(c, "search_docs", query="reticulate_splines_v2", collection="handbook", k=10)
        assert all("reticulate_splines_v2" not in r["text"] for r in got["results"])

        # delete a file: its chunks are gone from search and from the totals
        (tree.root / "docs" / "paper.pdf").unlink()
        removed = await call(c, "index_docs", paths=["docs", "src"], collection="handbook")
        assert removed["removed"] == 1 and removed["chunks_embedded"] == 0
        assert removed["chunks_total"] < edited["chunks_total"]
        got = await call(c, "search_docs", query="flamingo census", collection="handbook", k=10)
        assert "docs/paper.pdf" not in [r["path"] for r in got["results"]]

        # another collection name sees nothing of this one
        got = await call(c, "search_docs", query="flamingo census", collection="other", k=5)
        assert got["results"] == []


async def test_traversal_and_symlink_escape_refused(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe vault combination is 31-41-59.\n")
    (tree.root / "escape").symlink_to(outside, target_is_directory=True)
    (tree.root / "docs" / "leak.md").symlink_to(outside / "secret.md")
    async with mcp_client(tmp_path / "d", roots=[tree.root.as_uri()]) as c:
        for bad in ("../outside", str(outside), "escape", "docs/../../outside/secret.md", "/etc/passwd"):
            err = await call_error(c, "index_docs", paths=[bad])
            assert "refused" in err and "outside the allowed" in err, (bad, err)
        # walking the root skips links that lead out of it
        res = await call(c, "index_docs", paths=["."])
        assert res["added"] == 4
        got = await call(c, "search_docs", query="vault combination", k=10)
        assert all("31-41-59" not in r["text"] for r in got["results"])
    # a client without roots and no allowed folders may not index anything
    async with mcp_client(tmp_path / "d") as c:
        err = await call_error(c, "index_docs", paths=[str(tree.root)])
        assert "no folder it may read" in err and "MEMVAULT_DOCS_ALLOWED_DIRS" in err
        assert "started in /, which is no project folder" in err


async def test_a_client_without_roots_indexes_inside_its_project_folder(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")  # a plain folder, no git: the folder is the project
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "other.md").write_text("# Other\n\nNot this project's.\n")
    async with mcp_client(tmp_path / "d", cwd=tree.root) as c:
        res = await call(c, "index_docs", paths=["."])
        assert res["added"] >= 1 and res["scope"]["project"] == project_of_folder(tree.root).id
        got = await call(c, "search_docs", query="reticulate_splines_v2", k=5)
        assert got["results"] and all(not r["path"].startswith("/") for r in got["results"])
        err = await call_error(c, "index_docs", paths=[str(outside)])
        assert "refused" in err and "outside the allowed" in err
    # the folder's setting adds folders to it
    async with mcp_client(tmp_path / "d", cwd=tree.root, docs_allowed_dirs=[outside]) as c:
        assert (await call(c, "index_docs", paths=[str(outside)]))["added"] == 1


async def test_documents_stay_in_their_project(tmp_path, mcp_client):
    a = write_tree(tmp_path / "alpha")
    b = tmp_path / "beta"
    b.mkdir()
    (b / "notes.md").write_text("# Notes\n\nThe beta service listens on port 8125.\n")
    d = tmp_path / "d"
    async with mcp_client(d, roots=[a.root.as_uri()]) as c:
        await call(c, "index_docs", paths=["src"])
    async with mcp_client(d, roots=[b.as_uri()]) as c:
        got = await call(c, "search_docs", query="reticulate_splines_v2", k=5)
        assert got["scope"]["project"] == project_of_folder(b).id and got["results"] == []
        shared = await call(c, "index_docs", paths=["notes.md"], project="")
        assert shared["scope"]["project"] == ""
    async with mcp_client(d, roots=[a.root.as_uri()]) as c:
        got = await call(c, "search_docs", query="which port does the beta service listen on?", k=3)
        assert got["results"][0]["path"] == "notes.md" and got["results"][0]["project"] == ""
        got = await call(c, "search_docs", query="beta service port", k=3, include_global=False)
        assert all(r["path"] != "notes.md" for r in got["results"])


async def test_credentials_are_never_indexed(tmp_path, mcp_client):
    root = tmp_path / "ws"
    (root / "conf").mkdir(parents=True)
    key_body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ"
    (root / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_body}\n"
                                     "-----END OPENSSH PRIVATE KEY-----\n")
    (root / "conf" / "deploy.md").write_text("# Deploy\n\nDeploys go through the blue-green pipeline on Fridays.\n")
    (root / "conf" / "settings.ini").write_text(
        "[aws]\nregion = eu-west-1\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4xKv8Lm2Np9\n")
    d = tmp_path / "d"
    async with mcp_client(d, roots=[root.as_uri()]) as c:
        await call(c, "index_docs", paths=["."])
        hits = await call(c, "search_docs", query="blue-green deploy pipeline", k=5)
        assert any("blue-green" in r["text"] for r in hits["results"])
        leaked = await call(c, "search_docs", query="aws_secret_access_key private key", k=10)
        assert all("wJalrXUtnFEMI" not in r["text"] and "PRIVATE KEY" not in r["text"] for r in leaked["results"])
    blob = b"".join(stored_bytes(p) for p in d.rglob("*") if p.is_file())
    assert b"wJalrXUtnFEMI" not in blob and key_body.encode() not in blob


def rsa_4096_lines(seed: int) -> list[str]:
    """The lines of a PEM block shaped like a 4096-bit RSA key: BEGIN, 50 lines of 64
    base64 characters and a shorter one, END (random bytes, not a key)."""
    rng = random.Random(seed)
    b64 = base64.b64encode(bytes(rng.randrange(256) for _ in range(2_374))).decode()
    label = "RSA " + "PRIVATE KEY"
    return [f"-----BEGIN {label}-----", *(b64[i : i + 64] for i in range(0, len(b64), 64)), f"-----END {label}-----"]


def _sections(topic: str, words: str) -> str:
    """A Markdown section of distinct prose (so that each file has something findable)."""
    return f"## {topic}\n\n" + "\n".join(f"Step {i}: {words} number {i}, checked twice before release."
                                          for i in range(1, 9)) + "\n"


KEY_WRAPPINGS = {
    # file: (wrap the key lines, the prose that must stay searchable, how the file's lines end)
    "docs/crlf.md": (lambda ls: "\n".join(ls), "walrus lighthouse inventory", "\r\n"),
    "docs/fence.md": (lambda ls: "```\n" + "\n".join("    " + x for x in ls) + "\n```", "pelican orchard audit", "\n"),
    "docs/list.md": (lambda ls: "- the deploy key:\n" + "\n".join("  " + x for x in ls), "marmot glacier survey", "\n"),
    "src/keys.py": (lambda ls: "KEY = (\n" + "\n".join(f'    "{x}\\n"' for x in ls) + "\n)\n", "heron quarry ledger", "\n"),
}


async def test_private_key_in_a_document_is_never_indexed_in_any_wrapping(tmp_path, mcp_client):
    """A 4096-bit-shaped RSA key pasted into a file is split across several chunks; every
    one of its lines stays out of SQLite and the vector store, in every wrapping, while
    the rest of the file is found, and index_docs says which lines it left out."""
    root = tmp_path / "ws"
    keys: dict[str, list[str]] = {}
    key_span: dict[str, tuple[int, int]] = {}
    for seed, (rel, (wrap, words, eol)) in enumerate(KEY_WRAPPINGS.items()):
        keys[rel] = rsa_4096_lines(seed)
        before = _sections("Before", words) + "\n## Key\n\n"
        after = "\n\n" + _sections("After", words.replace(" ", " and "))
        if rel.endswith(".py"):
            before = f'"""{words}: the key module."""\n\n\ndef first():\n    return "{words} first"\n\n\n'
            after = f'\n\ndef last():\n    return "{words} last"\n'
        wrapped = wrap(keys[rel])
        text = before + wrapped + after
        first = before.count("\n") + 1
        key_span[rel] = (first, first + wrapped.rstrip("\n").count("\n"))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.replace("\n", eol).encode())
    d = tmp_path / "d"
    async with mcp_client(d, roots=[root.as_uri()]) as c:
        res = await call(c, "index_docs", paths=["."])
        assert res["added"] == len(KEY_WRAPPINGS) and res["failed"] == [], res
        for rel, (lo, hi) in key_span.items():
            said = [w for w in res["withheld"] if w.startswith(f"{rel}: lines ")]
            assert len(said) == 1 and said[0].endswith("a private key block"), res["withheld"]
            a, b = map(int, said[0].split("lines ")[1].split(":")[0].split("-"))
            assert a <= lo and b >= hi, (rel, said, key_span[rel])
        for rel, (_wrap, words, _eol) in KEY_WRAPPINGS.items():
            got = await call(c, "search_docs", query=words, k=5)
            assert rel in [r["path"] for r in got["results"]], (rel, got)
            for line in (keys[rel][1], keys[rel][25], keys[rel][-2]):
                got = await call(c, "search_docs", query=line, k=10)
                assert all(line not in r["text"] for r in got["results"])
    texts = [t for (t,) in db_rows(d, "SELECT text FROM doc_chunks")]
    assert texts and not [x for t in texts for ls in keys.values() for x in ls[1:-1] if x in t]
    blob = b"".join(stored_bytes(p) for p in d.rglob("*") if p.is_file())
    leaked = [x for ls in keys.values() for x in ls if x.encode() in blob]
    assert not leaked, f"{len(leaked)} key lines reached the data dir"


async def test_every_path_not_indexed_is_named_with_its_reason(tmp_path, mcp_client):
    """A named FIFO, a file over the size limit, a symlink loop, a dangling link, a binary file,
    a named folder whose files are all ignored, and the same kinds found under a named folder:
    each appears in ``skipped`` with its reason, and the readable file beside them is indexed."""
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "ok.md").write_text("# Fine\n\nThe otter handbook explains river crossings.\n")
    os.mkfifo(root / "pipe")
    os.mkfifo(root / "docs" / "inner-pipe")
    (root / "big.txt").write_text("words " * 2_000)  # 12,000 bytes, over the 5,000 limit below
    (root / "docs" / "big-inner.md").write_text("more " * 2_000)
    (root / "loop").symlink_to(root / "loop")
    (root / "docs" / "inner-loop.md").symlink_to(root / "docs" / "inner-loop.md")
    (root / "gone.md").symlink_to(root / "nowhere.md")
    (root / "blob.dat").write_bytes(b"\x00\x01binary" * 10)
    await anyio.run_process(["git", "init", "-q", str(root)])  # .gitignore applies inside a repository
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "api.md").write_text("# API\n\ngenerated text\n")
    named = ["pipe", "big.txt", "loop", "gone.md", "blob.dat", "generated", "docs"]
    async with mcp_client(tmp_path / "d", roots=[root.as_uri()], docs_max_file_bytes=5_000) as c:
        res = await call(c, "index_docs", paths=named)
        assert res["added"] == 1 and res["failed"] == [], res
        kinds = {s["path"]: s["kind"] for s in res["skipped"]}
        assert kinds == {
            "pipe": "not_a_regular_file", "big.txt": "too_large", "loop": "symlink_loop",
            "gone.md": "broken_symlink", "blob.dat": "binary", "generated": "nothing_to_index",
            "docs/inner-pipe": "not_a_regular_file", "docs/big-inner.md": "too_large",
            "docs/inner-loop.md": "symlink_loop",
        }, res["skipped"]
        assert res["skipped_total"] == len(kinds)
        reasons = {s["path"]: s["reason"] for s in res["skipped"]}
        assert "named pipe (FIFO)" in reasons["pipe"]
        assert "12,000 bytes" in reasons["big.txt"] and "5,000" in reasons["big.txt"]
        assert "loop" in reasons["loop"] and "bug" not in reasons["loop"]
        assert "1 ignored" in reasons["generated"], reasons["generated"]
        # a loop named alone: the same answer, not an unexpected error
        res = await call(c, "index_docs", paths=["loop"])
        assert [s["kind"] for s in res["skipped"]] == ["symlink_loop"] and res["added"] == 0
        # outside the allowed folders: refused, every such path named
        err = await call_error(c, "index_docs", paths=["docs", "/etc/hostname", "../elsewhere"])
        assert "/etc/hostname" in err and "elsewhere" in err and "outside the allowed" in err, err


async def test_search_with_nothing_indexed_says_so_and_what_to_run(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")
    async with mcp_client(tmp_path / "d", roots=[tree.root.as_uri()]) as c:
        got = await call(c, "search_docs", query="how do I install it?")
        assert got["results"] == [] and got["nothing_indexed"] is True
        assert "index_docs" in got["hint"] and "memvault index" in got["hint"], got["hint"]
        await call(c, "index_docs", paths=["docs"], collection="handbook")
        got = await call(c, "search_docs", query="how do I install it?")
        assert got["results"] and got["nothing_indexed"] is False and got["hint"] is None
        # a collection with nothing in it: said so, naming the collection
        got = await call(c, "search_docs", query="how do I install it?", collection="other")
        assert got["results"] == [] and got["nothing_indexed"] is True and "'other'" in got["hint"]
        # indexed, but nothing above the relevance floor: not "nothing indexed"
        got = await call(c, "search_docs", query="how do I install it?", min_relevance=1.0)
        assert got["results"] == [] and got["nothing_indexed"] is False


async def test_index_docs_sends_progress_with_an_estimate_when_asked(tmp_path, mcp_client):
    tree = write_tree(tmp_path / "proj")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_client(tmp_path / "d", roots=[tree.root.as_uri()]) as c:
        res = await c.call_tool("index_docs", {"paths": ["."]}, progress_callback=on_progress)
        assert not res.is_error and res.structured_content is not None
        files = res.structured_content["added"]
        assert seen and seen[0][:2] == (0, files) and seen[-1][:2] == (files, files), seen
        assert all(msg and "files" in msg and "chunks embedded" in msg for _, _, msg in seen)
        assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)
        # a call without a progress token gets no notification and the same answer
        seen.clear()
        again = await call(c, "index_docs", paths=["."])
        assert again["unchanged"] == files and seen == []


def test_progress_message_gives_an_estimate_once_a_file_is_done() -> None:
    from memvault.mcp.tools.docs import progress_message

    assert progress_message(0, 80, 0, 5.0) == "0/80 files, 0 chunks embedded"
    assert progress_message(20, 80, 340, 20.0) == "20/80 files, 340 chunks embedded, about 60 s left"
    assert progress_message(10, 80, 100, 60.0) == "10/80 files, 100 chunks embedded, about 7 min left"
    assert progress_message(80, 80, 900, 99.0) == "80/80 files, 900 chunks embedded"
