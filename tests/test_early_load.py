"""Process start: the model load begun at process start (EarlyEmbedder), the query preparation
done while the index opens, and the console script's lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memvault.config import Settings
from memvault.embedding.embedder import Embedder, ModelUnavailable
from memvault.policy.language import CJK, OTHER
from memvault.service import centroids
from memvault.service.early_load import EarlyEmbedder
from memvault.service.runtime import Runtime

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def test_early_embedder_hands_over_the_model_it_loaded(tmp_path: Path, model_cache: Path,
                                                       shared_embedder: Embedder) -> None:
    early = EarlyEmbedder(Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache))
    emb = early(early.settings)
    assert emb.model_id == shared_embedder.model_id
    assert early(early.settings) is emb  # asked again (a second lifespan run): the same model
    text = ["The staging database lives on host db-stg-2"]
    assert np.allclose(emb.embed_passages(text), shared_embedder.embed_passages(text), atol=1e-5)
    assert early.seconds is not None and "loaded" in repr(early)


def test_early_embedder_raises_the_load_failure_where_the_model_is_awaited(tmp_path: Path) -> None:
    early = EarlyEmbedder(Settings(data_dir=tmp_path / "d", model_path=tmp_path / "absent"))
    with pytest.raises(ModelUnavailable, match="MEMVAULT_MODEL_PATH"):
        early(early.settings)
    assert "failed" in repr(early)


@pytest.mark.anyio
async def test_language_centroids_are_ready_before_the_first_recall(tmp_path: Path, model_cache: Path,
                                                                    shared_embedder: Embedder) -> None:
    centroids._cache.pop(shared_embedder, None)
    s = Settings(data_dir=tmp_path / "d", model_cache_dir=model_cache)
    assert s.ranking.language_neutral
    rt = await Runtime.open(s, load_embedder=lambda _s: shared_embedder)
    try:
        await rt.load()
        assert shared_embedder in centroids._cache  # computed at load, not by the first recall
        got = centroids._cache[shared_embedder]
        assert set(got) == {OTHER, CJK} and got[CJK].shape == (shared_embedder.dim,)
    finally:
        await rt.close()


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"]])
def test_help_works_without_the_lazy_imports(argv: list[str]) -> None:
    out = subprocess.run([MEMVAULT, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout and "usage: memvault" in out.stdout
