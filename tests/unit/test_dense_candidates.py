"""The dense channel's two searches (``service.search.dense_candidates``): the second, by the
language-neutral query, adds only memories in the other language than the question's, and
counts only when the first filled its ``n`` places; both run in one engine call, and the
vectors read for the second are not read again for the scoring (``stored_positions``)."""

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
    second (any other query vector) with one English and one more Chinese memory; counts
    the searches and the engine calls that ran them."""

    def __init__(self, first: list[str]) -> None:
        self.first, self.searches, self.calls, self.retrieved = first, 0, 0, []

    def search_dense_many(self, collection, vectors, flt, limit, *, exact=False):
        self.calls += 1
        out = []
        for vector in vectors:
            self.searches += 1
            ids = self.first if self.searches == 1 else [EN_EXTRA, ZH_EXTRA]
            q = np.asarray(vector, dtype=np.float32)
            out.append([Hit(i, float(np.dot(VECTORS[i], q) / np.linalg.norm(q))) for i in ids][:limit])
        return out

    def retrieve(self, collection, ids):
        self.retrieved += list(ids)
        return {i: StoredPoint(id=i, dense=VECTORS[i], terms=frozenset(), payload={}) for i in ids}


def test_the_second_search_adds_only_the_other_languages_memories() -> None:
    index = Index([ZH_1, ZH_2])
    q = np.array([0.95, 0.05, 0.3], dtype=np.float32)
    read: dict[str, list[float]] = {}
    got = dense_candidates(index, "memories", q, VectorFilter(projects=[""]), 2, CENTROIDS, True, read=read)
    assert index.searches == 2 and index.calls == 1  # both searches in one engine call
    assert read == {EN_EXTRA: VECTORS[EN_EXTRA], ZH_EXTRA: VECTORS[ZH_EXTRA]}  # the vectors it read, for reuse
    assert set(got) == {ZH_1, ZH_2, EN_EXTRA}  # the Chinese extra is not added, the English one is
    assert abs(got[EN_EXTRA] - float(np.dot(VECTORS[EN_EXTRA], q))) < 1e-6  # its cosine to the question itself
    assert list(got) == sorted(got, key=lambda i: -got[i])


def test_the_second_search_adds_nothing_when_every_item_is_a_candidate_already() -> None:
    index = Index([ZH_1])
    got = dense_candidates(index, "memories", np.array([1.0, 0.0, 0.0], dtype=np.float32),
                           VectorFilter(projects=[""]), 2, CENTROIDS, True)
    assert set(got) == {ZH_1} and index.retrieved == []


def test_without_centroids_only_the_first_search_runs() -> None:
    index = Index([ZH_1, ZH_2])
    got = dense_candidates(index, "memories", np.array([1.0, 0.0, 0.0], dtype=np.float32),
                           VectorFilter(projects=[""]), 2, {}, True)
    assert index.searches == 1 and set(got) == {ZH_1, ZH_2}


def test_stored_positions_reads_only_the_vectors_not_read_already() -> None:
    from memvault.service.centroids import language_positions
    from memvault.service.search import stored_positions

    class Emb:  # language_centroids keeps its answer per embedder object: give it the toy centroids
        model_id = "toy"

        def embed_passages(self, texts):
            return [CENTROIDS["other"] if t.isascii() else CENTROIDS["cjk"] for t in texts]

    index = Index([ZH_1, ZH_2])
    known = {EN_EXTRA: VECTORS[EN_EXTRA]}
    got = stored_positions(Emb(), index, "memories", [EN_EXTRA, ZH_1], known)
    assert index.retrieved == [ZH_1]
    assert got == language_positions({i: VECTORS[i] for i in (EN_EXTRA, ZH_1)}, CENTROIDS)
