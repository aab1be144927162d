"""Per-phase timeline of one ``index_docs`` call (``python -m bench.index_speed --profile``).

``PhaseClock.install(rt)`` wraps the runtime's worker-thread calls (``run_sync``,
``run_pure``) and the registry's file commit, and records when each piece of indexing's
work ran, measured where it runs (in its thread; waiting for a thread slot is not
counted): reading and chunking a file, planning the model runs (tokenising), the model
runs, keyword vectors, vector upserts and deletes, SQLite commits. ``report(t0, t1)``
gives, per phase, its seconds and how many of them fell while no model run was going on
(work done serially with the model, which overlapping would hide), and the share of the
wall time the model was running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

PHASES = ("read+chunk", "prepare batch (keyword vectors, run plan)", "plan runs (tokenise)", "model run", "keyword vectors", "vector upsert", "vector delete",
          "SQLite commit", "other")


def phase_of(fn: Callable[..., Any]) -> str:
    """The phase a worker-thread call of indexing belongs to, from the function's name."""
    name = getattr(fn, "__qualname__", "") or getattr(fn, "__name__", "")
    name = name + " " + getattr(getattr(fn, "__func__", None), "__qualname__", "")
    for key, phase in (("read_and_chunk", "read+chunk"), ("prepare_batch", "prepare batch (keyword vectors, run plan)"),
                       ("passage_runs", "plan runs (tokenise)"), ("embed_passages", "model run"),
                       ("embed_run", "model run"), ("sparse", "keyword vectors"),
                       ("upsert", "vector upsert"), ("delete", "vector delete")):
        if key in name:
            return phase
    return "other"


class PhaseClock:
    """Intervals (phase, start, end) in ``time.perf_counter`` seconds, appended from any thread."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []

    def timed(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.spans.append((phase, t, time.perf_counter()))
        return run

    def install(self, rt: Any) -> None:
        """Wrap ``rt.run_sync`` / ``rt.run_pure`` and ``DocStore.replace_file`` (for the life of the process)."""
        from memvault.storage.docs import DocStore

        for attr in ("run_sync", "run_pure"):
            orig = getattr(rt, attr)

            async def call(fn: Callable[..., Any], *args: Any, _orig: Any = orig, **kw: Any) -> Any:
                return await _orig(self.timed(phase_of(fn), fn), *args, **kw)
            setattr(rt, attr, call)
        replace = DocStore.replace_file

        async def replace_file(store: Any, *a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return await replace(store, *a, **kw)
            finally:
                self.spans.append(("SQLite commit", t, time.perf_counter()))
        DocStore.replace_file = replace_file  # type: ignore[method-assign]

    def report(self, t0: float, t1: float, step_s: float = 0.001) -> dict[str, Any]:
        """Per phase: seconds, and seconds while no model run was going on; the model's busy share of the wall."""
        n = max(1, int((t1 - t0) / step_s) + 1)
        model = bytearray(n)
        for phase, a, b in self.spans:
            if phase == "model run":
                for i in range(max(0, int((a - t0) / step_s)), min(n, int((b - t0) / step_s) + 1)):
                    model[i] = 1
        out: dict[str, Any] = {}
        for phase in PHASES:
            spans = [(a, b) for p, a, b in self.spans if p == phase]
            if not spans:
                continue
            alone = 0
            for a, b in spans:
                lo, hi = max(0, int((a - t0) / step_s)), min(n, int((b - t0) / step_s) + 1)
                alone += (hi - lo) - sum(model[lo:hi])
            out[phase] = {"calls": len(spans), "s": round(sum(b - a for a, b in spans), 2),
                          "s_without_model": round(alone * step_s, 2) if phase != "model run" else 0.0}
        busy = sum(model) * step_s
        return {"phases": out, "wall_s": round(t1 - t0, 2), "model_busy_s": round(busy, 2),
                "model_idle_s": round((t1 - t0) - busy, 2)}
