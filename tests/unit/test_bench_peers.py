"""Pure logic of the peer benches (no peer server or npm/pip install is run here)."""

from __future__ import annotations

import json

import pytest

from bench.peer_kgmemory import content_words, entity_names, rank_by_hits
from memvault.policy.keywords import STOPWORDS

# --- bench.peer_kgmemory (@modelcontextprotocol/server-memory) ---

_GRAPH = {"entities": [{"name": "D1:3", "entityType": "turn", "observations": ["Jon: lost my job"]},
                       {"name": "D2:1", "entityType": "turn", "observations": ["Gina: my job too"]}],
          "relations": []}


def test_entity_names_reads_structured_content_in_server_order() -> None:
    assert entity_names(_GRAPH, "ignored") == ["D1:3", "D2:1"]


def test_entity_names_falls_back_to_the_json_text() -> None:
    assert entity_names(None, json.dumps(_GRAPH, indent=2)) == ["D1:3", "D2:1"]
    assert entity_names({}, json.dumps({"entities": [], "relations": []})) == []


def test_entity_names_rejects_a_non_graph() -> None:
    with pytest.raises(ValueError):
        entity_names(None, json.dumps(["D1:3"]))


def test_content_words_drop_stopwords_short_words_possessives_and_repeats() -> None:
    q = "When did Jon's job at the bank end, and did Jon go to LA?"
    assert content_words(q, STOPWORDS) == ["jon", "job", "bank", "end"]


def test_rank_by_hits_counts_words_then_storage_order() -> None:
    order = {"D1:1": 0, "D1:2": 1, "D1:3": 2}
    hits = [["D1:1", "D1:3"], ["D1:3"], ["D1:2", "D1:1"]]
    assert rank_by_hits(hits, order) == ["D1:1", "D1:3", "D1:2"]
    assert rank_by_hits(hits, {k: -v for k, v in order.items()}) == ["D1:3", "D1:1", "D1:2"]
    assert rank_by_hits([], order) == []
