"""``memvault export`` / ``memvault import``: real SQLite files, the CLI called in-process.

A source data dir is filled once through the real server (two users, two projects and
the global scope, a superseded, a forgotten and an erased memory, a private one, a task
with two versions, an indexed document); each test exports it or imports it elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from memvault.cli import main
from memvault.service.scope.project import project_of_folder
from tests.conftest import CLIENT_NAME, call, db_rows, inproc_client
from tests.docs_fixtures import write_tree

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.model_in_user_cache]

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # GitHub token shape (fake)


class Source:
    """The filled data dir, its document tree and the ids the tests look for."""

    def __init__(self, data_dir: Path, tree: Path, ids: dict[str, str], doc_project: str) -> None:
        self.data_dir, self.tree, self.ids, self.doc_project = data_dir, tree, ids, doc_project


@pytest.fixture(scope="module")
def source(tmp_path_factory, memo_model, model_cache) -> Source:
    base = tmp_path_factory.mktemp("transfer")
    data_dir, tree = base / "src", write_tree(base / "docs-tree").root
    ids: dict[str, str] = {}

    async def fill() -> None:
        async with inproc_client(data_dir, memo_model, model_cache, user_id="alice") as c:
            async def remember(name: str, content: str, **kw) -> None:
                ids[name] = (await call(c, "remember", content=content, force=True, **kw))["id"]

            await remember("bluegreen", "The billing service deploys with blue-green releases every Tuesday",
                           project="acme", tags=["deploy"])
            await remember("npm", "The user prefers npm as the package manager", kind="preference",
                           key="pref.pm", project="acme")
            await remember("pnpm", "The user prefers pnpm as the package manager", kind="preference",
                           key="pref.pm", project="acme")
            await remember("imperative", "Alice writes commit messages in the imperative mood", project="")
            await remember("staging", "The staging database migration needs a maintenance window",
                           kind="note", project="acme")
            await call(c, "forget", ids=[ids["staging"]], project="acme")
            await remember("vpn", "The old VPN gateway is vpn-old.internal and is being retired", project="acme")
            await call(c, "forget", ids=[ids["vpn"]], hard=True, project="acme")
            await remember("private", "The on-call rota for billing lives in the team wiki", project="acme",
                           visibility="private")
            await call(c, "set_task_state", task_id="migrate-billing", title="Migrate billing",
                       state={"step": 1, "plan": ["dump", "load"]}, project="acme")
            await call(c, "set_task_state", task_id="migrate-billing", patch={"step": 2}, project="acme")
        async with inproc_client(data_dir, memo_model, model_cache, user_id="bob",
                                 roots=[tree.as_uri()]) as c:
            ids["bob"] = (await call(c, "remember", content="Bob reviews pull requests on Fridays", force=True,
                                     project="acme"))["id"]
            await call(c, "index_docs", paths=["docs"])

    anyio.run(fill)
    return Source(data_dir, tree, ids, project_of_folder(tree).id)


async def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``memvault argv`` in this process (a worker thread: it runs its own event loop)."""
    capsys.readouterr()
    code = await anyio.to_thread.run_sync(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def export(capsys, data_dir: Path, out: Path, *flags: str) -> list[dict]:
    code, _, err = await cli(capsys, "export", "--data-dir", str(data_dir), "-o", str(out), *flags)
    assert code == 0, err
    return [json.loads(line) for line in lines(out)]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def body(path: Path) -> list[str]:
    return lines(path)[1:]


async def test_round_trip_is_exact_and_a_second_import_changes_nothing(source, tmp_path, capsys, mcp_client):
    first = await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    header, records = first[0], first[1:]
    assert header["format"] == "memvault-export" and header["version"] == 2
    assert header["embedding_model"] and header["memvault"] and header["exported_at"].endswith("Z")
    by_type: dict[str, list[dict]] = {}
    for r in records:
        by_type.setdefault(r["type"], []).append(r)
    statuses = {m["id"]: m["status"] for m in by_type["memory"]}
    assert statuses[source.ids["npm"]] == "superseded" and statuses[source.ids["staging"]] == "deleted"
    assert source.ids["vpn"] not in statuses  # erased: only its content-free history entry is left
    erased = [h for h in by_type["memory_history"] if h["memory_id"] == source.ids["vpn"]]
    assert erased and all(h["old"] is None and h["new"] is None for h in erased)
    assert [t["version"] for t in by_type["task"]] == [2]
    assert [h["version"] for h in by_type["task_history"]] == [1, 2]
    assert [d["path"] for d in by_type["doc_file"]] and all(d["indexed_by"] == "bob" for d in by_type["doc_file"])
    # The command line acts for the user: a private memory is exported, with its agent.
    owners = {m["id"]: (m["visibility"], m["agent"]) for m in by_type["memory"]}
    assert owners[source.ids["private"]] == ("private", CLIENT_NAME)
    assert owners[source.ids["bluegreen"]] == ("shared", CLIENT_NAME)

    dest = tmp_path / "dest"
    code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "a.jsonl"))
    assert code == 0, err
    n_mem = len(by_type["memory"])
    assert f"memory          {n_mem} imported, 0 skipped (already there), 0 skipped (hold a secret)" in out, out
    assert db_rows(dest, "SELECT COUNT(*) FROM memories WHERE status='active' AND index_state='pending'") == [(5,)]
    assert db_rows(dest, "SELECT visibility, agent FROM memories WHERE id=?", (source.ids["private"],)) \
        == [("private", CLIENT_NAME)]

    await export(capsys, dest, tmp_path / "b.jsonl")
    assert body(tmp_path / "b.jsonl") == body(tmp_path / "a.jsonl")

    code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "a.jsonl"))
    assert code == 0, err
    assert f"memory          0 imported, {n_mem} skipped (already there)" in out, out
    assert "task            0 imported, 1 skipped (already there)" in out, out
    assert "already there (task, 1): migrate-billing (user alice, project acme)" in out, out
    await export(capsys, dest, tmp_path / "c.jsonl")
    assert body(tmp_path / "c.jsonl") == body(tmp_path / "a.jsonl")

    # After a start, the imported memories are in the index: recall finds them, superseded ones stay out.
    async with mcp_client(dest, user_id="alice") as c:
        got = await call(c, "recall", query="how does billing deploy releases", project="acme")
        found = [m["id"] for m in got["memories"]]
        assert found[0] == source.ids["bluegreen"], got
        pm = await call(c, "recall", query="package manager preference", project="acme")
        pm_ids = [m["id"] for m in pm["memories"]]
        assert source.ids["pnpm"] in pm_ids and source.ids["npm"] not in pm_ids
        task = await call(c, "get_task_state", task_id="migrate-billing", project="acme")
        assert task["task"]["version"] == 2 and task["task"]["state"]["step"] == 2, task
    assert db_rows(dest, "SELECT COUNT(*) FROM memories WHERE index_state='pending'") == [(0,)]

    # Documents come back from their files at the next index run over their folder.
    async with mcp_client(dest, user_id="bob", roots=[source.tree.as_uri()]) as c:
        res = await call(c, "index_docs", paths=["docs"])
        assert res["changed"] == len(by_type["doc_file"]) and res["added"] == 0, res
        hit = await call(c, "search_docs", query="frobnicator tool guide", k=1)
        assert hit["results"][0]["path"].startswith("docs/")


async def test_records_holding_a_secret_are_skipped_and_named(source, tmp_path, capsys):
    await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    exported = lines(tmp_path / "a.jsonl")
    edited = []
    for line in exported:
        rec = json.loads(line)
        if rec.get("type") == "memory" and rec["id"] == source.ids["bluegreen"]:
            rec["content"] += f" using the token {TOKEN}"
            line = json.dumps(rec)
        elif rec.get("type") == "memory_history" and rec["memory_id"] == source.ids["bluegreen"]:
            rec["new"]["content"] += f" using the token {TOKEN}"
            line = json.dumps(rec)
        elif rec.get("type") == "task":
            rec["state"]["db"] = "postgres://app:S3cr3tPassw0rd@db.internal/billing"
            line = json.dumps(rec)
        edited.append(line)
    (tmp_path / "s.jsonl").write_text("\n".join(edited) + "\n", encoding="utf-8")
    dest = tmp_path / "dest"
    code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "s.jsonl"))
    assert code == 0, err
    assert f"not imported, holds a secret (github_token): memory {source.ids['bluegreen']}" in out, out
    assert "not imported, holds a secret (connection_string_password): task migrate-billing" in out, out
    assert "task            0 imported, 0 skipped (already there), 1 skipped (hold a secret)" in out, out
    assert "task_history    0 imported, 0 skipped (already there), 2 skipped (hold a secret)" in out, out
    assert db_rows(dest, "SELECT COUNT(*) FROM memories WHERE id=?", (source.ids["bluegreen"],)) == [(0,)]
    assert db_rows(dest, "SELECT COUNT(*) FROM memory_history WHERE memory_id=?", (source.ids["bluegreen"],)) \
        == [(0,)]
    assert db_rows(dest, "SELECT COUNT(*) FROM memories") == [(len(source.ids) - 2,)]  # less bluegreen and vpn
    assert TOKEN.encode() not in b"".join(p.read_bytes() for p in dest.glob("memvault.db*"))


@pytest.mark.parametrize(("mangle", "says"), [
    (lambda rec: '{"type": "memory", "id": ', "not valid JSON"),
    (lambda rec: json.dumps({k: v for k, v in rec.items() if k != "content"}), "memory record without content"),
    (lambda rec: json.dumps({**rec, "importance": "high"}), "memory field importance is \"high\", not a finite"),
    (lambda rec: json.dumps({**rec, "type": "memories"}), "type is 'memories', not one of memory, memory_history"),
    (lambda rec: json.dumps({**rec, "id": "m-1"}), "memory id 'm-1' is not a UUID"),
])
async def test_an_invalid_line_is_named_and_nothing_is_written(source, tmp_path, capsys, mangle, says):
    await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    exported = lines(tmp_path / "a.jsonl")
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(exported[:3]) + "\n", encoding="utf-8")  # header and two memories
    dest = tmp_path / "dest"
    assert (await cli(capsys, "import", "--data-dir", str(dest), str(good)))[0] == 0
    before = db_rows(dest, "SELECT id FROM memories ORDER BY id")
    exported[5] = mangle(json.loads(exported[5]))
    (tmp_path / "bad.jsonl").write_text("\n".join(exported) + "\n", encoding="utf-8")
    code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "bad.jsonl"))
    assert code == 1 and out == ""
    assert err.startswith("memvault import: line 6: ") and says in err, err
    assert db_rows(dest, "SELECT id FROM memories ORDER BY id") == before
    assert db_rows(dest, "SELECT COUNT(*) FROM tasks") == [(0,)]


async def test_a_version_1_file_is_read_as_shared_memories_of_an_unknown_writer(source, tmp_path, capsys):
    exported = [json.loads(line) for line in lines(await _export_path(capsys, source, tmp_path))]
    old = [{**exported[0], "version": 1}]
    for rec in exported[1:]:
        if rec["type"] == "memory":  # version 1 had no visibility and no agent
            rec = {k: v for k, v in rec.items() if k not in ("visibility", "agent")}
        old.append(rec)
    (tmp_path / "v1.jsonl").write_text("\n".join(json.dumps(r) for r in old) + "\n", encoding="utf-8")
    dest = tmp_path / "dest"
    code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "v1.jsonl"))
    assert code == 0, err
    n_mem = sum(r.get("type") == "memory" for r in old)
    assert f"memory          {n_mem} imported" in out, out
    assert db_rows(dest, "SELECT DISTINCT visibility, agent FROM memories") == [("shared", None)]
    # A version 2 record without its visibility is refused: the file says it holds one.
    v2 = [exported[0], *({k: v for k, v in r.items() if k != "visibility"} if r["type"] == "memory" else r
                         for r in exported[1:])]
    (tmp_path / "v2.jsonl").write_text("\n".join(json.dumps(r) for r in v2) + "\n", encoding="utf-8")
    code, _, err = await cli(capsys, "import", "--data-dir", str(tmp_path / "d2"), str(tmp_path / "v2.jsonl"))
    assert code == 1 and "memory record without visibility" in err, err


async def _export_path(capsys, source: Source, tmp_path: Path) -> Path:
    await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    return tmp_path / "a.jsonl"


async def test_an_unknown_format_or_version_names_what_is_read(tmp_path, capsys):
    for header, says in [({"format": "mem0", "version": 1}, "not a memvault export (format 'mem0')"),
                         ({"format": "memvault-export", "version": 3}, "export format version 3 is not supported")]:
        (tmp_path / "x.jsonl").write_text(json.dumps(header) + "\n", encoding="utf-8")
        code, _, err = await cli(capsys, "import", "--data-dir", str(tmp_path / "d"), str(tmp_path / "x.jsonl"))
        assert code == 1 and says in err and "reads format 'memvault-export' version 1 or 2" in err, err
    assert not (tmp_path / "d").exists()


async def test_filters_restrict_every_record_type(source, tmp_path, capsys):
    alice = (await export(capsys, source.data_dir, tmp_path / "u.jsonl", "--user", "alice"))[1:]
    assert alice and all(r.get("user_id", r.get("indexed_by")) == "alice" for r in alice)
    assert {r["type"] for r in alice} == {"memory", "memory_history", "task", "task_history"}
    bob = (await export(capsys, source.data_dir, tmp_path / "b.jsonl", "--user", "bob"))[1:]
    assert {r["type"] for r in bob} == {"memory", "memory_history", "doc_file"}
    acme = (await export(capsys, source.data_dir, tmp_path / "p.jsonl", "--project", "acme"))
    assert acme[0]["filters"] == {"user": None, "project": "acme"}
    assert acme[1:] and all(r["project"] == "acme" for r in acme[1:])
    assert source.ids["imperative"] not in {r.get("id") for r in acme}
    glob = (await export(capsys, source.data_dir, tmp_path / "g.jsonl", "--project", "", "--user", "alice"))[1:]
    assert [r["id"] for r in glob if r["type"] == "memory"] == [source.ids["imperative"]]
    docs = (await export(capsys, source.data_dir, tmp_path / "d.jsonl", "--project", source.doc_project))[1:]
    assert {r["type"] for r in docs} == {"doc_file"}


async def test_dry_run_writes_nothing(source, tmp_path, capsys):
    await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    dest = tmp_path / "dest"
    code, out, err = await cli(capsys, "import", "--dry-run", "--data-dir", str(dest), str(tmp_path / "a.jsonl"))
    assert code == 0, err
    assert out.startswith("dry run: nothing was written") and "would import" in out
    assert not dest.exists()
    code, out, _ = await cli(capsys, "import", "--dry-run", "--data-dir", str(source.data_dir),
                             str(tmp_path / "a.jsonl"))
    assert code == 0 and "memory          0 would import" in out, out


async def test_import_refuses_while_an_owner_holds_the_data_dir(source, tmp_path, capsys):
    from memvault.process.owner import owner_lock
    from memvault.process.owner_files import owner_files

    await export(capsys, source.data_dir, tmp_path / "a.jsonl")
    dest = tmp_path / "dest"
    dest.mkdir(mode=0o700)
    with owner_lock(owner_files(dest)):  # what a running owner holds for its whole life
        code, out, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "a.jsonl"))
    assert code == 1 and out == ""
    assert "import writes only while no owner runs. Run `memvault stop`" in err and "Nothing was written" in err
    assert not (dest / "memvault.db").exists()


async def test_export_takes_its_file_as_import_does(source, tmp_path, capsys):
    code, out, err = await cli(capsys, "export", "--data-dir", str(source.data_dir), str(tmp_path / "p.jsonl"))
    assert code == 0 and out == "", err
    await export(capsys, source.data_dir, tmp_path / "o.jsonl")
    assert body(tmp_path / "p.jsonl") == body(tmp_path / "o.jsonl")
    code, out, err = await cli(capsys, "export", "--data-dir", str(source.data_dir), str(tmp_path / "x.jsonl"),
                               "-o", str(tmp_path / "y.jsonl"))
    assert code == 2 and "two files given" in err and not (tmp_path / "x.jsonl").exists()


async def test_export_of_a_missing_data_dir_says_so(tmp_path, capsys):
    code, out, err = await cli(capsys, "export", "--data-dir", str(tmp_path / "nowhere"))
    assert code == 1 and out == ""
    assert "there is no memvault database at" in err and "nowhere" in err, err


async def test_export_to_stdout_is_the_same_as_to_a_file(source, tmp_path, capsys):
    code, out, err = await cli(capsys, "export", "--data-dir", str(source.data_dir))
    assert code == 0, err
    # (a line before it may say that the model was prepared for this machine)
    assert err.splitlines()[-1].startswith("memvault export: ") and " memory" in err
    await export(capsys, source.data_dir, tmp_path / "f.jsonl")
    assert out.splitlines()[1:] == body(tmp_path / "f.jsonl")


async def test_an_export_spelling_a_repository_with_capitals_imports_under_its_one_spelling(source, tmp_path, capsys):
    """An export of a store written when ``github.com/Acme/Billing`` and ``github.com/acme/billing``
    were two projects: every record lands in the lower-case project; other ids keep their case."""
    exported = [json.loads(line) for line in lines(await _export_path(capsys, source, tmp_path))]
    renamed = [exported[0], *({**r, "project": "github.com/Acme/Billing"} if r.get("project") == "acme" else r
                              for r in exported[1:])]
    moved = sum(r.get("project") == "github.com/Acme/Billing" for r in renamed)
    assert moved >= 5  # memories, their history, the task and its versions
    (tmp_path / "mixed.jsonl").write_text("\n".join(json.dumps(r) for r in renamed) + "\n", encoding="utf-8")
    dest = tmp_path / "dest"
    code, _, err = await cli(capsys, "import", "--data-dir", str(dest), str(tmp_path / "mixed.jsonl"))
    assert code == 0, err
    for table in ("memories", "memory_history", "tasks", "task_history"):
        projects = {p for (p,) in db_rows(dest, f"SELECT DISTINCT project FROM {table}")}  # noqa: S608
        assert "github.com/acme/billing" in projects and "github.com/Acme/Billing" not in projects, (table, projects)
    assert {p for (p,) in db_rows(dest, "SELECT DISTINCT project FROM doc_files")} == {source.doc_project}
