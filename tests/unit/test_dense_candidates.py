"""The dense channel's two searches (``service.search.dense_candidates``): the second, by the
language-neutral query, adds only memories in the other language than the question's, and
runs only when the first filled its ``n`` places."""

from __future__ import annotations

import uuid

import numpy as np

from memvault.service.search import dense_candidates
from memvault.storage.vectors.base import Hit, StoredPoint, VectorFilter

# a toy 3-dimensional model: Chinese text points along x, English along y
CENTROIDS = {"cjk": np.array([1.0, 0.0, 0.0], dtype=np.float32), "other": np.array([0.0, 1.0, 0.0], dtype=np.float32)}
ZH_1, ZH_2, ZH_EXTRA, EN_EXTRA = (str(uuid.uuid4()) for _ in range(4))
VECTORS = {ZH_1: [0.9, 0.1, 0.42], ZH_2: [0.8, 0.2, 0.57], ZH_EXTRA: [0.7, 0.0, 0.71], EN_EXTRA: [0.0, 0.6, 0.8]}


class Index:
    """A stand-in for the engine: answers the first search with the Chinese memories, the
    second (any other query vector) with one English and one more Chinese memory."""

    def __init__(self, first: list[str]) -> None:
        self.first, self.searches = first, 0

    def search_dense(self, collection, vector, flt, limit, *, exact=False):
        self.searches += 1
        ids = self.first if self.searches == 1 else [EN_EXTRA, ZH_EXTRA]
        q = np.asarray(vector, dtype=np.float32)
        return [Hit(i, float(np.dot(VECTORS[i], q) / np.linalg.norm(q))) for i in ids][:limit]

    def retrieve(self, collection, ids):
        return {i: StoredPoint(id=i, dense=VECTORS[i], terms=frozenset(), payload={}) for i in ids}


def test_the_second_search_adds_only_the_other_languages_memories() -> None:
    index = Index([ZH_1, ZH_2])
    q = np.array([0.95, 0.05, 0.3], dtype=np.float32)
    got = dense_candidates(index, "memories", q, VectorFilter(projects=[""]), 2, CENTROIDS, True)
    assert index.searches == 2
    assert set(got) == {ZH_1, ZH_2, EN_EXTRA}  # the Chinese extra is not added, the English one is
    assert abs(got[EN_EXTRA] - float(np.dot(VECTORS[EN_EXTRA], q))) < 1e-6  # its cosine to the question itself
    assert list(got) == sorted(got, key=lambda i: -got[i])


def test_no_second_search_when_every_item_is_a_candidate_already() -> None:
    index = Index([ZH_1])
    got = dense_candidates(index, "memories", np.array([1.0, 0.0, 0.0], dtype=np.float32),
                           VectorFilter(projects=[""]), 2, CENTROIDS, True)
    assert index.searches == 1 and set(got) == {ZH_1}


def test_without_centroids_only_the_first_search_runs() -> None:
    index = Index([ZH_1, ZH_2])
    got = dense_candidates(index, "memories", np.array([1.0, 0.0, 0.0], dtype=np.float32),
                           VectorFilter(projects=[""]), 2, {}, True)
    assert index.searches == 1 and set(got) == {ZH_1, ZH_2}
