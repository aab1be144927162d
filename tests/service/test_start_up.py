"""Process start: the query preparation done while the index opens (and kept in the data dir),
and the console script's lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memvault.config import Settings
from memvault.embedding.embedder import Embedder
from memvault.policy.language import CJK, OTHER
from memvault.service import centroids
from memvault.service.runtime import CENTROIDS_FILE, Runtime

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


@pytest.mark.anyio
async def test_language_centroids_are_ready_before_the_first_recall(tmp_path: Path, model_cache: Path,
                                                                    shared_embedder: Embedder) -> None:
    centroids._cache.pop(shared_embedder, None)
    s = Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache)
    assert centroids.LANGUAGE_NEUTRAL
    rt = await Runtime.open(s, load_embedder=lambda _s: shared_embedder)
    try:
        await rt.load()
        assert shared_embedder in centroids._cache  # computed at load, not by the first recall
        got = centroids._cache[shared_embedder]
        assert set(got) == {OTHER, CJK} and got[CJK].shape == (shared_embedder.dim,)
        kept = s.storage.data_dir / CENTROIDS_FILE  # kept for the next start, private
        assert kept.is_file() and kept.stat().st_mode & 0o777 == 0o600
    finally:
        await rt.close()


class CountingEmbedder:
    """The real model, counting the passages it embeds."""

    def __init__(self, emb: Embedder) -> None:
        self.emb, self.model_id, self.passages = emb, emb.model_id, 0

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.passages += len(texts)
        return self.emb.embed_passages(texts)


def test_saved_centroids_are_read_back_only_for_the_same_model(tmp_path: Path, shared_embedder: Embedder) -> None:
    saved = tmp_path / CENTROIDS_FILE
    first = CountingEmbedder(shared_embedder)
    made = centroids.language_centroids(first, saved)
    assert first.passages == 2 * len(centroids.PARALLEL_SENTENCES) + 1  # both sets, and the probe
    again = CountingEmbedder(shared_embedder)  # a new process: nothing in memory
    read = centroids.language_centroids(again, saved)
    assert again.passages == 1  # the probe only
    assert all(np.array_equal(read[k], made[k]) for k in (OTHER, CJK))
    other = CountingEmbedder(shared_embedder)
    other.model_id = "another/model"  # the file belongs to another model: computed anew
    centroids.language_centroids(other, saved)
    assert other.passages == 2 * len(centroids.PARALLEL_SENTENCES) + 1
    assert json.loads(saved.read_text())["model_id"] == "another/model"
    saved.write_text("{not json")  # damaged: computed anew, and the file is repaired
    fixed = CountingEmbedder(shared_embedder)
    centroids.language_centroids(fixed, saved)
    assert fixed.passages == 2 * len(centroids.PARALLEL_SENTENCES) + 1
    assert json.loads(saved.read_text())["model_id"] == shared_embedder.model_id


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"]])
def test_help_works_without_the_lazy_imports(argv: list[str]) -> None:
    out = subprocess.run([MEMVAULT, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout and "usage: memvault" in out.stdout


@pytest.mark.anyio
async def test_a_loading_model_is_not_waited_for_by_a_stopping_process(tmp_path: Path) -> None:
    """A client that leaves while the model loads (seconds on a first start): the loading
    thread is marked as work a stopped process need not wait for (``runtime.in_pure_work``,
    which the exit of ``memvault serve`` reads), so the process ends at once instead of at
    the end of the load or of its linger time."""
    import threading

    import anyio

    from memvault.service.runtime import Runtime, in_pure_work

    loading = threading.Event()
    release = threading.Event()
    seen: list[bool] = []

    def slow_load(_settings: Settings) -> Embedder:
        seen.append(in_pure_work(threading.current_thread()))
        loading.set()
        release.wait(10)
        raise RuntimeError("never loaded")

    rt = await Runtime.open(Settings(data_dir=tmp_path / "d"), load_embedder=slow_load)
    try:
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.load)
                await anyio.to_thread.run_sync(loading.wait, 10)
                tg.cancel_scope.cancel()  # serving stops; the load is abandoned
        assert seen == [True]
    finally:
        release.set()
        await rt.close()
