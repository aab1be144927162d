"""Settings (memvault.config): groups, environment names, flat keywords, and the table of docs/settings.md."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import pytest
from pydantic import ValidationError

import memvault
from memvault.config import (
    GROUP_OF,
    GROUPS,
    DocumentSettings,
    Settings,
    StorageSettings,
    default_data_dir,
)

ROOT = Path(memvault.__file__).parent
README = ROOT.parent / "README.md"
SETTINGS_PAGE = ROOT.parent / "docs" / "settings.md"

# Defaults the settings table describes in words instead of a value: field -> (its text in the table, its factory).
DESCRIBED_DEFAULTS = {"data_dir": ("platform user data dir", default_data_dir)}

_ROW = re.compile(r"^\| `MEMVAULT_(\w+)` \| `(\w+)\.(\w+)` \| (.*?) \| .+ \|$")


def readme_rows() -> list[tuple[str, str, str, str]]:
    """(env name without prefix, group, field, default cell) of the table in docs/settings.md."""
    lines = SETTINGS_PAGE.read_text(encoding="utf-8").splitlines()
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


def test_every_memvault_variable_the_package_mentions_is_a_setting() -> None:
    mentioned = {m for p in ROOT.rglob("*.py") for m in re.findall(r"MEMVAULT_([A-Z][A-Z0-9_]*)", p.read_text("utf-8"))}
    for page in (README, *sorted((ROOT.parent / "docs").glob("*.md"))):
        mentioned |= set(re.findall(r"MEMVAULT_([A-Z][A-Z0-9_]*)", page.read_text("utf-8")))
    assert {m.lower() for m in mentioned} <= set(GROUP_OF), sorted(m for m in mentioned if m.lower() not in GROUP_OF)


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
    monkeypatch.setenv("MEMVAULT_CANDIDATES", "70")
    monkeypatch.setenv("MEMVAULT_FUSION_DENSE_WEIGHT", "0.5")
    monkeypatch.setenv("MEMVAULT_DATA_DIR", str(tmp_path / "env"))
    s = Settings(candidates=30, user_id="bob")
    assert (s.ranking.candidates, s.ranking.fusion_dense_weight, s.server.user_id) == (30, 0.5, "bob")
    assert s.storage.data_dir == tmp_path / "env" and s.db_path == tmp_path / "env" / "memvault.db"
    # the model is the user's, not the data dir's: one copy per machine (memvault.embedding.model_cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert s.models_dir == tmp_path / "cache" / "memvault" / "models"
    assert s.legacy_models_dir == tmp_path / "env" / "models"
    s = Settings(data_dir=tmp_path / "kw", model_cache_dir=tmp_path / "m")
    assert (s.storage.data_dir, s.models_dir, s.vectors_dir) == (tmp_path / "kw", tmp_path / "m", tmp_path / "kw" / "vectors")
    assert s.ranking.candidates == 70


def test_groups_may_be_given_whole() -> None:
    s = Settings(documents={"docs_result_chars": 900}, storage=StorageSettings(data_dir=Path("/tmp/x")))
    assert isinstance(s.documents, DocumentSettings) and s.documents.docs_result_chars == 900
    assert s.storage.data_dir == Path("/tmp/x")


def test_unknown_names_and_bad_values_are_refused_with_what_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match=r"'candidate' is not a memvault setting; known: agent_id, candidates, "):
        Settings(candidate=5)
    with pytest.raises(ValidationError, match=r"candidates\n +Input should be greater than or equal to 10"):
        Settings(candidates=0)
    monkeypatch.setenv("MEMVAULT_IMPORTANCE_THRESHOLD", "1.5")
    with pytest.raises(ValidationError, match=r"importance_threshold\n +Input should be less than or equal to 1"):
        Settings()


def test_ttl_defaults_per_kind() -> None:
    p = Settings().policies
    assert [p.default_ttl_days(k) for k in ("episode", "note", "fact")] == [180.0, 90.0, None]
