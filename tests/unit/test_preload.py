"""When ``memvault serve`` loads the model beside its imports (``memvault.embedding.preload``)."""

from __future__ import annotations

from memvault.embedding.preload import core_free


def test_the_early_load_runs_only_where_a_core_is_free() -> None:
    assert core_free(0.0, 2) and core_free(1.2, 2)  # quiet 2 cores: the second one takes the load
    assert not core_free(1.5, 2) and not core_free(9.0, 2)  # busy: it would slow the imports down
    assert core_free(3.0, 4) and not core_free(3.6, 4)
    assert not core_free(0.0, 1)  # one core: nothing runs beside the imports
