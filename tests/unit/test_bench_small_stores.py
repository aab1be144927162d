"""``bench.devmemory.small_stores``: a developer-memory set cut into small stores, each asked
only what it can answer and a share of the never-stored questions."""

from __future__ import annotations

from bench.devmemory import load_set, small_stores


def test_each_store_is_asked_what_it_holds_and_a_share_of_the_never_stored() -> None:
    data = load_set("dev")
    parts = small_stores(data, 20)
    assert [len(m) for m, _ in parts[:-1]] == [20] * (len(parts) - 1) and 0 < len(parts[-1][0]) <= 20
    assert sorted(m["id"] for ms, _ in parts for m in ms) == sorted(m["id"] for m in data["memories"])
    never = [q["id"] for q in data["questions"] if not q["gold"]]
    asked_never = [q["id"] for _, qs in parts for q in qs if not q["gold"]]
    assert sorted(asked_never) == sorted(never)  # each never-stored question asked once
    for mems, qs in parts:
        held = {m["id"] for m in mems}
        assert all(set(q["gold"]) <= held for q in qs if q["gold"])
    single = [q for q in data["questions"] if len(q["gold"]) == 1]
    asked = {q["id"] for _, qs in parts for q in qs}
    assert all(q["id"] in asked for q in single)  # a one-memory answer is always in one store
    assert small_stores(data, 20) == parts  # the same cut every time (seeded)
