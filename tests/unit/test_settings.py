"""Settings (memvault.config): groups, environment names, flat keywords, the table of docs/settings.md,
and the former settings (memvault.defaults.REMOVED): ignored with one line, their values kept as constants."""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import pytest
from pydantic import ValidationError

import memvault
from memvault import config, defaults
from memvault.config import (
    GROUP_OF,
    GROUPS,
    DocumentSettings,
    Settings,
    StorageSettings,
    default_data_dir,
    former_settings,
    load_settings,
)
from tests.conftest import MEMVAULT

MAX_SETTINGS = 30
"""At most this many settings: what a user or an operator sets; tuning constants live in the code."""

# The defaults the former settings had: their constants must keep them (no benchmark figure moves).
FORMER_DEFAULTS: dict[str, Any] = {
    "owner_start_timeout_s": 30.0, "flush_interval_s": 2.0, "hnsw_after_points": 20_000, "embed_batch_size": 32,
    "dedup_threshold": 0.97, "consolidate_min_cosine": 0.88, "task_state_max_bytes": 65_536,
    "task_history_max": 50, "weight_relevance": 0.8, "weight_importance": 0.1, "weight_recency": 0.1,
    "half_life_days": 30.0, "candidates": 100, "fusion_dense_weight": 0.4, "neighbour_lift": 0.7,
    "language_neutral": True, "forget_query_min_relevance": 0.9, "max_k": 50, "content_budget_chars": 2_000,
    "reply_budget_chars": 16_000, "context_budget_chars": 8_000, "task_list_max": 20,
    "profile_max_preferences": 100, "profile_max_facts": 10, "profile_value_chars": 500, "docs_result_chars": 1_500,
}
FORMER_HEADING = "## Former settings"

ROOT = Path(memvault.__file__).parent
README = ROOT.parent / "README.md"
SETTINGS_PAGE = ROOT.parent / "docs" / "settings.md"

# Defaults the settings table describes in words instead of a value: field -> (its text in the table, its factory).
DESCRIBED_DEFAULTS = {"data_dir": ("platform user data dir", default_data_dir)}

_ROW = re.compile(r"^\| `MEMVAULT_(\w+)` \| `(\w+)\.(\w+)` \| (.*?) \| .+ \|$")


def readme_rows() -> list[tuple[str, str, str, str]]:
    """(env name without prefix, group, field, default cell) of the settings table in docs/settings.md."""
    lines = SETTINGS_PAGE.read_text(encoding="utf-8").split(FORMER_HEADING)[0].splitlines()
    rows = [m.groups() for line in lines if (m := _ROW.match(line))]
    table_lines = [line for line in lines if line.startswith("| `")]
    assert len(rows) == len(table_lines), "a docs/settings.md row is not `| `MEMVAULT_X` | `group.x` | default | meaning |`"
    return rows


def parse_default(cell: str) -> Any:
    if cell == "unset":
        return None
    if cell in ("true", "false"):
        return cell == "true"
    if cell.startswith("`") and cell.endswith("`"):
        inner = cell[1:-1]
        return json.loads(inner) if inner[:1] in "[{" else inner
    return float(cell)


def test_settings_have_unique_names_across_groups() -> None:
    names = [n for cls in GROUPS.values() for n in cls.model_fields]
    assert len(names) == len(set(names)) == len(GROUP_OF)
    assert list(Settings.model_fields) == list(GROUPS)


def test_every_readme_row_names_a_setting_in_its_group_with_its_default() -> None:
    for env, group, name, cell in readme_rows():
        assert env.lower() == name, f"MEMVAULT_{env} is documented as {group}.{name}"
        assert GROUP_OF.get(name) == group, f"{name} is in group {GROUP_OF.get(name)!r}, docs/settings.md says {group!r}"
        field = GROUPS[group].model_fields[name]
        if name in DESCRIBED_DEFAULTS:
            text, factory = DESCRIBED_DEFAULTS[name]
            assert cell == text and field.default_factory is factory, name
            continue
        documented = parse_default(cell)
        actual = field.default_factory() if field.default_factory is not None else field.default
        assert documented == actual, f"docs/settings.md says MEMVAULT_{env} defaults to {cell}; the code says {actual!r}"


def test_every_setting_is_documented_once_in_the_settings_page() -> None:
    documented = [name for _, _, name, _ in readme_rows()]
    assert len(documented) == len(set(documented)), "a setting has two rows in docs/settings.md"
    missing = sorted(set(GROUP_OF) - set(documented))
    assert not missing, f"add docs/settings.md rows for: {', '.join(f'MEMVAULT_{m.upper()}' for m in missing)}"


def test_there_are_at_most_30_settings_and_the_table_lists_exactly_them() -> None:
    documented = {name for _, _, name, _ in readme_rows()}
    assert len(GROUP_OF) <= MAX_SETTINGS, f"{len(GROUP_OF)} settings: a tuning constant belongs beside its code"
    assert documented == set(GROUP_OF), (sorted(documented - set(GROUP_OF)), sorted(set(GROUP_OF) - documented))


def _variables(text: str) -> set[str]:
    return {m.lower() for m in re.findall(r"MEMVAULT_([A-Z][A-Z0-9_]*)", text)}


def test_every_memvault_variable_the_package_mentions_is_a_setting() -> None:
    mentioned = set().union(*(_variables(p.read_text("utf-8")) for p in ROOT.rglob("*.py")))
    assert mentioned <= set(GROUP_OF), sorted(mentioned - set(GROUP_OF))
    settings_page, former_section = SETTINGS_PAGE.read_text("utf-8").split(FORMER_HEADING)
    for page in (README, *sorted((ROOT.parent / "docs").glob("*.md"))):
        text = settings_page if page == SETTINGS_PAGE else page.read_text("utf-8")
        extra = _variables(text) - set(GROUP_OF)
        assert not extra, f"{page.name} names {sorted(extra)}, which are not settings"
    # the former settings are listed once, below their heading, all of them
    assert _variables(former_section) == set(defaults.REMOVED)


def test_the_former_settings_are_not_settings_and_their_constants_keep_their_defaults() -> None:
    assert not set(defaults.REMOVED) & set(GROUP_OF)
    assert set(FORMER_DEFAULTS) == set(defaults.REMOVED) - {"clock_offset_s"}
    for name, default in FORMER_DEFAULTS.items():
        module, _, constant = defaults.REMOVED[name].rpartition(".")
        value = getattr(importlib.import_module(module), constant)
        assert value == default and type(value) is type(default), f"{defaults.REMOVED[name]} = {value!r}, was {default!r}"


def test_a_former_setting_is_ignored_with_one_line_naming_it(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(config, "_warned", set())  # as in a fresh process
    monkeypatch.setenv("MEMVAULT_CANDIDATES", "50")
    monkeypatch.setenv("memvault_half_life_days", "7")  # names are case-insensitive
    monkeypatch.setenv("MEMVAULT_CAPACITY_PER_SCOPE", "600")  # a setting: read, not named
    monkeypatch.setenv("MEMVAULT_BENCH_MODEL_CACHE", "/tmp/x")  # not memvault's setting: left alone
    s = load_settings()
    assert s.policies.capacity_per_scope == 600
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "memvault: MEMVAULT_CANDIDATES is no longer a setting and is ignored (its value is fixed in the code: "
        "memvault.service.search.CANDIDATES)",
        "memvault: MEMVAULT_HALF_LIFE_DAYS is no longer a setting and is ignored (its value is fixed in the code: "
        "memvault.policy.ranking.HALF_LIFE_DAYS)",
    ]
    load_settings()
    assert capsys.readouterr().err == ""  # once per process
    assert former_settings({"MEMVAULT_USER_ID": "bob", "MEMVAULT_CHROMIUM": "/x"}) == []


def test_a_former_setting_does_not_stop_a_command(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEMVAULT_DATA_DIR": str(tmp_path / "d"),
           "MEMVAULT_MAX_K": "500", "MEMVAULT_CLOCK_OFFSET_S": "86400"}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    got = subprocess.run([MEMVAULT, "status"], env=env, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and "none running" in got.stdout, got
    said = [line for line in got.stderr.splitlines() if "no longer a setting" in line]
    assert [line.split()[1] for line in said] == ["MEMVAULT_CLOCK_OFFSET_S", "MEMVAULT_MAX_K"], got.stderr
    assert "Traceback" not in got.stderr


def _other_value(name: str, tmp: Path) -> tuple[str, Any]:
    """An environment string for setting ``name`` that differs from its default, and the value it must give."""
    field = GROUPS[GROUP_OF[name]].model_fields[name]
    default = field.default_factory() if field.default_factory is not None else field.default
    if get_origin(field.annotation) is list:
        return json.dumps([str(tmp / "a")]), [tmp / "a"]
    if get_origin(field.annotation) is Literal:
        other = next(v for v in get_args(field.annotation) if v != default)
        return str(other), other
    (base,) = [t for t in (get_args(field.annotation) or (field.annotation,)) if t is not type(None)]
    if base is Path:
        return str(tmp / name), tmp / name
    if base is str:
        return "set-by-env", "set-by-env"
    if base is bool:
        return ("false", False) if default else ("true", True)
    upper = next((m.le if isinstance(m, annotated_types.Le) else m.lt for m in field.metadata
                  if isinstance(m, annotated_types.Le | annotated_types.Lt)), math.inf)
    start = default if default is not None else 5
    value = 1 if not start else start * 2 if start * 2 <= upper else (start + upper) / 2
    value = int(value) if base is int else float(value)
    return str(value), value


@pytest.mark.parametrize("name", sorted(GROUP_OF))
def test_each_variable_sets_its_grouped_field(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, expected = _other_value(name, tmp_path)
    monkeypatch.setenv(f"MEMVAULT_{name.upper()}", env)
    got = getattr(getattr(Settings(), GROUP_OF[name]), name)
    assert got == expected, f"MEMVAULT_{name.upper()}={env} gave settings.{GROUP_OF[name]}.{name} = {got!r}"


def test_flat_keywords_override_the_environment_and_keep_the_rest_of_the_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_CAPACITY_PER_SCOPE", "700")
    monkeypatch.setenv("MEMVAULT_IMPORTANCE_THRESHOLD", "0.5")
    monkeypatch.setenv("MEMVAULT_DATA_DIR", str(tmp_path / "env"))
    s = Settings(capacity_per_scope=300, user_id="bob")
    assert (s.policies.capacity_per_scope, s.policies.importance_threshold, s.server.user_id) == (300, 0.5, "bob")
    assert s.storage.data_dir == tmp_path / "env" and s.db_path == tmp_path / "env" / "memvault.db"
    # the model is the user's, not the data dir's: one copy per machine (memvault.embedding.model_cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert s.models_dir == tmp_path / "cache" / "memvault" / "models"
    assert s.legacy_models_dir == tmp_path / "env" / "models"
    s = Settings(data_dir=tmp_path / "kw", model_cache_dir=tmp_path / "m")
    assert (s.storage.data_dir, s.models_dir, s.vectors_dir) == (tmp_path / "kw", tmp_path / "m", tmp_path / "kw" / "vectors")
    assert s.policies.capacity_per_scope == 700


def test_groups_may_be_given_whole() -> None:
    s = Settings(documents={"docs_batch_chunks": 900}, storage=StorageSettings(data_dir=Path("/tmp/x")))
    assert isinstance(s.documents, DocumentSettings) and s.documents.docs_batch_chunks == 900
    assert s.storage.data_dir == Path("/tmp/x")


def test_unknown_names_and_bad_values_are_refused_with_what_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match=r"'capacity' is not a memvault setting; known: agent_id, capacity_per_scope, "):
        Settings(capacity=5)
    with pytest.raises(TypeError, match=r"'candidates' is not a memvault setting"):  # a former one, as a keyword
        Settings(candidates=50)
    with pytest.raises(ValidationError, match=r"capacity_per_scope\n +Input should be greater than or equal to 10"):
        Settings(capacity_per_scope=0)
    monkeypatch.setenv("MEMVAULT_IMPORTANCE_THRESHOLD", "1.5")
    with pytest.raises(ValidationError, match=r"importance_threshold\n +Input should be less than or equal to 1"):
        Settings()


def test_ttl_defaults_per_kind() -> None:
    p = Settings().policies
    assert [p.default_ttl_days(k) for k in ("episode", "note", "fact")] == [180.0, 90.0, None]
