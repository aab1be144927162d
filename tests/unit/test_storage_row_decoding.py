"""Memory rows decode the same through the direct path and the column-by-column checks."""

from __future__ import annotations

import itertools
import math
from dataclasses import fields
from typing import Any

import pytest

from memvault.storage.memories import HEAD_COLUMNS, MemoryHead, checked_head, checked_row, head_from_sql, row_from_sql
from memvault.storage.rows import BadValue

GOOD = ("id-1", "alice", "", "fact", None, "Alice uses fish", "[]", 0.5, 1.0, "bench", 1.7e9, 1.7e9, 1.7e9, 0,
        None, "active", None, "hash", "model", "indexed", "shared", None)
COLUMNS = ("id", "user_id", "project", "kind", "key", "content", "tags", "importance", "confidence", "source",
           "created_at", "updated_at", "last_accessed_at", "access_count", "expires_at", "status",
           "superseded_by", "content_hash", "embedding_model", "index_state", "visibility", "agent")


class Text(str):
    """A str subclass: not what sqlite3 returns, so it takes the checked path."""


VARIANTS: dict[str, list[Any]] = {  # values per column, good and bad, beside GOOD's
    "id": [b"\x00", None, 7, Text("id-2")],
    "kind": ["preference", "procedure", "nonsense", 3, None],
    "key": ["pref.shell", 5, b"k"],
    "content": [None, 1.5, b"raw"],
    "tags": ['["infra", "ops"]', "[1]", "not json", '{"a": 1}', None, 3],
    "importance": [1, 0, True, math.nan, math.inf, "0.5", None],
    "confidence": [1, False, -math.inf],
    "source": [None, 9],
    "created_at": [1_700_000_000, "yesterday", None],
    "access_count": [7, 7.0, True, None, "1"],
    "expires_at": [1.8e9, 1_800_000_000, math.nan, "never", False],
    "status": ["deleted", "superseded", "gone", None],
    "superseded_by": ["id-9", 1],
    "index_state": ["pending", "done"],
    "visibility": ["private", "public", None],
    "agent": ["claude", 0],
}


def _rows() -> list[tuple]:
    out = [GOOD]
    for column, values in VARIANTS.items():
        i = COLUMNS.index(column)
        out += [(*GOOD[:i], v, *GOOD[i + 1:]) for v in values]
    # two columns changed at once: a good one and a bad one, in every order of the checks
    for (c1, v1s), (c2, v2s) in itertools.combinations(VARIANTS.items(), 2):
        i, j = COLUMNS.index(c1), COLUMNS.index(c2)
        row = list(GOOD)
        row[i], row[j] = v1s[0], v2s[-1]
        out.append(tuple(row))
    return out


def _decode(fn: Any, row: tuple) -> Any:
    try:
        got = fn(row)
    except BadValue as exc:
        return ("BadValue", str(exc))
    return [(f.name, getattr(got, f.name), type(getattr(got, f.name))) for f in fields(got)]


@pytest.mark.parametrize("row", _rows())
def test_the_direct_path_decodes_as_the_checks_do(row: tuple) -> None:
    direct, checked = _decode(row_from_sql, row), _decode(checked_row, row)
    if isinstance(checked, list):  # NaN never equals itself; a good row holds none
        assert not any(isinstance(v, float) and math.isnan(v) for _, v, _ in checked)
    assert direct == checked


HEAD = tuple(COLUMNS.index(c.strip()) for c in HEAD_COLUMNS.split(","))


@pytest.mark.parametrize("row", _rows())
def test_a_head_decodes_as_the_checks_do_and_as_its_row(row: tuple) -> None:
    """``MemoryHead``: the same values as the whole row's, and refused on the same head columns."""
    head = tuple(row[i] for i in HEAD)
    direct, checked = _decode(head_from_sql, head), _decode(checked_head, head)
    assert direct == checked
    whole = _decode(checked_row, row)
    if isinstance(whole, list):
        values = {name: (value, kind) for name, value, kind in whole}
        assert direct == [(f.name, *values[f.name]) for f in fields(MemoryHead)]
    elif isinstance(direct, tuple):  # refused: by a head column, named as the whole row's checks name it
        assert direct[1].split()[0] in HEAD_COLUMNS
