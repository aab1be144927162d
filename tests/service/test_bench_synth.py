"""The speed benches' questions: never one asked twice, so no timed recall hits the query cache."""

from __future__ import annotations

import pytest

from bench import synth
from bench.recall_breakdown import ModelClock


def test_a_stream_never_repeats_a_question_across_takes() -> None:
    stream = synth.Questions(seed=3)
    got = stream.take(3000) + stream.take(2000)
    assert len(set(got)) == len(got) == 5000
    assert synth.Questions(seed=3).take(10) == got[:10]  # the same for the same seed
    assert synth.queries(500, seed=3) == got[:500]


def test_a_stream_that_runs_out_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth, "QUESTIONS", ["Which team owns the {s}?"])  # len(SERVICES) distinct
    stream = synth.Questions(seed=1)
    assert len(set(stream.take(len(synth.SERVICES)))) == len(synth.SERVICES)
    with pytest.raises(ValueError, match="distinct questions"):
        stream.take(1)


def test_the_model_clock_times_cold_queries_and_refuses_a_cached_one(shared_embedder) -> None:
    with ModelClock(shared_embedder) as clock:
        shared_embedder.embed_queries(["a question the model clock has never seen, number 1"])
        wall, cpu = clock.take_cpu()
        assert wall > 0 and cpu > 0 and clock.calls == 1
        clock.check_cold()  # nothing came from the cache
        shared_embedder.embed_queries(["a question the model clock has never seen, number 1"])
        assert clock.take() == 0.0 and clock.calls == 1  # answered from the cache: no model run
        with pytest.raises(RuntimeError, match="query-vector cache"):
            clock.check_cold()
    assert "_embed" not in vars(shared_embedder)  # the wrapper is gone
