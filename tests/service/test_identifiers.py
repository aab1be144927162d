"""Identifiers that look the same are the same, or refused: one check for every name argument.

Keys, tags, task ids, project names, sources and collections go through
``validation.check_name``: NFKC, casefold where the field is case-insensitive, no
invisible or text-direction characters, no look-alike mixed scripts.
"""

from __future__ import annotations

import sqlite3

import pytest

from memvault.policy.scripts import char_label, first_invisible, mixed_script
from memvault.service import validation as v
from memvault.service.errors import InvalidArgument
from tests.conftest import call, call_error, db_rows

CYRILLIC_A = "\u0430"
INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u202a", "\u2066", "\u2069",
              "\u200e", "\u200f", "\u061c", "\u3164", "\u034f", "\ufe0f", "\u2028"]


# ---------------------------------------------------------------------- pure


def test_char_label_names_the_code_point():
    assert char_label(CYRILLIC_A) == "U+0430 CYRILLIC SMALL LETTER A"
    assert char_label("\u202e") == "U+202E RIGHT-TO-LEFT OVERRIDE"


@pytest.mark.parametrize("ch", INVISIBLES, ids=lambda c: f"U+{ord(c):04X}")
def test_invisible_characters_are_found(ch):
    assert first_invisible(f"ab{ch}c") == ch


@pytest.mark.parametrize("text", ["pref.language", "pref.язык", "配置file", "日本語のテキスト", "한국어", "Müller",
                                  "naïve", "straße", "αβγ", "ops-2024", "用户.偏好"])
def test_single_script_words_pass(text):
    assert mixed_script(text) is None and first_invisible(text) is None


@pytest.mark.parametrize("text,odd", [
    (f"pref.l{CYRILLIC_A}nguage", CYRILLIC_A),
    ("db.h\u03bfst", "\u03bf"),              # Greek omicron
    ("v\u0663", "\u0663"),                   # Arabic-Indic digit three
    ("\u0440\u043e\u0440.pop", "\u0440"),    # a whole Cyrillic word that reads "pop"
    ("カタ한", "한"),                         # kana with Hangul
])
def test_look_alike_words_are_found(text, odd):
    found = mixed_script(text)
    assert found is not None and found[1] == odd, found


@pytest.mark.parametrize("check,arg", [
    (v.check_key, "key"), (lambda x: v.check_tags([x]), "tag"), (v.check_task_id, "task_id"),
    (v.check_project, "project"), (v.check_source, "source"),
])
def test_every_identifier_refuses_homoglyphs_and_names_the_character(check, arg):
    with pytest.raises(InvalidArgument) as exc:
        check(f"pref.l{CYRILLIC_A}nguage")
    msg = str(exc.value)
    assert msg.startswith(f"{arg} ") and "U+0430 CYRILLIC SMALL LETTER A" in msg and "one script" in msg, msg


@pytest.mark.parametrize("ch", ["\u200b", "\u202e", "\u2066", "\ufeff", "\u200d"], ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("check,arg", [
    (v.check_key, "key"), (lambda x: v.check_tags([x]), "tag"), (v.check_task_id, "task_id"),
    (v.check_project, "project"), (v.check_source, "source"), (v.check_collection, "collection"),
])
def test_every_identifier_refuses_invisible_characters(check, arg, ch):
    with pytest.raises(InvalidArgument) as exc:
        check(f"ops{ch}x")
    msg = str(exc.value)
    assert msg.startswith(f"{arg} ") and char_label(ch) in msg and "invisible" in msg, msg
    assert ch not in msg  # shown escaped, never raw


def test_folded_fields_are_case_and_width_insensitive():
    assert v.check_key("Pref.Language") == v.check_key("pref.language") == v.check_key("ｐｒｅｆ．ｌａｎｇｕａｇｅ")
    assert v.check_tags(["Ops", "OPS", "ops", " Build   System "]) == ["ops", "build system"]
    assert v.check_task_id("Migrate-Billing") == "migrate-billing"
    assert v.check_key("pref.Straße") == "pref.strasse"


def test_kept_case_fields_are_only_nfkc():
    assert v.check_project("Billing") == "Billing"
    assert v.check_project("ｂｉｌｌｉｎｇ") == "billing"
    assert v.check_source("Claude Code") == "Claude Code"
    assert v.check_collection("Handbook") == "Handbook"


def test_shapes_and_sizes_are_refused_with_what_is_allowed():
    with pytest.raises(InvalidArgument, match=r"key 'pref language' is not allowed; use 1-128 letters, digits and"):
        v.check_key("pref language")
    with pytest.raises(InvalidArgument, match=r"collection 'хэндбук' is not allowed; use 1-64 ASCII letters"):
        v.check_collection("хэндбук")
    with pytest.raises(InvalidArgument, match=r"task_id has 1000000 characters; use 1-128"):
        v.check_task_id("x" * 1_000_000)
    with pytest.raises(InvalidArgument, match=r"21 tags given; at most 20 are allowed"):
        v.check_tags([f"t{i}" for i in range(21)])
    with pytest.raises(InvalidArgument, match=r"100000 tags given; at most 20"):
        v.check_tags(["\u200b"] * 100_000)  # counted before any tag is read


def test_client_names_are_cleaned_not_refused():
    assert v.clean_label("claude\u200b-code\u202e") == "claude-code"
    assert v.clean_label("ｃｌｉ") == "cli"
    assert v.clean_label(f"l{CYRILLIC_A}b") is None
    assert v.clean_label("\u200b") is None and v.clean_label(None) is None


# ---------------------------------------------------------------------- through the tools


@pytest.mark.anyio
async def test_homoglyph_key_is_refused_and_nothing_is_written(tmp_path, mcp_client):
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        first = await call(c, "remember", content="The user writes in English", kind="preference",
                           key="pref.language")
        err = await call_error(c, "remember", content="The user writes in German", kind="preference",
                               key=f"pref.l{CYRILLIC_A}nguage")
        assert "U+0430 CYRILLIC SMALL LETTER A" in err and "key" in err, err
        profile = await call(c, "get_profile")
        assert list(profile["preferences"]) == ["pref.language"]
        assert profile["preferences"]["pref.language"]["id"] == first["id"]
    assert db_rows(d, "SELECT count(*) FROM memories")[0][0] == 1


@pytest.mark.anyio
async def test_keys_differing_in_case_or_width_are_one_slot(mcp_client):
    async with mcp_client() as c:
        a = await call(c, "remember", content="The user writes in English", kind="preference", key="pref.Language")
        b = await call(c, "remember", content="The user writes in German", kind="preference",
                       key="ｐｒｅｆ.ｌａｎｇｕａｇｅ")
        assert b["status"] == "superseded" and b["superseded_ids"] == [a["id"]], b
        profile = await call(c, "get_profile")
        assert list(profile["preferences"]) == ["pref.language"]
        assert profile["preferences"]["pref.language"]["value"] == "The user writes in German"
        gone = await call(c, "forget", key="PREF.LANGUAGE", dry_run=True)
        assert [x["id"] for x in gone["forgotten"]] == [b["id"]]


@pytest.mark.anyio
async def test_tags_fold_and_refuse_invisible_characters(mcp_client):
    async with mcp_client() as c:
        m = await call(c, "remember", content="The billing service runs on Postgres 16", tags=["Billing", "DB"])
        got = await call(c, "recall", query="billing database", tags=["billing"])
        assert [x["id"] for x in got["memories"]] == [m["id"]] and got["memories"][0]["tags"] == ["billing", "db"]
        for bad in ("bill\u200bing", "\u202ebilling", "bill\u2066ing"):
            for tool, args in (("remember", {"content": "The user likes tea"}), ("recall", {"query": "tea"}),
                               ("forget", {})):
                err = await call_error(c, tool, tags=[bad], **args)
                assert "tag" in err and "invisible" in err and "U+" in err, (tool, err)


@pytest.mark.anyio
async def test_task_ids_and_projects_refuse_look_alikes(mcp_client):
    async with mcp_client() as c:
        await call(c, "set_task_state", task_id="Migrate-Billing", title="Migrate billing", state={"step": 1})
        got = await call(c, "get_task_state", task_id="migrate-billing")
        assert got["task"]["task_id"] == "migrate-billing"
        err = await call_error(c, "set_task_state", task_id=f"migr{CYRILLIC_A}te-billing", state={"step": 2})
        assert "task_id" in err and "U+0430 CYRILLIC SMALL LETTER A" in err, err
        err = await call_error(c, "get_task_state", task_id="migrate\u200b-billing")
        assert "task_id" in err and "U+200B ZERO WIDTH SPACE" in err, err
        for tool, args in (("remember", {"content": "The user likes tea"}), ("recall", {"query": "tea"}),
                           ("get_profile", {}), ("search_docs", {"query": "tea"})):
            err = await call_error(c, tool, project=f"bill{CYRILLIC_A}ng", **args)
            assert "project" in err and "U+0430" in err, (tool, err)
        err = await call_error(c, "search_docs", query="tea", collection="hand\u200bbook")
        assert "collection" in err and "U+200B" in err, err
        err = await call_error(c, "remember", content="The user likes tea", source="cli\u202e")
        assert "source" in err and "U+202E RIGHT-TO-LEFT OVERRIDE" in err, err


@pytest.mark.anyio
async def test_stored_keys_tags_and_task_ids_are_folded_on_upgrade(tmp_path, mcp_client):
    """A database written before folding: migration 5 lowercases them, and the index follows."""
    d = tmp_path / "d"
    async with mcp_client(d) as c:
        m = await call(c, "remember", content="The user writes in English", kind="preference", key="pref.language",
                       tags=["ops"])
        await call(c, "set_task_state", task_id="migrate-billing", title="Migrate billing", state={"step": 1})
    con = sqlite3.connect(d / "memvault.db")
    con.execute("UPDATE memories SET key='pref.Language', tags='[\"Ops\"]'")
    con.execute("UPDATE tasks SET task_id='Migrate-Billing'")
    con.execute("UPDATE task_history SET task_id='Migrate-Billing'")
    # The version before the folding migration, without what later migrations added.
    con.execute("ALTER TABLE memories DROP COLUMN visibility")
    con.execute("ALTER TABLE memories DROP COLUMN agent")
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.close()
    async with mcp_client(d) as c:
        got = await call(c, "recall", query="language", tags=["ops"])
        assert [x["id"] for x in got["memories"]] == [m["id"]]
        profile = await call(c, "get_profile")
        assert list(profile["preferences"]) == ["pref.language"]
        task = await call(c, "get_task_state", task_id="migrate-billing", include_history=True)
        assert task["task"]["version"] == 1 and len(task["history"]) == 1
    assert db_rows(d, "SELECT key, tags FROM memories") == [("pref.language", '["ops"]')]


@pytest.mark.anyio
async def test_a_store_holding_a_mixed_case_repository_id_is_brought_to_one_spelling(tmp_path, mcp_client):
    """A store written when ``gitlab.com/Platform/Billing`` and ``gitlab.com/platform/billing`` were
    two projects: migration 8 gives its memories, history, tasks and documents the one spelling,
    the index follows, and either spelling of the argument reads them."""
    d, docs = tmp_path / "d", tmp_path / "handbook"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Deploys\n\nBilling deploys go out on Tuesdays after the standup.\n")
    one = "gitlab.com/platform/billing"
    async with mcp_client(d, roots=[docs.as_uri()]) as c:
        m = await call(c, "remember", content="The billing service caches invoices for five minutes", project=one)
        await call(c, "set_task_state", task_id="migrate-billing", title="Migrate billing", state={"step": 1},
                   project=one)
        assert (await call(c, "index_docs", paths=["."], project=one))["added"] == 1
    con = sqlite3.connect(d / "memvault.db")
    for table in ("memories", "memory_history", "tasks", "task_history", "doc_files"):
        con.execute(f"UPDATE {table} SET project = 'gitlab.com/Platform/Billing'")  # noqa: S608 - fixed names
    con.execute("PRAGMA user_version = 7")
    con.commit()
    con.close()
    async with mcp_client(d, roots=[docs.as_uri()]) as c:
        for spelt in (one, "gitlab.com/Platform/Billing", "GitLab.com/PLATFORM/billing"):
            got = await call(c, "recall", query="how long are invoices cached", project=spelt)
            assert [x["id"] for x in got["memories"]][:1] == [m["id"]], (spelt, got)
            assert got["scope"]["project"] == one
            task = await call(c, "get_task_state", task_id="migrate-billing", project=spelt, include_history=True)
            assert task["task"]["version"] == 1 and len(task["history"]) == 1, (spelt, task)
            found = await call(c, "search_docs", query="when do billing deploys go out", project=spelt)
            assert [r["path"] for r in found["results"]][:1] == ["deploy.md"], (spelt, found)
    for table in ("memories", "memory_history", "tasks", "task_history", "doc_files"):
        assert db_rows(d, f"SELECT DISTINCT project FROM {table}") == [(one,)], table  # noqa: S608
